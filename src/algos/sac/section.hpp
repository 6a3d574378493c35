#pragma once
/// \file
/// \brief The sac section: SAC's hyperparameters, with the meaning of CleanRL's
/// sac_continuous_action.py, each declared once (kernels/core/key_list.hpp), and its derive step.
#include <cstdint>
#include <optional>

#include "src/config/config.hpp"

namespace gmi::algos {

#define GMI_SAC_PER_GMI_ " (env steps of one GMI, as CleanRL's global_step with one env)"
#define GMI_SAC_KEYS(X)                                                                                        \
  X(int, num_steps, 0, at_least(0),                                                                           \
    "vector steps (every env of the GMI once) per iteration: one metrics row, the checkpoint and signal "     \
    "granularity; 0: ceil(1000 / env.num_envs)")                                                              \
  X(double, policy_lr, 3e-4, within(1e-12, 1, "in (0, 1]"), "the actor's Adam learning rate")                             \
  X(double, q_lr, 1e-3, within(1e-12, 1, "in (0, 1]"), "the Q networks' (and alpha's) Adam learning rate")               \
  X(double, gamma, 0.99, within(0, 1), "discount factor")                                                     \
  X(double, tau, 0.005, within(1e-12, 1, "in (0, 1]"), "target networks' Polyak rate")                                   \
  X(int, batch_size, 256, at_least(1), "transitions per gradient update (sampled from this GMI's replay)")    \
  X(std::int64_t, learning_starts, 5000, at_least(0),                                                         \
    "env steps with uniformly random actions and no updates" GMI_SAC_PER_GMI_)                                \
  X(std::int64_t, policy_frequency, 2, at_least(1),                                                           \
    "delayed actor updates: at every k-th Q update, k actor (and alpha) updates")                             \
  X(std::int64_t, target_network_frequency, 1, at_least(1),                                                   \
    "env steps between target network updates" GMI_SAC_PER_GMI_ "; with sac.updates_per_step > 0, Q "        \
    "updates between them (at the end of the update event: many envs do not merge them)")                      \
  X(double, alpha, 0.2, positive(), "entropy coefficient; ignored when sac.autotune (alpha then starts at 1, as CleanRL)") \
  X(bool, autotune, true, any, "learn the entropy coefficient towards sac.target_entropy")                    \
  X(std::optional<double>, target_entropy, std::nullopt, any,                                                 \
    "target entropy of automatic tuning; null: -(action dimensions), as CleanRL")                             \
  X(int, updates_per_step, 0, at_least(0),                                                                    \
    "> 0: this many Q updates after every vector step once learning started; 0: one per env step (CleanRL's " \
    "ratio)")                                                                                                 \
  X(double, max_grad_norm, 0.0, any,                                                                          \
    "clip the actor's global gradient norm, and Q1 and Q2 by one joint norm, to this value; <= 0 disables "   \
    "(CleanRL does not clip)")                                                                                \
  X(double, adam_eps, 1e-8, positive(), "Adam epsilon")

/// sac.* (read as `cfg.section<SacConfig>()`).
struct SacConfig {
  GMI_SAC_KEYS(GMI_KEY_MEMBER)
};

/// The sac section for the registry row.
config::SectionDecl sac_section();
/// num_steps, batch_size; the action dimensions SAC takes.
void derive_sac(config::Config& c);

}  // namespace gmi::algos
