// gmi_drl bench-channels
#include <memory>

#include "src/cli/commands.hpp"
#include "src/tools/bench_channels.hpp"

namespace gmi::cli {

Command add_bench_channels_command(CLI::App& app) {
  auto o = std::make_shared<tools::ChannelBenchOptions>();
  auto* cmd = app.add_subcommand("bench-channels",
                                 "experience channels between this job's GMIs: every plan's TOP_mov, projected and "
                                 "measured bandwidth");
  cmd->add_option("--config", o->config_path, "configuration: algo, env.* and channels.* (YAML)")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--plans", o->plans,
                  "channel plans, separated by spaces: auto, per-type, single, or groups such as "
                  "'obs,next_obs;action,reward;terminated,truncated' (default: the config's channels.plan)");
  cmd->add_option("--consumers", o->consumers, "under mapping.template dp: GMIs that consume (the first ranks; default 1), the others produce; other "
                  "templates route experience as their roles say");
  cmd->add_option("--steps", o->steps, "timed steps per producer and plan");
  cmd->add_option("--warmup", o->warmup, "untimed steps per producer and plan")->check(at_least(0));
  cmd->add_option("--max-steps", o->max_steps, "most steps per transfer when channels.steps_per_transfer is 0")
      ->check(at_least(1));
  cmd->add_option("--set", o->sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--json", o->json_path, "write results here");
  return {cmd, [o](int* argc, char*** argv) { return tools::run_channel_bench(*o, argc, argv); }};
}

}  // namespace gmi::cli
