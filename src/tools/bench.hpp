#pragma once
/// \file
/// \brief `gmi_drl bench ppo`: end-to-end PPO throughput (rollout + update) at several env counts.
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

}  // namespace gmi::tools
