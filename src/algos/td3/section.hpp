#pragma once
/// \file
/// \brief The td3 section: TD3's hyperparameters, with the meaning of CleanRL's
/// td3_continuous_action.py, each declared once (kernels/core/key_list.hpp), and its derive step.
#include <cstdint>

#include "src/config/config.hpp"

namespace gmi::algos {

#define GMI_TD3_PER_GMI_ " (env steps of one GMI, as CleanRL's global_step with one env)"
#define GMI_TD3_KEYS(X)                                                                                        \
  X(int, num_steps, 0, at_least(0),                                                                           \
    "vector steps (every env of the GMI once) per iteration: one metrics row, the checkpoint and signal "     \
    "granularity; 0: ceil(1000 / env.num_envs)")                                                              \
  X(double, policy_lr, 3e-4, within(1e-12, 1, "in (0, 1]"), "the actor's Adam learning rate")                 \
  X(double, q_lr, 3e-4, within(1e-12, 1, "in (0, 1]"), "the Q networks' Adam learning rate")                  \
  X(double, gamma, 0.99, within(0, 1), "discount factor")                                                     \
  X(double, tau, 0.005, within(1e-12, 1, "in (0, 1]"), "target networks' Polyak rate")                        \
  X(int, batch_size, 256, at_least(1), "transitions per gradient update (sampled from this GMI's replay)")    \
  X(std::int64_t, learning_starts, 25000, at_least(0),                                                        \
    "env steps with uniformly random actions and no updates" GMI_TD3_PER_GMI_)                                \
  X(std::int64_t, policy_frequency, 2, at_least(1),                                                           \
    "delayed actor updates: the actor and the target networks update at every k-th Q update")                 \
  X(double, exploration_noise, 0.1, at_least(0.0),                                                            \
    "Gaussian noise added to the actor's actions while acting, in units of the action scale")                 \
  X(double, policy_noise, 0.2, at_least(0.0),                                                                 \
    "target policy smoothing: Gaussian noise on the target actor's actions, in units of the action scale")    \
  X(double, noise_clip, 0.5, at_least(0.0), "the target policy's noise is clipped to [-noise_clip, noise_clip]") \
  X(int, updates_per_step, 0, at_least(0),                                                                    \
    "> 0: this many Q updates after every vector step once learning started; 0: one per env step (CleanRL's " \
    "ratio)")                                                                                                 \
  X(double, max_grad_norm, 0.0, any,                                                                          \
    "clip the actor's global gradient norm, and Q1 and Q2 by one joint norm, to this value; <= 0 disables "   \
    "(CleanRL does not clip)")                                                                                \
  X(double, adam_eps, 1e-8, positive(), "Adam epsilon")

/// td3.* (read as `cfg.section<Td3Config>()`).
struct Td3Config {
  GMI_TD3_KEYS(GMI_KEY_MEMBER)
};

/// The td3 section for the registry row.
config::SectionDecl td3_section();
/// num_steps, batch_size.
void derive_td3(config::Config& c);

}  // namespace gmi::algos
