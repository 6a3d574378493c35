// gmi_drl bench ppo
#include <memory>

#include "src/cli/commands.hpp"
#include "src/tools/bench.hpp"

namespace gmi::cli {

Command add_bench_command(CLI::App& app) {
  auto bench = std::make_shared<tools::BenchOptions>();
  auto* bench_cmd = app.add_subcommand("bench", "benchmarks (print numbers, write JSON)");
  bench_cmd->add_option("--config", bench->config_paths, "base configuration (YAML; repeatable, later files on top)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->required()->check(CLI::ExistingFile);
  bench_cmd->add_option("--num-envs", bench->num_envs, "environment counts to measure (comma separated)")
      ->delimiter(',')->required();
  bench_cmd->add_flag("--more-from-stdin", bench->more_from_stdin,
                      "after --num-envs, measure the env counts read from standard input (one a line, until its end "
                      "or 'end'), rewriting --json after each");
  bench_cmd->add_option("--iterations", bench->iterations, "timed iterations per size")->check(at_least(1));
  bench_cmd->add_option("--warmup", bench->warmup, "untimed iterations per size")->check(at_least(0));
  bench_cmd->add_option("--set", bench->sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  bench_cmd->add_option("--mode", bench->mode,
                        "train: rollout + update; serve: rollouts only (policy inference + env steps; ppo); update: "
                        "gradient updates alone on a full replay buffer (dqn, sac; --iterations updates timed)")
      ->check(CLI::IsMember({"train", "serve", "update"}));
  bench_cmd->add_option("--phase-iterations", bench->phase_iterations,
                        "ppo, train mode: iterations timed phase by phase after the timed ones (fenced at every "
                        "phase; printed with FLOP/s, bytes/s and their fractions of the device's peaks); 0: none")
      ->check(at_least(0));
  bench_cmd->add_option("--kernel-times", bench->kernel_times,
                        "iterations timed kernel by kernel after the others: every Kokkos kernel, deep copy and "
                        "BLAS call fenced and timed by name (the 25 longest printed, all in the JSON; the rollout "
                        "launches directly meanwhile, without its CUDA graph); 0: none")
      ->check(at_least(0));
  bench_cmd->add_option("--json", bench->json_path, "write results here");
  return {bench_cmd, [bench](int* argc, char*** argv) { return tools::run_bench(*bench, argc, argv); }};
}

}  // namespace gmi::cli
