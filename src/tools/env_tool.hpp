#pragma once
/// \file
/// \brief `gmi_drl env`: step an environment with given actions and write the trajectory (HDF5).
#include <cstdint>
#include <string>

namespace gmi::tools {

struct EnvToolOptions {
  std::string name;          ///< environment id
  int num_envs = 1;          ///< N parallel environments
  std::int64_t seed = 0;     ///< seed (initial states)
  std::string actions_file;  ///< text: one line per step, N*act_dim numbers separated by spaces
  std::string out;           ///< output .h5
  int max_episode_steps = 0; ///< 0: the environment's default time limit
};

/// Runs the tool; throws gmi::InputError for bad input (file, line and what was expected).
void run_env_tool(const EnvToolOptions& o);

}  // namespace gmi::tools
