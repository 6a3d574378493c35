// gmi_drl bench-env
#include <memory>

#include "src/cli/commands.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/runtime/logging.hpp"
#include "src/tools/bench.hpp"

namespace gmi::cli {

Command add_bench_env_command(CLI::App& app) {
  auto eb = std::make_shared<tools::EnvBenchOptions>();
  auto* eb_cmd = app.add_subcommand("bench-env", "raw environment steps per second with random actions, per worker-thread count");
  eb_cmd->add_option("--name", eb->name, "environment id, e.g. Hopper-v5")->required();
  eb_cmd->add_option("--num-envs", eb->num_envs, "parallel environments")->check(at_least(1));
  eb_cmd->add_option("--threads", eb->threads, "worker thread counts to measure (comma separated; host-simulated envs)")
      ->delimiter(',');
  eb_cmd->add_option("--steps", eb->steps, "timed steps per thread count")->check(at_least(1));
  eb_cmd->add_option("--warmup", eb->warmup, "untimed steps first")->check(at_least(0));
  eb_cmd->add_option("--repeats", eb->repeats, "timed runs per point (the median is reported; every run is in the JSON)")
      ->check(at_least(1));
  eb_cmd->add_option("--set", eb->sets, "an env.* setting (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  eb_cmd->add_option("--json", eb->json_path, "write results here");
  return {eb_cmd, [eb](int*, char***) {
            runtime::setup_logging(0);
            return guarded([&] {
              instances::KokkosScope kokkos;
              tools::run_env_bench(*eb);
            });
          }};
}

}  // namespace gmi::cli
