#pragma once
/// \file
/// \brief A training run: MPI, Kokkos on the chosen device, run directory, logging, the algorithm,
/// checkpoints and restarts, signals.
#include <string>
#include <vector>

#include "src/config/config.hpp"

namespace gmi::runtime {

struct TrainOptions {
  std::vector<std::string> config_paths;  ///< --config, each on top of the ones before
  config::Overrides overrides;  ///< --set, then --seed / --run-dir
  std::string log_level = "info";
  std::string resume;  ///< "", "latest" (newest valid checkpoint of the run directory) or a file
};

/// Runs training; returns the exit status.  Handles its own errors (one line, status 2 for bad
/// input; rank-local failures abort the job).
int run_training(const TrainOptions& o, int* argc, char*** argv);

}  // namespace gmi::runtime
