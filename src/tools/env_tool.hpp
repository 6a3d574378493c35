#pragma once
/// \file
/// \brief `gmi_drl env`: step an environment with given (or random) actions and write the
/// trajectory (HDF5); for host-simulated environments also the simulator state each step starts
/// from; for multi-agent games every role's observations, actions and rewards and the full game
/// state before every step.
#include <cstdint>
#include <string>
#include <vector>

namespace gmi::tools {

struct EnvToolOptions {
  std::string name;          ///< environment id
  int num_envs = 1;          ///< N parallel environments
  std::int64_t seed = 0;     ///< seed (initial states)
  std::string actions_file;  ///< text: one line per step, N*act_dim numbers separated by spaces
  bool random_actions = false;  ///< uniform valid actions from the seed instead (multi-agent envs: the way)
  int steps = 0;             ///< steps with random_actions
  std::string out;           ///< output .h5
  int max_episode_steps = 0; ///< 0: the environment's default time limit
  std::vector<std::string> sets;  ///< env.KEY=VALUE settings (--set), e.g. env.ctrl_cost_weight=0.2
};

/// Runs the tool; throws gmi::InputError for bad input (file, line and what was expected).
void run_env_tool(const EnvToolOptions& o);

}  // namespace gmi::tools
