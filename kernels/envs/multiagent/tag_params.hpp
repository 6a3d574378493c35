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
/// Each parameter is a config key env.<name> (GMI_TAG_PARAMS below: type, default, check, one-line
/// description; kernels/core/key_list.hpp); resolve_tag_params checks the ranges between them.
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/key_list.hpp"

namespace gmi::envs {

/// Names of the games.
inline constexpr const char* kTagGridworld = "TagGridworld-v0";
inline constexpr const char* kTagContinuous = "TagContinuous-v0";
/// Largest number of agents (taggers + runners) in one environment.
inline constexpr int kMaxTagAgents = 1 << 20;
/// Largest num_acceleration_levels / num_turn_levels.
inline constexpr int kMaxTagActionLevels = 1000;

/// WarpDrive's Tag parameters: X(type, name, default, check, description); "(Tag games)": both
/// games, else the one game that takes it (the other's must keep its default).
#define GMI_TAG_BOTH_ " (Tag games)"
#define GMI_TAG_GRID_ " (TagGridworld-v0)"
#define GMI_TAG_CONT_ " (TagContinuous-v0)"
#define GMI_TAG_PARAMS(X)                                                                                     \
  X(std::optional<int>, num_taggers, std::nullopt, any, "taggers per environment; null: 10 (grid), 1 (continuous)" GMI_TAG_BOTH_) \
  X(std::optional<int>, num_runners, std::nullopt, any,                                                       \
    "runners per environment; null: 1 (grid, its only value), 10 (continuous)" GMI_TAG_BOTH_)                             \
  X(double, grid_length, 10.0, any, "side of the square world (grid: a whole number of cells)" GMI_TAG_BOTH_)            \
  X(int, episode_length, 100, any, "steps per episode (reported as truncation)" GMI_TAG_BOTH_)                           \
  X(std::vector<double>, starting_location_x, {}, any,                                                        \
    "start x of every agent, taggers first ([]: random each episode)" GMI_TAG_BOTH_)                                      \
  X(std::vector<double>, starting_location_y, {}, any, "start y of every agent, as starting_location_x" GMI_TAG_BOTH_)   \
  X(bool, use_full_observation, true, any, "every agent in the observation (true) or the nearest ones (false)" GMI_TAG_BOTH_) \
  X(std::optional<double>, tag_reward_for_tagger, std::nullopt, any,                                          \
    "a tagger's reward for a tag; null: 10 (grid), 1 (continuous)" GMI_TAG_BOTH_)                                         \
  X(std::optional<double>, tag_penalty_for_runner, std::nullopt, any,                                         \
    "the runner's penalty when tagged (grid: subtracted, default 2; continuous: added, <= 0, default -1)" GMI_TAG_BOTH_)   \
  X(double, wall_hit_penalty, 0.1, any, "subtracted when a move would leave the grid" GMI_TAG_GRID_)                     \
  X(double, step_cost_for_tagger, 0.01, any, "taggers lose it and the runner gains it on every step without a tag" GMI_TAG_GRID_) \
  X(std::vector<double>, starting_directions, {}, any,                                                        \
    "start heading of every agent [rad] ([]: one of 0, pi/2, pi, 3pi/2 at random)" GMI_TAG_CONT_)                         \
  X(double, max_speed, 1.0, any, "speed limit, times the agent's skill level" GMI_TAG_CONT_)                             \
  X(double, skill_level_runner, 1.0, any, "runners' speed-limit multiplier" GMI_TAG_CONT_)                               \
  X(double, skill_level_tagger, 1.0, any, "taggers' speed-limit multiplier" GMI_TAG_CONT_)                               \
  X(double, max_acceleration, 1.0, any, "largest acceleration action" GMI_TAG_CONT_)                                     \
  X(double, min_acceleration, -1.0, any, "smallest acceleration action" GMI_TAG_CONT_)                                   \
  X(double, max_turn, 1.5707963267948966, any, "largest turn action [rad]" GMI_TAG_CONT_)                                \
  X(double, min_turn, -1.5707963267948966, any, "smallest turn action [rad]" GMI_TAG_CONT_)                              \
  X(int, num_acceleration_levels, 10, any, "acceleration actions evenly spaced in [min, max] besides 'no change'" GMI_TAG_CONT_) \
  X(int, num_turn_levels, 10, any, "turn actions evenly spaced in [min, max] besides 'no turn'" GMI_TAG_CONT_)           \
  X(bool, multi_discrete_actions, false, any,                                                                 \
    "an action as two indices, acceleration and turn (MultiDiscrete, WarpDrive's policy heads), or one index over every pair" GMI_TAG_CONT_) \
  X(double, edge_hit_penalty, -0.0, any, "added (<= 0) when an agent is clipped at the edge" GMI_TAG_CONT_)              \
  X(int, num_other_agents_observed, 2, any, "nearest other agents observed when use_full_observation is false" GMI_TAG_CONT_) \
  X(double, tagging_distance, 0.01, any, "a runner closer than this times grid_length to a tagger is tagged" GMI_TAG_CONT_) \
  X(double, step_penalty_for_tagger, -0.0, any, "added (<= 0) to every tagger each step" GMI_TAG_CONT_)                  \
  X(double, step_reward_for_runner, 0.0, any, "added to every runner still in the game each step" GMI_TAG_CONT_)         \
  X(double, end_of_game_reward_for_runner, 1.0, any, "added at episode_length to every runner still in the game" GMI_TAG_CONT_) \
  X(bool, runner_exits_game_after_tagged, true, any, "a tagged runner leaves the game (else it plays on)" GMI_TAG_CONT_)

/// WarpDrive's Tag parameters (GMI_TAG_PARAMS).
struct TagParams {
  GMI_TAG_PARAMS(GMI_KEY_MEMBER)

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
