// gmi_drl tune
#include <memory>

#include "src/cli/commands.hpp"
#include "src/gmi/tune.hpp"
#include "src/runtime/logging.hpp"

namespace gmi::cli {

Command add_tune_command(CLI::App& app) {
  auto tu = std::make_shared<tuning::TuneOptions>();
  auto* tu_cmd = app.add_subcommand(
      "tune", "choose GMIs per GPU and envs per GMI by profiling (GMI-DRL's Algorithm 1); writes a config overlay");
  tu_cmd->add_option("--config", tu->config_paths, "configuration to tune (YAML; repeatable, later files on top)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->required()->check(CLI::ExistingFile);
  tu_cmd->add_option("--set", tu->sets, "override a config key in every probe (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  tu_cmd->add_option("--mode", tu->mode, "train: end-to-end training throughput; serve: rollouts only")
      ->check(CLI::IsMember({"train", "serve"}));
  tu_cmd->add_option("--templates", tu->templates,
                     "mapping.template values to search, e.g. dp,e-at,ea-t,async (default: the config's); under e-at "
                     "the env counts are per simulator GMI, under ea-t and async per serving GMI")
      ->delimiter(',')
      ->check(CLI::IsMember({"dp", "e-at", "ea-t", "async"}));
  tu_cmd->add_option("--max-gmis-per-gpu", tu->max_gmis_per_gpu, "GMIs per GPU to start from (counting down to 1)")
      ->check(at_least(1));
  tu_cmd->add_option("--env-counts", tu->env_counts, "envs per GMI: lo..hi (doubling) or a,b,c");
  tu_cmd->add_option("--alpha", tu->alpha, "stop growing the env count when Sat = R_top / R_mem falls under this");
  tu_cmd->add_option("--probe-iterations", tu->probe_iterations, "timed iterations per probe")->check(at_least(1));
  tu_cmd->add_option("--probe-warmup", tu->probe_warmup, "untimed iterations per probe")->check(at_least(0));
  tu_cmd->add_option("--probe-jobs", tu->probe_jobs,
                     "layout: one job per template and GMI count, sent its env counts in turn (the default); point: "
                     "a fresh job per grid point")
      ->check(CLI::IsMember({"layout", "point"}));
  tu_cmd->add_option("--probe-timeout", tu->probe_timeout_s, "seconds before a probe is killed and recorded as failed");
  tu_cmd->add_option("--budget-minutes", tu->budget_minutes, "stop probing after this long and report the best so far");
  tu_cmd->add_flag("--exhaustive", tu->exhaustive, "probe the whole grid (and report what Algorithm 1 would choose)");
  tu_cmd->add_option("--gpus", tu->gpus, "GPUs of the job the estimate is for")->check(at_least(1));
  tu_cmd->add_option("--launcher", tu->launcher, "MPI launcher command (default: srun in a Slurm allocation, else mpirun)");
  tu_cmd->add_option("--gpu-memory", tu->gpu_memory, "memory of a GPU, e.g. 80G (default: what the first probe reports)");
  tu_cmd->add_option("--replay", tu->replay, "search an earlier --exhaustive JSON instead of probing");
  tu_cmd->add_option("--workdir", tu->workdir, "where the probes' logs and JSON go (default: tune-<time>/)");
  tu_cmd->add_option("--json", tu->json, "write every probe and the choice here");
  tu_cmd->add_option("--out", tu->out, "write the chosen layout as a config overlay (YAML) here");
  return {tu_cmd, [tu](int*, char***) {
            runtime::setup_logging(0);
            int status = 0;
            const int st = guarded([&] { status = tuning::run_tune(*tu); });
            return st != 0 ? st : status;
          }};
}

}  // namespace gmi::cli
