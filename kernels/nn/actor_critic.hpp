#pragma once
/// \file
/// \brief Actor and critic MLPs (and the Gaussian head's log-std) in one flat parameter buffer:
/// [ actor | log_std (continuous actions only) | critic ], or with shared hidden layers
/// [ trunk | actor head | log_std | critic head ] (the trunk's last layer activated, each head one
/// linear layer on its output, as WarpDrive's and CleanRL's Atari networks).  Gradients and Adam
/// moments use the same layout, so a gradient all-reduce is one call and a checkpoint one dataset
/// per tensor.
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
  bool shared_hidden = false;           ///< one trunk of actor_hidden under both heads
};

struct ActorCriticLayout {
  ActorCriticLayout() = default;
  explicit ActorCriticLayout(const ActorCriticSpec& s);

  bool continuous() const { return num_actions == 0; }
  int actor_out() const { return actor.out(); }  ///< logits (num_actions) or means (act_dim)
  bool shared() const { return !trunk.layers.empty(); }

  MlpLayout trunk;   ///< the shared hidden layers (empty: none; actor and critic are whole MLPs)
  MlpLayout actor;   ///< the actor, or with a trunk its head
  MlpLayout critic;  ///< the critic, or with a trunk its head
  std::size_t log_std = 0;  ///< offset of the act_dim log-stds (continuous only)
  std::size_t num_params = 0;
  int obs_dim = 0;
  int act_dim = 1;
  int num_actions = 0;
  std::vector<int> action_nvec;  ///< the categorical head's groups (empty: one)
};

/// The activations and scratch of an actor-critic's passes over batches of up to `capacity`
/// columns: the trunk's (shared layouts), the actor's and the critic's.
struct ActorCriticWorkspace {
  ActorCriticWorkspace() = default;
  /// `actor` / `critic` false: that network's passes are never run on this workspace; `backward`:
  /// ac_backward runs on it (a shared trunk's output gradient).
  ActorCriticWorkspace(const ActorCriticLayout& l, int capacity, bool actor = true, bool critic = true,
                       bool backward = false);
  /// Floats a workspace of `rows` columns holds (memory estimates).
  static double size(const ActorCriticLayout& l, double rows, bool backward);
  MlpWorkspace<float> trunk, actor, critic;
  View1<float> d_trunk;  ///< shared: the gradient of the trunk's output
};

/// The forward passes on X (obs_dim x B) that `actor` / `critic` ask for (with a trunk, the
/// trunk's once); their outputs: ac_policy_out and ac_values.
void ac_forward(const ExecSpace& space, const ActorCriticLayout& l, const float* params, const float* X, int B,
                ActorCriticWorkspace& ws, bool actor, bool critic);
/// The actor's outputs of the last ac_forward (actor_out() x B) and the critic's (B values).
inline float* ac_policy_out(const ActorCriticLayout& l, ActorCriticWorkspace& ws) { return ws.actor.output(l.actor); }
inline float* ac_values(const ActorCriticLayout& l, ActorCriticWorkspace& ws) { return ws.critic.output(l.critic); }
/// Gradients of every weight (overwritten in `grads`, the log-std's excepted) given dL/d(policy
/// outputs) and dL/d(values) (either may be overwritten), after an ac_forward of both on the same X,
/// on a workspace made with `backward`.
void ac_backward(const ExecSpace& space, const ActorCriticLayout& l, const float* params, const float* X, int B,
                 ActorCriticWorkspace& ws, float* d_policy, float* d_values, float* grads);

/// Initial parameters (host), identical for a given seed on every rank and build.
template <class Scalar>
std::vector<Scalar> init_actor_critic(const ActorCriticLayout& l, const ActorCriticSpec& s,
                                      std::uint64_t seed);

}  // namespace gmi::nn
