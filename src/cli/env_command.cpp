// gmi_drl env
#include <memory>

#include "src/cli/commands.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/runtime/logging.hpp"
#include "src/tools/env_tool.hpp"

namespace gmi::cli {

Command add_env_command(CLI::App& app) {
  auto envo = std::make_shared<tools::EnvToolOptions>();
  auto* env = app.add_subcommand("env", "step an environment with given actions and write the trajectory to HDF5");
  env->add_option("--name", envo->name, "environment id, e.g. CartPole-v1")->required();
  env->add_option("--num-envs", envo->num_envs, "parallel environments N")->required()->check(at_least(1));
  env->add_option("--seed", envo->seed, "seed of the initial states")->required()->check(at_least(0));
  auto* env_actions = env->add_option("--actions", envo->actions_file, "text file: one line per step with N*act_dim numbers")
                          ->check(CLI::ExistingFile);
  auto* env_random = env->add_flag("--random-actions", envo->random_actions,
                                   "uniform valid actions drawn from --seed (written to the file) instead of --actions");
  env->add_option("--steps", envo->steps, "steps with --random-actions")->check(at_least(1));
  env_actions->excludes(env_random);
  env->add_option("--out", envo->out, "output HDF5 file")->required();
  env->add_option("--max-episode-steps", envo->max_episode_steps, "time limit (default: Gymnasium's)")
      ->check(at_least(0));
  env->add_option("--set", envo->sets, "an env.* setting, e.g. --set env.ctrl_cost_weight=0.2 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return {env, [envo](int*, char***) {
            runtime::setup_logging(0);
            return guarded([&] {
              instances::KokkosScope kokkos;
              tools::run_env_tool(*envo);
            });
          }};
}

}  // namespace gmi::cli
