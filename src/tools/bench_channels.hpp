#pragma once
/// \file
/// \brief `gmi_drl bench-channels`: experience channels (mpi/channels.hpp) between the job's GMIs,
/// producers sending the packages of the config's environment and algorithm to consumers as fast
/// as the consumers take them, for each channel plan: the plan's TOP_mov and projected bandwidth
/// beside the measured bandwidth and steps per second.
#include <string>
#include <vector>

namespace gmi::tools {

struct ChannelBenchOptions {
  std::string config_path;
  std::vector<std::string> plans;  ///< empty: channels.plan
  std::vector<std::string> sets;
  int consumers = 0;    ///< under mapping.template dp: the first ranks consume (0: one), every other rank
                        ///< produces for one of them; other templates give their own routes
  int steps = 2000;     ///< timed steps per producer and plan
  int warmup = 200;
  int max_steps = 64;   ///< most steps per transfer (what a consumer takes at once)
  std::string json_path;
};

int run_channel_bench(const ChannelBenchOptions& o, int* argc, char*** argv);

}  // namespace gmi::tools
