#pragma once
/// \file
/// \brief Every constructor parameter of WarpDrive's two Tag games (example_envs/tag_gridworld and
/// example_envs/tag_continuous), with WarpDrive's defaults, in one struct shared by both games.
///
/// Where the two games' defaults differ the field is optional: null takes the game's default.
/// A field that only one game takes must keep its default for the other game (a check names it).
/// WarpDrive's `seed` is the run's seed (`seed` key, `--seed`) and `env_backend` has no
/// counterpart (the games always run as Kokkos kernels).
///
/// Config keys for the schema (one per field; "grid" = TagGridworld-v0, "cont" = TagContinuous-v0):
///
/// | key                                  | type            | default                   | meaning |
/// |--------------------------------------|-----------------|---------------------------|---------|
/// | env.num_taggers                      | int or null     | null: grid 10, cont 1     | taggers per environment (>= 1) |
/// | env.num_runners                      | int or null     | null: grid 1, cont 10     | runners per environment (>= 1; grid: only 1) |
/// | env.grid_length                      | float           | 10.0                      | side of the square world; grid: a whole number, cells 0..grid_length per axis |
/// | env.episode_length                   | int             | 100                       | steps per episode; the game ends there (reported as truncation) |
/// | env.starting_location_x              | list of float   | [] (random each episode)  | start x of every agent, taggers first then runners (length num_taggers + num_runners, in [0, grid_length]; grid: whole numbers); give x and y together |
/// | env.starting_location_y              | list of float   | []                        | start y, as starting_location_x |
/// | env.use_full_observation             | bool            | true                      | every agent's data in the observation (true) or only the nearest ones (false) |
/// | env.tag_reward_for_tagger            | float or null   | null: grid 10, cont 1     | reward of a tagger for a tag (grid: every tagger when the runner is tagged; cont: the runner's nearest tagger, >= 0) |
/// | env.tag_penalty_for_runner           | float or null   | null: grid 2, cont -1     | grid: SUBTRACTED from the runner's reward when tagged; cont: ADDED when tagged (<= 0). Each game's WarpDrive sign convention |
/// | env.wall_hit_penalty                 | float           | 0.1                       | grid only: subtracted when a move would leave the grid |
/// | env.step_cost_for_tagger             | float           | 0.01                      | grid only: taggers lose it, the runner gains it, on every step without a tag |
/// | env.starting_directions              | list of float   | [] (random each episode)  | cont only: start heading of every agent [rad] in [0, 2 pi], taggers first; random: one of 0, pi/2, pi, 3 pi/2 |
/// | env.max_speed                        | float           | 1.0                       | cont only: speed limit (> 0), times the agent's skill level |
/// | env.skill_level_runner               | float           | 1.0                       | cont only: runners' speed-limit multiplier (>= 0) |
/// | env.skill_level_tagger               | float           | 1.0                       | cont only: taggers' speed-limit multiplier (>= 0) |
/// | env.max_acceleration                 | float           | 1.0                       | cont only: largest acceleration action |
/// | env.min_acceleration                 | float           | -1.0                      | cont only: smallest acceleration action (<= max_acceleration) |
/// | env.max_turn                         | float           | 1.5707963 (pi/2)          | cont only: largest turn action [rad] |
/// | env.min_turn                         | float           | -1.5707963 (-pi/2)        | cont only: smallest turn action [rad] (<= max_turn) |
/// | env.num_acceleration_levels          | int             | 10                        | cont only: acceleration actions evenly spaced in [min, max], plus action 0 = no change (0..1000) |
/// | env.num_turn_levels                  | int             | 10                        | cont only: turn actions evenly spaced in [min, max], plus action 0 = no turn (0..1000) |
/// | env.edge_hit_penalty                 | float           | -0.0                      | cont only: added (<= 0) on a step where the agent was clipped at the edge |
/// | env.num_other_agents_observed        | int             | 2                         | cont only: K nearest other agents observed when use_full_observation is false (1..num_agents) |
/// | env.tagging_distance                 | float           | 0.01                      | cont only: a runner closer than tagging_distance * grid_length to a tagger is tagged (in [0, 1]) |
/// | env.step_penalty_for_tagger          | float           | -0.0                      | cont only: added to every tagger's reward each step (<= 0) |
/// | env.step_reward_for_runner           | float           | 0.0                       | cont only: added to every runner in the game each step (>= 0) |
/// | env.end_of_game_reward_for_runner    | float           | 1.0                       | cont only: added at episode_length to every runner still in the game (>= 0) |
/// | env.runner_exits_game_after_tagged   | bool            | true                      | cont only: a tagged runner leaves the game (else it plays on and can be tagged again) |
#include <optional>
#include <string>
#include <vector>

namespace gmi::envs {

/// Names of the games.
inline constexpr const char* kTagGridworld = "TagGridworld-v0";
inline constexpr const char* kTagContinuous = "TagContinuous-v0";
/// Largest number of agents (taggers + runners) in one environment.
inline constexpr int kMaxTagAgents = 1 << 20;
/// Largest num_acceleration_levels / num_turn_levels.
inline constexpr int kMaxTagActionLevels = 1000;

/// WarpDrive's Tag parameters (see the table above).
struct TagParams {
  // Both games.
  std::optional<int> num_taggers;          ///< null: gridworld 10, continuous 1
  std::optional<int> num_runners;          ///< null: gridworld 1 (its only value), continuous 10
  double grid_length = 10.0;               ///< gridworld: a whole number
  int episode_length = 100;
  std::vector<double> starting_location_x; ///< empty: random each episode; else one per agent, taggers first
  std::vector<double> starting_location_y;
  bool use_full_observation = true;
  std::optional<double> tag_reward_for_tagger;   ///< null: gridworld 10, continuous 1
  std::optional<double> tag_penalty_for_runner;  ///< null: gridworld 2 (subtracted), continuous -1 (added)
  // TagGridworld-v0 only.
  double wall_hit_penalty = 0.1;
  double step_cost_for_tagger = 0.01;
  // TagContinuous-v0 only.
  std::vector<double> starting_directions;  ///< empty: random each episode from {0, pi/2, pi, 3pi/2}
  double max_speed = 1.0;
  double skill_level_runner = 1.0;
  double skill_level_tagger = 1.0;
  double max_acceleration = 1.0;
  double min_acceleration = -1.0;
  double max_turn = 1.5707963267948966;
  double min_turn = -1.5707963267948966;
  int num_acceleration_levels = 10;
  int num_turn_levels = 10;
  double edge_hit_penalty = -0.0;
  int num_other_agents_observed = 2;
  double tagging_distance = 0.01;
  double step_penalty_for_tagger = -0.0;
  double step_reward_for_runner = 0.0;
  double end_of_game_reward_for_runner = 1.0;
  bool runner_exits_game_after_tagged = true;

  int num_agents() const { return num_taggers.value_or(0) + num_runners.value_or(0); }
};

/// \brief `p` with the game's defaults filled into its null fields, every field checked.
/// Throws gmi::InputError with one line `env.<field>: expected ..., got ...` for the first field
/// that is out of range (or set for the game that does not take it), and
/// `unknown environment 'X': expected one of ...` for a name that is not a Tag game.
TagParams resolve_tag_params(const std::string& name, const TagParams& p);

/// Throws what resolve_tag_params throws.
inline void check_tag_params(const std::string& name, const TagParams& p) { (void)resolve_tag_params(name, p); }

}  // namespace gmi::envs
