#pragma once
/// \file
/// \brief The ppo section: PPO's hyperparameters, with the meaning of CleanRL's ppo.py /
/// ppo_continuous_action.py, each declared once (kernels/core/key_list.hpp), and its derive step.
#include <optional>
#include <string>
#include <vector>

#include "src/config/config.hpp"

namespace gmi::algos {

#define GMI_PPO_KEYS(X)                                                                                        \
  X(int, num_steps, 128, at_least(1), "rollout length per environment per iteration")                        \
  X(double, learning_rate, 2.5e-4, within(1e-12, 1, "in (0, 1]"), "Adam learning rate (initial value if annealed)")      \
  X(bool, anneal_lr, true, any, "decay the learning rate linearly to 0 over the run")                         \
  X(double, gamma, 0.99, within(0, 1), "discount factor")                                                     \
  X(double, gae_lambda, 0.95, within(0, 1), "GAE lambda")                                                     \
  X(int, num_minibatches, 4, at_least(1), "minibatches per epoch; must divide env.num_envs * ppo.num_steps") \
  X(int, update_epochs, 4, at_least(1), "passes over the rollout per iteration")                             \
  X(bool, norm_adv, true, any, "normalise advantages within each minibatch")                                  \
  X(double, clip_coef, 0.2, within(1e-6, 10, "in (0, 10]"), "surrogate clipping coefficient")                            \
  X(bool, clip_vloss, true, any, "clip the value loss like the surrogate")                                    \
  X(double, ent_coef, 0.01, at_least(0), "entropy bonus coefficient")                                         \
  X(double, vf_coef, 0.5, at_least(0), "value loss coefficient")                                              \
  X(double, max_grad_norm, 0.5, any, "clip the global gradient norm to this value; <= 0 disables")           \
  X(std::optional<double>, target_kl, std::nullopt, or_null(positive()),                                      \
    "stop an iteration's epochs once the approximate KL exceeds this; null: off")                             \
  X(double, adam_eps, 1e-5, positive(), "Adam epsilon")                                                       \
  X(bool, normalize_obs, false, any,                                                                          \
    "normalise observations by running mean and std (statistics frozen during a rollout, updated after it)")  \
  X(bool, normalize_reward, false, any, "divide rewards by the running std of the discounted return")         \
  X(double, obs_clip, 10.0, positive(), "clip normalised observations to [-c, c]")                           \
  X(double, reward_clip, 10.0, positive(), "clip scaled rewards to [-c, c]")                                  \
  X(bool, clip_actions, true, any, "clip sampled continuous actions to the action space before stepping")    \
  X(bool, bootstrap_truncated, true, any,                                                                     \
    "for time-limit truncations, add gamma * V(final observation) to the reward instead of treating the "     \
    "episode end as terminal")                                                                                \
  X(std::vector<std::string>, frozen_roles, {}, any,                                                          \
    "multi-agent games: roles whose policy acts but is not trained (WarpDrive's to_train: false), e.g. "      \
    "[runner] to train the taggers against untrained runners")

/// ppo.* (read as `cfg.section<PpoConfig>()`).
struct PpoConfig {
  GMI_PPO_KEYS(GMI_KEY_MEMBER)
};

/// The ppo section for the registry row.
config::SectionDecl ppo_section();
/// num_steps, batch_size, minibatch_size; the checks between ppo.* and the environment.
void derive_ppo(config::Config& c);

}  // namespace gmi::algos
