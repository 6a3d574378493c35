// The Tag games by name: their parameters resolved and checked (one error line naming the
// env.<field> key), their specs, and MultiAgentVecEnv instances.
#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/core/error.hpp"
#include "kernels/envs/multiagent/tag.hpp"
#include "kernels/envs/multiagent/tag_continuous.hpp"
#include "kernels/envs/multiagent/tag_gridworld.hpp"

namespace gmi::envs {
namespace {

std::string num(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.10g", v);
  return s;
}

[[noreturn]] void bad(const std::string& key, const std::string& expected, const std::string& got) {
  throw InputError("env." + key + ": expected " + expected + ", got " + got);
}

void finite(const char* key, double v) {
  if (!std::isfinite(v)) bad(key, "a finite number", num(v));
}
void at_least(const char* key, double v, double lo) {
  finite(key, v);
  if (v < lo) bad(key, ">= " + num(lo), num(v));
}
void at_most(const char* key, double v, double hi) {
  finite(key, v);
  if (v > hi) bad(key, "<= " + num(hi), num(v));
}
void int_within(const char* key, long long v, long long lo, long long hi) {
  if (v < lo || v > hi) bad(key, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", std::to_string(v));
}
bool whole(double v) { return std::isfinite(v) && v == std::floor(v); }

/// A per-agent list: empty, or one value per agent in [lo, hi] (whole numbers if asked).
void agent_list(const char* key, const std::vector<double>& v, int agents, double lo, double hi, bool integral) {
  if (v.empty()) return;
  if (int(v.size()) != agents)
    bad(key, std::to_string(agents) + " values (one per agent: num_taggers + num_runners, taggers first) or []",
        std::to_string(v.size()) + " values");
  for (double x : v)
    if (!std::isfinite(x) || x < lo || x > hi || (integral && !whole(x)))
      bad(key, std::string(integral ? "whole numbers" : "values") + " in [" + num(lo) + ", " + num(hi) + "]",
          num(x));
}

}  // namespace

TagParams resolve_tag_params(const std::string& name, const TagParams& in) {
  const bool grid = name == kTagGridworld;
  if (!grid && name != kTagContinuous)
    throw InputError("unknown environment '" + name + "': expected one of " + kTagGridworld + " " + kTagContinuous);
  const std::string other = grid ? kTagContinuous : kTagGridworld;
  TagParams p = in;
  const TagParams d;
  // A field of the other game must keep its default.
  auto unused = [&](const char* key, bool kept) {
    if (!kept) throw InputError("env." + std::string(key) + ": " + name + " does not take this parameter (" + other + " only)");
  };
  if (grid) {
    unused("starting_directions", p.starting_directions.empty());
    unused("max_speed", p.max_speed == d.max_speed);
    unused("skill_level_runner", p.skill_level_runner == d.skill_level_runner);
    unused("skill_level_tagger", p.skill_level_tagger == d.skill_level_tagger);
    unused("max_acceleration", p.max_acceleration == d.max_acceleration);
    unused("min_acceleration", p.min_acceleration == d.min_acceleration);
    unused("max_turn", p.max_turn == d.max_turn);
    unused("min_turn", p.min_turn == d.min_turn);
    unused("num_acceleration_levels", p.num_acceleration_levels == d.num_acceleration_levels);
    unused("num_turn_levels", p.num_turn_levels == d.num_turn_levels);
    unused("multi_discrete_actions", p.multi_discrete_actions == d.multi_discrete_actions);
    unused("edge_hit_penalty", p.edge_hit_penalty == d.edge_hit_penalty);
    unused("num_other_agents_observed", p.num_other_agents_observed == d.num_other_agents_observed);
    unused("tagging_distance", p.tagging_distance == d.tagging_distance);
    unused("step_penalty_for_tagger", p.step_penalty_for_tagger == d.step_penalty_for_tagger);
    unused("step_reward_for_runner", p.step_reward_for_runner == d.step_reward_for_runner);
    unused("end_of_game_reward_for_runner", p.end_of_game_reward_for_runner == d.end_of_game_reward_for_runner);
    unused("runner_exits_game_after_tagged", p.runner_exits_game_after_tagged == d.runner_exits_game_after_tagged);
  } else {
    unused("wall_hit_penalty", p.wall_hit_penalty == d.wall_hit_penalty);
    unused("step_cost_for_tagger", p.step_cost_for_tagger == d.step_cost_for_tagger);
  }
  // The games' own defaults (WarpDrive's constructors).
  if (!p.num_taggers) p.num_taggers = grid ? 10 : 1;
  if (!p.num_runners) p.num_runners = grid ? 1 : 10;
  if (!p.tag_reward_for_tagger) p.tag_reward_for_tagger = grid ? 10.0 : 1.0;
  if (!p.tag_penalty_for_runner) p.tag_penalty_for_runner = grid ? 2.0 : -1.0;

  int_within("num_taggers", *p.num_taggers, 1, kMaxTagAgents - 1);
  if (grid && *p.num_runners != 1)
    bad("num_runners", "1 or null (" + name + " has one runner)", std::to_string(*p.num_runners));
  int_within("num_runners", *p.num_runners, 1, kMaxTagAgents - 1);
  const int agents = p.num_agents();
  if (agents > kMaxTagAgents)
    bad("num_runners", "num_taggers + num_runners <= " + std::to_string(kMaxTagAgents), std::to_string(agents));
  if (grid) {
    if (!whole(p.grid_length) || p.grid_length < 1 || p.grid_length > 10000)
      bad("grid_length", "a whole number in [1, 10000] for " + name, num(p.grid_length));
    if (p.starting_location_x.empty() && p.grid_length < 2)
      bad("grid_length", ">= 2 for random starting locations (taggers start on cells 1..grid_length-1)",
          num(p.grid_length));
  } else {
    finite("grid_length", p.grid_length);
    if (!(p.grid_length > 0)) bad("grid_length", "> 0", num(p.grid_length));
  }
  int_within("episode_length", p.episode_length, 1, 1 << 30);
  if (p.starting_location_x.empty() != p.starting_location_y.empty())
    bad(p.starting_location_x.empty() ? "starting_location_x" : "starting_location_y",
        "a list given together with the other starting_location (both or neither)", "[]");
  agent_list("starting_location_x", p.starting_location_x, agents, 0.0, p.grid_length, grid);
  agent_list("starting_location_y", p.starting_location_y, agents, 0.0, p.grid_length, grid);
  if (grid) {
    finite("tag_reward_for_tagger", *p.tag_reward_for_tagger);
    finite("tag_penalty_for_runner", *p.tag_penalty_for_runner);
    finite("wall_hit_penalty", p.wall_hit_penalty);
    finite("step_cost_for_tagger", p.step_cost_for_tagger);
    return p;
  }
  at_least("tag_reward_for_tagger", *p.tag_reward_for_tagger, 0.0);
  at_most("tag_penalty_for_runner", *p.tag_penalty_for_runner, 0.0);
  agent_list("starting_directions", p.starting_directions, agents, 0.0, 2.0 * M_PI, false);
  finite("max_speed", p.max_speed);
  if (!(p.max_speed > 0)) bad("max_speed", "> 0", num(p.max_speed));
  at_least("skill_level_runner", p.skill_level_runner, 0.0);
  at_least("skill_level_tagger", p.skill_level_tagger, 0.0);
  finite("max_acceleration", p.max_acceleration);
  at_most("min_acceleration", p.min_acceleration, p.max_acceleration);
  finite("max_turn", p.max_turn);
  at_most("min_turn", p.min_turn, p.max_turn);
  int_within("num_acceleration_levels", p.num_acceleration_levels, 0, kMaxTagActionLevels);
  int_within("num_turn_levels", p.num_turn_levels, 0, kMaxTagActionLevels);
  at_most("edge_hit_penalty", p.edge_hit_penalty, 0.0);
  int_within("num_other_agents_observed", p.num_other_agents_observed, 1, agents);
  at_least("tagging_distance", p.tagging_distance, 0.0);
  at_most("tagging_distance", p.tagging_distance, 1.0);
  at_most("step_penalty_for_tagger", p.step_penalty_for_tagger, 0.0);
  at_least("step_reward_for_runner", p.step_reward_for_runner, 0.0);
  at_least("end_of_game_reward_for_runner", p.end_of_game_reward_for_runner, 0.0);
  return p;
}

MultiAgentSpec tag_spec(const std::string& name, const TagParams& p) {
  const TagParams r = resolve_tag_params(name, p);
  return name == kTagGridworld ? TagGridworld::spec(r) : TagContinuous::spec(r);
}

std::unique_ptr<MultiAgentVecEnvBase> make_tag_env(const std::string& name, int num_envs, std::uint64_t seed,
                                                   std::uint64_t global_offset, const TagParams& p) {
  GMI_REQUIRE(num_envs > 0, "make_tag_env: num_envs must be positive");
  const TagParams r = resolve_tag_params(name, p);
  if (name == kTagGridworld)
    return std::make_unique<MultiAgentVecEnv<TagGridworld>>(TagGridworld::spec(r), TagGridworld(num_envs, r),
                                                            num_envs, seed, global_offset);
  return std::make_unique<MultiAgentVecEnv<TagContinuous>>(TagContinuous::spec(r), TagContinuous(num_envs, r),
                                                           num_envs, seed, global_offset);
}

}  // namespace gmi::envs
