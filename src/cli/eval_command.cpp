// gmi_drl eval
#include <memory>

#include "src/cli/commands.hpp"
#include "src/tools/eval.hpp"

namespace gmi::cli {

Command add_eval_command(CLI::App& app) {
  auto ev = std::make_shared<tools::EvalOptions>();
  auto* ev_cmd = app.add_subcommand("eval", "run a trained policy from a checkpoint (rollouts only): N episodes' return and length, env steps/s");
  ev_cmd->add_option("--checkpoint", ev->checkpoint, "checkpoint (HDF5) of a training run")->required();
  ev_cmd->add_option("--episodes", ev->episodes, "completed episodes to evaluate (all GMIs together)")->check(at_least(1));
  ev_cmd->add_flag("--deterministic", ev->deterministic, "the distribution's mode (argmax / mean) instead of samples");
  ev_cmd->add_option("--num-envs", ev->num_envs, "envs per GMI (default: the checkpoint's env.num_envs, at most the episodes)")
      ->check(at_least(1));
  ev_cmd->add_option("--seed", ev->seed, "seed of the initial states and of sampled actions")->check(at_least(0));
  ev_cmd->add_option("--set", ev->sets, "an env.* setting, e.g. --set env.max_episode_steps=200 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  ev_cmd->add_option("--out", ev->out, "write the trajectories (HDF5; one file per GMI under mpirun)");
  ev_cmd->add_option("--json", ev->json, "write the results here");
  ev_cmd->add_option("--log-level", ev->log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  return {ev_cmd, [ev](int* argc, char*** argv) { return tools::run_eval(*ev, argc, argv); }};
}

}  // namespace gmi::cli
