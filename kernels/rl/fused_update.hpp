#pragma once
/// \file
/// \brief One PPO minibatch's gradient in two kernels (actor, critic) plus one reduction, for small
/// MLPs: the fused update path.
///
/// A Kokkos team owns a tile of S minibatch samples at a time and walks, in team scratch (shared
/// memory on GPUs): gather (one thread per sample: sample i is rollout row perm(base + i), its
/// observation normalised, and its loss inputs), the forward pass, the PPO loss and its gradient
/// per sample, and the backward pass, adding dW and db
/// into per-team accumulators (in device memory, one block per team, mostly served by L2: the
/// activations alone fill the shared memory at S = 64, and a tile's fixed costs, weight loads and
/// barriers, dominate, so a larger tile beats on-chip accumulators).  Per-sample data never goes
/// to device memory: the layered path
/// moves every hidden activation and its gradient through device memory several times (about
/// 24 GB per 2M-sample minibatch for two 64x64 networks), which bounds it.
///
/// Layout in scratch: every width is padded to a multiple of 4 with zero weights, so each thread
/// works on 4x4 register blocks with 16-byte loads; tiles are sample-major with a row stride that
/// is an odd multiple of 4 floats, so 8 lanes reading 8 consecutive samples hit distinct banks.
/// The dZ of a layer overwrites that layer's input activations once its dW is done.
///
/// Layers whose padded widths are both multiples of 16 (the 64x64 hidden layers, which hold most of
/// the work) run their three products (forward, dW, dZ) on tensor cores on sm_80 and newer, each
/// warp owning 16x16 tiles, in FP32 accuracy (3xTF32, see kernels/nn/tensor_core.hpp); the others,
/// and every layer on host backends, use the 4x4 register blocks.  Their forward and dZ products
/// read the activations with ldmatrix and W from fragment-native copies (W and its transpose,
/// written with the padded weights: one 16-byte load per lane and k step), and their dW
/// accumulators are stored fragment-native (two 16-byte accesses per lane and tile): scalar
/// loads of row-major weights and accumulators were most of the kernel's L1 traffic.  Each k
/// step's operands are loaded one step ahead.
///
/// Determinism: teams are persistent (team t takes tiles t, t + league, ...), each writes its sums
/// to its own row of a partials buffer, and the reduction adds the rows in a fixed order (16 groups
/// of rows t = g mod 16 in order, then the groups in order), so the gradient is bitwise
/// reproducible for a given device and league size (exact restarts rely on it).
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/nn/actor_critic.hpp"
#include "kernels/rl/ppo_loss.hpp"
#include "kernels/rl/shuffle.hpp"

namespace gmi::rl {

struct FusedUpdateArgs {
  int B = 0;  ///< minibatch size
  Permutation perm;  ///< minibatch sample i is rollout row perm(base + i)
  std::uint32_t base = 0;
  const float* params = nullptr;
  // rollout storage, rows [T*N]
  const float* obs = nullptr;         ///< [T*N][obs_dim] raw
  const double* obs_stats = nullptr;  ///< RunningMeanStd state, or null (no normalisation)
  float obs_clip = 10.0f;
  const float* actions = nullptr;  ///< [T*N][act_dim]
  const float* logp = nullptr;
  const float* adv = nullptr;
  const float* returns = nullptr;
  const float* values = nullptr;
  const Moments* adv_moments = nullptr;  ///< sums of the minibatch's advantages (norm_adv)
  // loss (the meaning of PpoLossArgs)
  bool norm_adv = true, clip_vloss = true;
  float clip_coef = 0.2f, ent_coef = 0.0f, vf_coef = 0.5f;
  /// Tensor-core products in one TF32 pass (10-bit mantissa, device.matmul: tf32) instead of
  /// three (FP32 accuracy)
  bool tf32 = false;
  // outputs
  float* grads = nullptr;      ///< flat gradient buffer: every entry is written (no zeroing needed)
  LossStats* stats = nullptr;  ///< sums over the minibatch
};

/// Sum and sum of squares of adv[perm(base + i)], i < B, into *out (device memory).
void permuted_moments(const ExecSpace& space, const float* adv, const Permutation& perm,
                      std::uint32_t base, int B, Moments* out);

class FusedUpdate {
 public:
  static constexpr int kMaxLayers = 8;
  static constexpr int kMaxActDim = 8;
  /// Device description of one network with padded widths (see the file comment).
  struct Net {
    int layers = 0;
    int in[kMaxLayers] = {}, out[kMaxLayers] = {}, in4[kMaxLayers] = {}, out4[kMaxLayers] = {};
    std::size_t w_src[kMaxLayers] = {}, b_src[kMaxLayers] = {};  ///< offsets in params
    int w[kMaxLayers] = {}, b[kMaxLayers] = {};  ///< offsets in the weight block (multiples of 8)
    /// layer l runs on tensor cores where the device code has them (both widths multiples of 16)
    bool tc[kMaxLayers] = {};
    /// tensor-core layers: W (in4 x out4, the forward product's B) and its transpose (the backward
    /// product's B) again, fragment-native (nn::tc::bfrag_index), at these offsets in the block
    int fw[kMaxLayers] = {}, bw[kMaxLayers] = {};
    /// floats of the block's padded W and b (the dW/db accumulators' size); the fragment copies follow
    int acc_floats = 0;
    /// activation tiles [S][ld]: tile l starts at act[l] * S floats (act: floats per sample before it)
    int act[kMaxLayers + 1] = {}, ld[kMaxLayers + 1] = {};
    int weight_floats = 0, act_row_floats = 0;
    std::size_t offset = 0, num_params = 0;  ///< the network's range of the flat buffer
  };

  FusedUpdate() = default;
  /// Plans both networks' kernels for minibatches of up to max_B samples; check supported().
  FusedUpdate(const nn::ActorCriticLayout& layout, int max_B);

  /// True if both networks fit the kernels' scratch (and the Gaussian head has at most
  /// kMaxActDim dimensions).
  static bool supported(const nn::ActorCriticLayout& layout);

  /// The minibatch's gradient into a.grads and its loss sums into *a.stats.
  void gradients(const ExecSpace& space, const FusedUpdateArgs& a) const;

  int tile() const { return tile_; }
  int league() const { return league_; }

 private:
  nn::ActorCriticLayout layout_;
  Net actor_, critic_;
  int tile_ = 0, league_ = 0;
  std::size_t scratch_bytes_ = 0;
  View1<float> partials_;    ///< [league][num_params]
  View1<float> padded_;      ///< both networks' weights, padded
  View1<double> stat_rows_;  ///< [league][5 + act_dim]
  std::size_t acc_stride_ = 0;
  View1<float> accs_;         ///< [league][acc_stride]: the teams' dW/db accumulators (padded)
  int groups_ = 1;            ///< the reduction's row groups (first pass)
  View1<float> group_sums_;   ///< [groups][num_params]
  View1<double> group_stats_; ///< [groups][5 + act_dim]
};

}  // namespace gmi::rl
