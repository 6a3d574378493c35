#pragma once
/// \file
/// \brief `gmi_drl bench`: end-to-end PPO throughput (rollout + update) at several total env
/// counts split over the job's GMIs; `gmi_drl bench-reduce`: gradient-reduction latency of every
/// strategy against buffer size on the job's layout; `gmi_drl bench-env`: raw environment steps.
#include <string>
#include <vector>

namespace gmi::tools {

struct BenchOptions {
  std::vector<std::string> config_paths;
  std::vector<int> num_envs;
  std::vector<std::string> sets;
  int iterations = 10;
  int warmup = 3;
  std::string mode = "train";  ///< train: rollout + update; serve: rollouts only (policy inference + env steps)
  int phase_iterations = 2;    ///< PPO train mode: iterations profiled phase by phase after the timed ones (0: none)
  int kernel_times = 0;        ///< train and serve modes: iterations timed kernel by kernel after the rest (0: none)
  std::string json_path;
  /// After the --num-envs points, env counts read from standard input (rank 0's), one a line,
  /// until its end or a line "end"; --json is rewritten after each (how gmi_drl tune probes one
  /// layout's env counts in one job: its GMIs' processes, and their MPS shares, stay).
  bool more_from_stdin = false;
};

int run_bench(const BenchOptions& o, int* argc, char*** argv);

struct ReduceBenchOptions {
  std::string config_path;  ///< for the gmi.* layout keys
  std::vector<long long> sizes;
  std::vector<std::string> strategies;
  std::vector<std::string> sets;
  int runs = 100;
  int warmup = 10;
  std::string json_path;
};

int run_reduce_bench(const ReduceBenchOptions& o, int* argc, char*** argv);

/// `gmi_drl bench-env`: raw environment steps per second with random actions, for each worker
/// thread count (host-simulated environments) or once (device environments).
struct EnvBenchOptions {
  std::string name;
  int num_envs = 8;
  std::vector<int> threads = {1};
  int steps = 2000;
  int warmup = 200;
  int repeats = 1;  ///< timed runs of `steps` per point; the median is reported, every run kept
  std::vector<std::string> sets;  ///< env.* settings
  std::string json_path;
};

void run_env_bench(const EnvBenchOptions& o);

}  // namespace gmi::tools
