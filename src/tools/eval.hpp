#pragma once
/// \file
/// \brief `gmi_drl eval`: load a trained policy from a checkpoint and run rollouts only (no
/// training): exactly N completed episodes, their mean and spread of return and length, and the
/// env steps per second.  Under mpirun every GMI serves its own environments (data parallel);
/// the episodes are split over the GMIs and merged on rank 0.
#include <cstdint>
#include <string>
#include <vector>

namespace gmi::tools {

struct EvalOptions {
  std::string checkpoint;
  int episodes = 10;
  bool deterministic = false;   ///< the distribution's mode instead of samples
  int num_envs = 0;             ///< per GMI; 0: min(the checkpoint's env.num_envs, episodes per GMI)
  std::int64_t seed = 1000;     ///< initial states and sampled actions
  std::vector<std::string> sets;  ///< env.* settings (e.g. env.max_episode_steps)
  std::string out;              ///< trajectories (HDF5); with several GMIs one file per GMI
  std::string json;
  std::string log_level = "info";
};

int run_eval(const EvalOptions& o, int* argc, char*** argv);

}  // namespace gmi::tools
