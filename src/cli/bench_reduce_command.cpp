// gmi_drl bench-reduce
#include <memory>

#include "src/cli/commands.hpp"
#include "src/tools/bench.hpp"

namespace gmi::cli {

Command add_bench_reduce_command(CLI::App& app) {
  auto rb = std::make_shared<tools::ReduceBenchOptions>();
  rb->sizes = {10000, 100000, 1000000, 10000000};
  rb->strategies = {"floor", "mpr", "mrr", "har-ipc", "har-ipc-barriers", "har-mpi", "hybrid", "auto"};
  auto* rb_cmd = app.add_subcommand("bench-reduce", "gradient-reduction latency of every strategy on this job's GMI layout");
  rb_cmd->add_option("--config", rb->config_path, "configuration with the gmi.* layout keys (YAML)")
      ->required()->check(CLI::ExistingFile);
  rb_cmd->add_option("--sizes", rb->sizes, "buffer sizes in floats (comma separated)")->delimiter(',');
  rb_cmd->add_option("--strategies", rb->strategies,
                     "floor, mpr, mrr, har-ipc, har-ipc-barriers, har-mpi, hybrid (every k), auto "
                     "(comma separated; har-ipc-barriers: the IPC path as time-sliced GMIs run it)")
      ->delimiter(',');
  rb_cmd->add_option("--runs", rb->runs, "timed runs per point")->check(at_least(1));
  rb_cmd->add_option("--warmup", rb->warmup, "untimed runs per point")->check(at_least(0));
  rb_cmd->add_option("--set", rb->sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  rb_cmd->add_option("--json", rb->json_path, "write results here");
  return {rb_cmd, [rb](int* argc, char*** argv) { return tools::run_reduce_bench(*rb, argc, argv); }};
}

}  // namespace gmi::cli
