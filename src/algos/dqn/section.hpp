#pragma once
/// \file
/// \brief The dqn section: DQN's hyperparameters, with the meaning of CleanRL's dqn.py (step
/// counts are one GMI's env steps), each declared once (kernels/core/key_list.hpp), and its derive
/// step.
#include <cstdint>

#include "src/config/config.hpp"

namespace gmi::algos {

#define GMI_DQN_PER_GMI_ " (env steps of one GMI, as CleanRL's global_step with one env)"
#define GMI_DQN_KEYS(X)                                                                                        \
  X(int, num_steps, 0, at_least(0),                                                                           \
    "vector steps (every env of the GMI once) per iteration: one metrics row, the checkpoint and signal "     \
    "granularity; 0: ceil(1000 / env.num_envs)")                                                              \
  X(double, learning_rate, 2.5e-4, within(1e-12, 1, "in (0, 1]"), "Adam learning rate")                                   \
  X(double, gamma, 0.99, within(0, 1), "discount factor")                                                     \
  X(double, tau, 1.0, within(1e-12, 1, "in (0, 1]"), "target network update rate (1: copy the Q network)")               \
  X(std::int64_t, target_network_frequency, 500, at_least(1),                                                 \
    "env steps between target network updates" GMI_DQN_PER_GMI_)                                             \
  X(int, batch_size, 128, at_least(1), "transitions per gradient update (sampled from this GMI's replay)")    \
  X(double, start_e, 1.0, within(0, 1), "exploration epsilon at the start")                                   \
  X(double, end_e, 0.05, within(0, 1), "exploration epsilon after the decay")                                 \
  X(double, exploration_fraction, 0.5, within(1e-12, 1, "in (0, 1]"),                                                     \
    "fraction of train.total_env_steps over which epsilon decays linearly from start_e to end_e")             \
  X(std::int64_t, learning_starts, 10000, at_least(0), "env steps before the first update" GMI_DQN_PER_GMI_) \
  X(std::int64_t, train_frequency, 10, at_least(1), "env steps per gradient update" GMI_DQN_PER_GMI_)        \
  X(int, updates_per_step, 0, at_least(0),                                                                    \
    "> 0: this many gradient updates after every vector step once learning started, instead of one per "      \
    "dqn.train_frequency env steps (many envs per GMI)")                                                      \
  X(bool, double_, false, any, "double DQN: the online network picks the next action, the target network values it") \
  X(bool, dueling, false, any,                                                                                \
    "dueling head: Q(s, a) = V(s) + A(s, a) - mean_a A(s, a), V and A from the last hidden layer")           \
  X(double, max_grad_norm, 0.0, any, "clip the global gradient norm to this value; <= 0 disables (CleanRL does not clip)") \
  X(double, adam_eps, 1e-8, positive(), "Adam epsilon")

/// dqn.* (read as `cfg.section<DqnConfig>()`; `double_` is the key dqn.double).
struct DqnConfig {
  GMI_DQN_KEYS(GMI_KEY_MEMBER)
};

/// The dqn section for the registry row.
config::SectionDecl dqn_section();
/// num_steps, batch_size; epsilon's schedule.
void derive_dqn(config::Config& c);

}  // namespace gmi::algos
