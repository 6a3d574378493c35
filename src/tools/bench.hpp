#pragma once
/// \file
/// \brief `gmi_drl bench`: end-to-end PPO throughput (rollout + update) at several total env
/// counts split over the job's GMIs; `gmi_drl bench-reduce`: gradient-reduction latency of every
/// strategy against buffer size on the job's layout.
#include <string>
#include <vector>

namespace gmi::tools {

struct BenchOptions {
  std::string config_path;
  std::vector<int> num_envs;
  std::vector<std::string> sets;
  int iterations = 10;
  int warmup = 3;
  std::string json_path;
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

}  // namespace gmi::tools
