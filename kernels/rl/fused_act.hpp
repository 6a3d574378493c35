#pragma once
/// \file
/// \brief The rollout's policy step in one kernel: for a tile of environments a Kokkos team
/// normalises the observations, runs the actor and the critic MLPs with their activations in team
/// scratch (shared memory on GPUs), samples the actions and writes actions, log-probabilities and
/// values.  It replaces ~14 launches per rollout step (normalise, 2 x (GEMM + bias/activation per
/// layer), sample) and never writes hidden activations to device memory.  Usable when the widest
/// layer fits a tile in scratch (fused_act_supported); otherwise the layered cuBLAS path is used.
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/nn/actor_critic.hpp"
#include "kernels/rl/heads.hpp"

namespace gmi::rl {

struct FusedActArgs {
  int N = 0;
  int obs_dim = 0, act_dim = 1, num_actions = 0;
  std::uint64_t seed = 0, step = 0, env_offset = 0;
  /// If set, the global step is *step_base + step, read on the device (a captured CUDA graph
  /// replays the launch with new steps: device.graphs).
  const std::uint64_t* step_base = nullptr;
  bool clip_actions = true;
  const float* params = nullptr;
  std::size_t log_std = 0;           ///< offset of the log-stds in params (continuous)
  const float* obs = nullptr;        ///< [N][obs_dim] raw observations
  const double* obs_stats = nullptr; ///< RunningMeanStd state [mean | var | count], or null
  float obs_clip = 10.0f;
  const float* act_low = nullptr;
  const float* act_high = nullptr;
  float* actions = nullptr;          ///< [N][act_dim]
  float* env_actions = nullptr;      ///< [N][act_dim] (may equal actions)
  float* logp = nullptr;             ///< [N]
  float* values = nullptr;           ///< [N]
  /// Tensor-core layers in one TF32 pass (device.matmul: tf32) instead of three (FP32 accuracy)
  bool tf32 = false;
  /// The distribution's mode (argmax of the logits, the Gaussian's mean) instead of a sample
  bool deterministic = false;
  /// Fragment-native copies of the tensor-core layers' weights, written from these params by
  /// fused_act_prepare, or null: each team then stages every layer's weights in shared memory.
  /// With them the hidden layers read W from device memory (L1) in the order the tensor cores
  /// take it, nothing large is staged, and more teams fit on a multiprocessor.
  const float* frag = nullptr;
};

/// Samples per team tile for n envs; 0 if the networks are too wide for the fused kernel.
int fused_act_tile(const nn::ActorCriticLayout& layout, long long n = 1 << 30);
inline bool fused_act_supported(const nn::ActorCriticLayout& layout) {
  return fused_act_tile(layout) > 0;
}

/// Whether FusedActArgs::frag speeds this device up: GPUs whose fused kernels run the hidden layers
/// on tensor cores (sm_80 and newer).  Elsewhere those layers would read their weights from device
/// memory at every k step instead of staging them.
bool fused_act_fragments_help();
/// Floats of fused_act_prepare's output for this layout (0: no layer runs on tensor cores).
std::size_t fused_act_fragment_floats(const nn::ActorCriticLayout& layout);
/// Writes the fragment-native copies of params' tensor-core layers (FusedActArgs::frag) into frag
/// (fused_act_fragment_floats floats, 16-byte aligned).  Run it again whenever params change.
void fused_act_prepare(const ExecSpace& space, const nn::ActorCriticLayout& layout, const float* params, float* frag);

/// Actor + critic forward and action sampling for all N envs (same random draws as
/// sample_actions: philox(seed, {step << 8 | block, tag(kAction, env)})).
void fused_act(const ExecSpace& space, const nn::ActorCriticLayout& layout, const FusedActArgs& a);

}  // namespace gmi::rl
