#pragma once
/// \file
/// \brief `gmi_drl sweep`: many independent training runs (seeds, a grid, random draws) sharing
/// each GPU, one run per GMI at a time.  Rank 0 holds the queue; every GMI takes the next run
/// when its last one ends and trains it as a child process: the same `gmi_drl --config ... --seed
/// S --run-dir DIR/<run>` a user would start, under the GMI's MPS share, memory limit, GPU and
/// CPUs, so a sweep's run is the standalone run bit for bit.  A run that fails is marked failed
/// with its error line and the sweep goes on; one killed or timed out restarts from its newest
/// checkpoint (sweep.retries); a stop signal checkpoints every running run, and `--resume DIR`
/// finishes what is missing.  Rank 0 keeps DIR/sweep.csv up to date (postprocess/sweep.py reads
/// it).
///
/// Started alone (one process), the sweep makes its own GMIs: sweep.per_gpu runs side by side on
/// each GPU.  Under mpirun/srun every rank is one GMI, placed as training places them (gmi.*).
#include <cstdint>
#include <string>
#include <vector>

#include "src/config/config.hpp"

namespace gmi::sweeps {

struct SweepOptions {
  std::vector<std::string> config_paths;
  std::vector<std::string> sets;   ///< --set for every run
  std::vector<std::string> sweep;  ///< --seeds, --grid, ... as sweep.* overrides ("key=value")
  std::string resume;              ///< --resume DIR
  std::string log_level = "info";
};

/// One run of the sweep.
struct RunSpec {
  int index = 0;
  std::string name;    ///< its directory under the sweep directory
  std::string config;  ///< its overrides other than the seed, "key=value;key=value" ("" for seeds only)
  std::int64_t seed = 0;
  config::Overrides overrides;  ///< grid and random values (the seed is passed as --seed)
};

/// The sweep's runs: every configuration (grid point x random draw) with every seed, seeds in the
/// outer loop (one seed of everything first).  Throws gmi::InputError naming the sweep.* key.
std::vector<RunSpec> expand(const config::Config& base);

/// "a..b" or "a,b,c" (empty: `fallback` alone).  Throws gmi::InputError naming sweep.seeds.
std::vector<std::int64_t> parse_seeds(const std::string& text, std::int64_t fallback);

/// A grid axis "key=v1,v2,[1, 2]": the key and its values (commas inside brackets do not split).
std::pair<std::string, std::vector<std::string>> parse_axis(const std::string& axis);

/// Runs the sweep; returns the exit status (0: every run done, or stopped by a signal with its
/// checkpoint; 1: some runs failed; 2: bad input).
int run_sweep(const SweepOptions& o, int* argc, char*** argv);

}  // namespace gmi::sweeps
