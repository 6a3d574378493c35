#pragma once
/// \file
/// \brief The PPO update's network passes in few launches (small MLPs only; see fused_mlp.hpp).
///  * fused_forward_train: for minibatch sample i, reads rollout row perm(base + i) directly (no
///    gather pass), normalises the observation, runs actor and critic, and writes what the loss
///    and the backward pass need: outputs, hidden activations (feature-major [width][B]), the
///    normalised input and the sample's stored action, log-prob, advantage, return and value.
///  * fused_backward: gradients of one MLP from dL/d(output).  Persistent teams walk tiles of the
///    minibatch, keep their partial dW and db in team scratch, and add them to the flat gradient
///    buffer with one atomic per parameter per team at the end (the buffer must be zeroed first).
/// The layered path (mlp_forward / mlp_backward with cuBLAS) computes the same quantities; the
/// tests check one against the other.
#include <cstdint>

#include "kernels/nn/actor_critic.hpp"
#include "kernels/nn/fused_mlp.hpp"
#include "kernels/rl/shuffle.hpp"

namespace gmi::rl {

struct FusedForwardArgs {
  int B = 0;
  int obs_dim = 0, act_dim = 1;
  Permutation perm;          ///< minibatch sample i is rollout row perm(base + i)
  std::uint32_t base = 0;
  const float* params = nullptr;
  // rollout storage, rows [T*N]
  const float* obs = nullptr;         ///< [T*N][obs_dim] raw
  const double* obs_stats = nullptr;  ///< RunningMeanStd state, or null (no normalisation)
  float obs_clip = 10.0f;
  const float* actions = nullptr;     ///< [T*N][act_dim]
  const float* logp = nullptr;
  const float* adv = nullptr;
  const float* returns = nullptr;
  const float* values = nullptr;
  // minibatch outputs
  float* x = nullptr;  ///< [obs_dim][B] normalised inputs (feature-major)
  float* actor_hidden[nn::FusedNet::kMaxLayers] = {};   ///< [width_l][B]
  float* critic_hidden[nn::FusedNet::kMaxLayers] = {};  ///< [width_l][B]
  float* actor_out = nullptr;  ///< [B][actor_out]
  float* value_out = nullptr;  ///< [B]
  float* mb_actions = nullptr;  ///< [B][act_dim]
  float* mb_logp = nullptr, *mb_adv = nullptr, *mb_returns = nullptr, *mb_values = nullptr;
};

struct FusedBackwardArgs {
  int B = 0;
  const float* params = nullptr;
  const float* x = nullptr;  ///< [in][B] network input (feature-major)
  const float* hidden[nn::FusedNet::kMaxLayers] = {};  ///< [width_l][B] from the forward pass
  const float* dY = nullptr;  ///< [B][out] dL/d(output), sample-major
  float* grads = nullptr;     ///< flat gradient buffer; this network's entries are added to
};

/// True if both networks fit the fused kernels' scratch.
bool fused_update_supported(const nn::ActorCriticLayout& layout);

void fused_forward_train(const ExecSpace& space, const nn::ActorCriticLayout& layout,
                         const FusedForwardArgs& a);

void fused_backward(const ExecSpace& space, const nn::MlpLayout& net, const FusedBackwardArgs& a);

}  // namespace gmi::rl
