#pragma once
/// \file
/// \brief Actor and critic MLPs (and the Gaussian head's log-std) in one flat parameter buffer:
/// [ actor | log_std (continuous actions only) | critic ].  Gradients and Adam moments use the
/// same layout, so a gradient all-reduce is one call and a checkpoint one dataset per tensor.
#include <cstdint>
#include <vector>

#include "kernels/nn/mlp.hpp"

namespace gmi::nn {

struct ActorCriticSpec {
  int obs_dim = 0;
  int act_dim = 1;                      ///< numbers per action
  int num_actions = 0;                  ///< > 0: categorical head over this many actions
  std::vector<int> action_nvec;         ///< MultiDiscrete: logits per group (sum num_actions, act_dim groups)
  std::vector<int> actor_hidden{64, 64};
  std::vector<int> critic_hidden{64, 64};
  Activation activation = Activation::Tanh;
  double log_std_init = 0.0;            ///< Gaussian head
  double actor_output_gain = 0.01;      ///< CleanRL: std=0.01 for the policy head
  double critic_output_gain = 1.0;      ///< CleanRL: std=1 for the value head
};

struct ActorCriticLayout {
  ActorCriticLayout() = default;
  explicit ActorCriticLayout(const ActorCriticSpec& s);

  bool continuous() const { return num_actions == 0; }
  int actor_out() const { return actor.out(); }  ///< logits (num_actions) or means (act_dim)

  MlpLayout actor;
  MlpLayout critic;
  std::size_t log_std = 0;  ///< offset of the act_dim log-stds (continuous only)
  std::size_t num_params = 0;
  int obs_dim = 0;
  int act_dim = 1;
  int num_actions = 0;
  std::vector<int> action_nvec;  ///< the categorical head's groups (empty: one)
};

/// Initial parameters (host), identical for a given seed on every rank and build.
template <class Scalar>
std::vector<Scalar> init_actor_critic(const ActorCriticLayout& l, const ActorCriticSpec& s,
                                      std::uint64_t seed);

}  // namespace gmi::nn
