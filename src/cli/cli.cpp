#include "src/cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "src/config/config.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/tune.hpp"
#include "src/runtime/logging.hpp"
#include "src/runtime/train.hpp"
#include "src/tools/bench.hpp"
#include "src/tools/checkpoint_tool.hpp"
#include "src/tools/env_tool.hpp"
#include "src/tools/eval.hpp"
#include "src/tools/export.hpp"

namespace gmi::cli {
namespace {

/// "expected an integer >= lo" instead of CLI11's generic range text.
CLI::Validator at_least(long long lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        try {
          std::size_t used = 0;
          const long long v = std::stoll(s, &used);
          if (used == s.size() && v >= lo) return {};
        } catch (const std::exception&) {
        }
        return "expected an integer >= " + std::to_string(lo) + ", got '" + s + "'";
      },
      "INT>=" + std::to_string(lo));
}

/// Run a command that needs no MPI: bad input -> one line, status 2; other failures -> status 1.
template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "gmi_drl: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi_drl: fatal: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi_drl " GMI_DRL_VERSION
               " - deep reinforcement learning on GPU multiplexing instances (GMIs)",
               "gmi_drl"};
  app.set_version_flag("--version", GMI_DRL_VERSION);
  app.require_subcommand(0, 1);

  // Training (no subcommand): gmi_drl --config FILE [--set k=v]... [--run-dir DIR] [--seed N]
  runtime::TrainOptions train;
  std::vector<std::string> sets;
  std::string run_dir;
  std::int64_t seed = -1;
  app.add_option("--config", train.config_paths,
                 "training configuration (YAML); repeat it to lay files on top of each other: "
                 "--config base.yaml --config tuned.yaml (a later file's keys win)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingFile);
  app.add_option("--set", sets, "override a config key: --set ppo.gamma=0.995 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--run-dir", run_dir, "output directory (default: runs/<config>-<time>)");
  app.add_option("--seed", seed, "seed of the run (overrides train.seed)")->check(at_least(0));
  app.add_option("--resume", train.resume,
                 "continue from a checkpoint: 'latest' (newest valid one in the run directory) or a FILE; "
                 "without --config the checkpoint's config is used");
  app.add_option("--log-level", train.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  // gmi_drl env
  tools::EnvToolOptions envo;
  auto* env = app.add_subcommand("env", "step an environment with given actions and write the trajectory to HDF5");
  env->add_option("--name", envo.name, "environment id, e.g. CartPole-v1")->required();
  env->add_option("--num-envs", envo.num_envs, "parallel environments N")->required()->check(at_least(1));
  env->add_option("--seed", envo.seed, "seed of the initial states")->required()->check(at_least(0));
  auto* env_actions = env->add_option("--actions", envo.actions_file, "text file: one line per step with N*act_dim numbers")
                          ->check(CLI::ExistingFile);
  auto* env_random = env->add_flag("--random-actions", envo.random_actions,
                                   "uniform valid actions drawn from --seed (written to the file) instead of --actions");
  env->add_option("--steps", envo.steps, "steps with --random-actions")->check(at_least(1));
  env_actions->excludes(env_random);
  env->add_option("--out", envo.out, "output HDF5 file")->required();
  env->add_option("--max-episode-steps", envo.max_episode_steps, "time limit (default: Gymnasium's)")
      ->check(at_least(0));
  env->add_option("--set", envo.sets, "an env.* setting, e.g. --set env.ctrl_cost_weight=0.2 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  // gmi_drl config reference | show
  auto* cfg = app.add_subcommand("config", "configuration tools");
  cfg->require_subcommand(1);
  auto* cfg_ref = cfg->add_subcommand("reference", "print every config key as a Markdown table");
  auto* cfg_show = cfg->add_subcommand("show", "validate a config and print it fully resolved");
  std::string show_path;
  std::vector<std::string> show_sets;
  cfg_show->add_option("--config", show_path, "configuration (YAML)")->required()->check(CLI::ExistingFile);
  cfg_show->add_option("--set", show_sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  // gmi_drl checkpoint inspect | verify
  auto* ckpt = app.add_subcommand("checkpoint", "checkpoint tools");
  ckpt->require_subcommand(1);
  std::string ckpt_file;
  auto* ckpt_inspect = ckpt->add_subcommand("inspect", "summary: version, layout, counters, tensor shapes");
  ckpt_inspect->add_option("file", ckpt_file, "checkpoint (HDF5)")->required();
  auto* ckpt_verify = ckpt->add_subcommand(
      "verify", "read everything, check checksums and shapes; exit status 0 if valid, 2 if not");
  ckpt_verify->add_option("file", ckpt_file, "checkpoint (HDF5)")->required();

  // gmi_drl bench ppo
  tools::BenchOptions bench;
  auto* bench_cmd = app.add_subcommand("bench", "benchmarks (print numbers, write JSON)");
  bench_cmd->add_option("--config", bench.config_paths, "base configuration (YAML; repeatable, later files on top)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->required()->check(CLI::ExistingFile);
  bench_cmd->add_option("--num-envs", bench.num_envs, "environment counts to measure (comma separated)")
      ->delimiter(',')->required();
  bench_cmd->add_option("--iterations", bench.iterations, "timed iterations per size")->check(at_least(1));
  bench_cmd->add_option("--warmup", bench.warmup, "untimed iterations per size")->check(at_least(0));
  bench_cmd->add_option("--set", bench.sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  bench_cmd->add_option("--mode", bench.mode,
                        "train: rollout + update; serve: rollouts only (policy inference + env steps; ppo); update: "
                        "gradient updates alone on a full replay buffer (dqn, sac; --iterations updates timed)")
      ->check(CLI::IsMember({"train", "serve", "update"}));
  bench_cmd->add_option("--phase-iterations", bench.phase_iterations,
                        "ppo, train mode: iterations timed phase by phase after the timed ones (fenced at every "
                        "phase; printed with FLOP/s, bytes/s and their fractions of the device's peaks); 0: none")
      ->check(at_least(0));
  bench_cmd->add_option("--json", bench.json_path, "write results here");

  // gmi_drl bench-reduce
  tools::ReduceBenchOptions rb;
  rb.sizes = {10000, 100000, 1000000, 10000000};
  rb.strategies = {"floor", "mpr", "mrr", "har-ipc", "har-ipc-barriers", "har-mpi", "hybrid", "auto"};
  auto* rb_cmd = app.add_subcommand("bench-reduce", "gradient-reduction latency of every strategy on this job's GMI layout");
  rb_cmd->add_option("--config", rb.config_path, "configuration with the gmi.* layout keys (YAML)")
      ->required()->check(CLI::ExistingFile);
  rb_cmd->add_option("--sizes", rb.sizes, "buffer sizes in floats (comma separated)")->delimiter(',');
  rb_cmd->add_option("--strategies", rb.strategies,
                     "floor, mpr, mrr, har-ipc, har-ipc-barriers, har-mpi, hybrid (every k), auto "
                     "(comma separated; har-ipc-barriers: the IPC path as time-sliced GMIs run it)")
      ->delimiter(',');
  rb_cmd->add_option("--runs", rb.runs, "timed runs per point")->check(at_least(1));
  rb_cmd->add_option("--warmup", rb.warmup, "untimed runs per point")->check(at_least(0));
  rb_cmd->add_option("--set", rb.sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  rb_cmd->add_option("--json", rb.json_path, "write results here");

  // gmi_drl bench-env
  tools::EnvBenchOptions eb;
  auto* eb_cmd = app.add_subcommand("bench-env", "raw environment steps per second with random actions, per worker-thread count");
  eb_cmd->add_option("--name", eb.name, "environment id, e.g. Hopper-v5")->required();
  eb_cmd->add_option("--num-envs", eb.num_envs, "parallel environments")->check(at_least(1));
  eb_cmd->add_option("--threads", eb.threads, "worker thread counts to measure (comma separated; host-simulated envs)")
      ->delimiter(',');
  eb_cmd->add_option("--steps", eb.steps, "timed steps per thread count")->check(at_least(1));
  eb_cmd->add_option("--warmup", eb.warmup, "untimed steps first")->check(at_least(0));
  eb_cmd->add_option("--set", eb.sets, "an env.* setting (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  eb_cmd->add_option("--json", eb.json_path, "write results here");

  // gmi_drl eval
  tools::EvalOptions ev;
  auto* ev_cmd = app.add_subcommand("eval", "run a trained policy from a checkpoint (rollouts only): N episodes' return and length, env steps/s");
  ev_cmd->add_option("--checkpoint", ev.checkpoint, "checkpoint (HDF5) of a training run")->required();
  ev_cmd->add_option("--episodes", ev.episodes, "completed episodes to evaluate (all GMIs together)")->check(at_least(1));
  ev_cmd->add_flag("--deterministic", ev.deterministic, "the distribution's mode (argmax / mean) instead of samples");
  ev_cmd->add_option("--num-envs", ev.num_envs, "envs per GMI (default: the checkpoint's env.num_envs, at most the episodes)")
      ->check(at_least(1));
  ev_cmd->add_option("--seed", ev.seed, "seed of the initial states and of sampled actions")->check(at_least(0));
  ev_cmd->add_option("--set", ev.sets, "an env.* setting, e.g. --set env.max_episode_steps=200 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  ev_cmd->add_option("--out", ev.out, "write the trajectories (HDF5; one file per GMI under mpirun)");
  ev_cmd->add_option("--json", ev.json, "write the results here");
  ev_cmd->add_option("--log-level", ev.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  // gmi_drl export
  tools::ExportOptions ex;
  auto* ex_cmd = app.add_subcommand("export", "write a checkpoint's actor (observation normalisation included) as ONNX");
  ex_cmd->add_option("--checkpoint", ex.checkpoint, "checkpoint (HDF5) of a training run")->required();
  ex_cmd->add_option("--onnx", ex.onnx, "the ONNX file to write")->required();
  ex_cmd->add_option("--opset", ex.opset, "ONNX opset version")->check(CLI::Range(13, 21));

  // gmi_drl tune
  tuning::TuneOptions tu;
  auto* tu_cmd = app.add_subcommand(
      "tune", "choose GMIs per GPU and envs per GMI by profiling (GMI-DRL's Algorithm 1); writes a config overlay");
  tu_cmd->add_option("--config", tu.config_paths, "configuration to tune (YAML; repeatable, later files on top)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->required()->check(CLI::ExistingFile);
  tu_cmd->add_option("--set", tu.sets, "override a config key in every probe (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  tu_cmd->add_option("--mode", tu.mode, "train: end-to-end training throughput; serve: rollouts only")
      ->check(CLI::IsMember({"train", "serve"}));
  tu_cmd->add_option("--max-gmis-per-gpu", tu.max_gmis_per_gpu, "GMIs per GPU to start from (counting down to 1)")
      ->check(at_least(1));
  tu_cmd->add_option("--env-counts", tu.env_counts, "envs per GMI: lo..hi (doubling) or a,b,c");
  tu_cmd->add_option("--alpha", tu.alpha, "stop growing the env count when Sat = R_top / R_mem falls under this");
  tu_cmd->add_option("--probe-iterations", tu.probe_iterations, "timed iterations per probe")->check(at_least(1));
  tu_cmd->add_option("--probe-warmup", tu.probe_warmup, "untimed iterations per probe")->check(at_least(0));
  tu_cmd->add_option("--probe-timeout", tu.probe_timeout_s, "seconds before a probe is killed and recorded as failed");
  tu_cmd->add_option("--budget-minutes", tu.budget_minutes, "stop probing after this long and report the best so far");
  tu_cmd->add_flag("--exhaustive", tu.exhaustive, "probe the whole grid (and report what Algorithm 1 would choose)");
  tu_cmd->add_option("--gpus", tu.gpus, "GPUs of the job the estimate is for")->check(at_least(1));
  tu_cmd->add_option("--launcher", tu.launcher, "MPI launcher command (default: srun in a Slurm allocation, else mpirun)");
  tu_cmd->add_option("--gpu-memory", tu.gpu_memory, "memory of a GPU, e.g. 80G (default: what the first probe reports)");
  tu_cmd->add_option("--replay", tu.replay, "search an earlier --exhaustive JSON instead of probing");
  tu_cmd->add_option("--workdir", tu.workdir, "where the probes' logs and JSON go (default: tune-<time>/)");
  tu_cmd->add_option("--json", tu.json, "write every probe and the choice here");
  tu_cmd->add_option("--out", tu.out, "write the chosen layout as a config overlay (YAML) here");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "gmi_drl: error: %s (see gmi_drl --help)\n", e.what());
    return 2;
  }

  if (env->parsed()) {
    runtime::setup_logging(0);
    return guarded([&] {
      instances::KokkosScope kokkos;
      tools::run_env_tool(envo);
    });
  }
  if (cfg_ref->parsed()) {
    std::cout << config::reference_markdown();
    return 0;
  }
  if (cfg_show->parsed())
    return guarded([&] { std::cout << config::to_yaml(config::load(show_path, config::parse_overrides(show_sets))); });
  if (ckpt_inspect->parsed()) return guarded([&] { tools::inspect_checkpoint(ckpt_file); });
  if (ckpt_verify->parsed()) return guarded([&] { tools::verify_checkpoint(ckpt_file); });
  if (bench_cmd->parsed()) return tools::run_bench(bench, &argc, &argv);
  if (rb_cmd->parsed()) return tools::run_reduce_bench(rb, &argc, &argv);
  if (ev_cmd->parsed()) return tools::run_eval(ev, &argc, &argv);
  if (tu_cmd->parsed()) {
    runtime::setup_logging(0);
    int status = 0;
    const int st = guarded([&] { status = tuning::run_tune(tu); });
    return st != 0 ? st : status;
  }
  if (ex_cmd->parsed()) {
    runtime::setup_logging(0);
    return guarded([&] { tools::run_export(ex); });
  }
  if (eb_cmd->parsed()) {
    runtime::setup_logging(0);
    return guarded([&] {
      instances::KokkosScope kokkos;
      tools::run_env_bench(eb);
    });
  }

  if (train.config_paths.empty() && train.resume.empty()) {
    std::fprintf(stderr, "gmi_drl: error: --config is required to train, or --resume to continue a run (see gmi_drl --help)\n");
    return 2;
  }
  const int st = guarded([&] {
    train.overrides = config::parse_overrides(sets);
    if (seed >= 0) train.overrides.emplace_back("train.seed", std::to_string(seed));
    if (!run_dir.empty()) train.overrides.emplace_back("train.run_dir", config::yaml_quote(run_dir));
  });
  if (st != 0) return st;
  return runtime::run_training(train, &argc, &argv);
}

}  // namespace gmi::cli
