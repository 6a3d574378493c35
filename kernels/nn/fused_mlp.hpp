#pragma once
/// \file
/// \brief Team-level building blocks for small MLPs evaluated inside one kernel: a Kokkos team
/// owns a tile of samples, keeps their activations in team scratch (shared memory on GPUs) and
/// walks the layers with barriers in between.  Used by the fused rollout step and the fused PPO
/// update when the widest layer fits; wider networks take the layered cuBLAS path.
///
/// Scratch tiles are feature-major: value (feature k, sample s) at k * ld + s, so that the lanes of
/// a warp, which own consecutive samples, touch consecutive addresses.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/nn/mlp.hpp"
#include "kernels/nn/tensor_core.hpp"

namespace gmi::nn {

/// Whether team_layer runs an in x out layer on tensor cores (where the device code has them).
KOKKOS_INLINE_FUNCTION constexpr bool tensor_core_layer(int in, int out) { return in % 8 == 0 && out % 16 == 0; }

/// Floats of team_layer's staging buffer for one layer: the weights (rows padded to out + 8 on
/// tensor-core layers) and the bias.
inline int staged_floats(int in, int out) { return tensor_core_layer(in, out) ? in * (out + 8) + out : (in + 1) * out; }

/// Device-copyable description of one MLP (at most kMaxLayers layers).
struct FusedNet {
  static constexpr int kMaxLayers = 8;
  int num_layers = 0;
  int in[kMaxLayers] = {}, out[kMaxLayers] = {};
  std::size_t w[kMaxLayers] = {}, b[kMaxLayers] = {};
  int max_width = 0;
  int max_layer_floats = 0;  ///< largest staged_floats(in, out) (team_layer's staging buffer)
  std::size_t offset = 0, num_params = 0;
  FusedNet() = default;
  explicit FusedNet(const MlpLayout& l) {
    GMI_REQUIRE(int(l.layers.size()) <= kMaxLayers, "FusedNet: too many layers");
    num_layers = int(l.layers.size());
    for (int i = 0; i < num_layers; ++i) {
      in[i] = l.layers[i].in;
      out[i] = l.layers[i].out;
      w[i] = l.layers[i].w;
      b[i] = l.layers[i].b;
    }
    max_width = l.max_width();
    for (int i = 0; i < num_layers; ++i) max_layer_floats = std::max(max_layer_floats, staged_floats(in[i], out[i]));
    offset = l.offset;
    num_params = l.num_params;
  }
};

using TeamPolicy = gmi::TeamPolicy;
using TeamMember = TeamPolicy::member_type;
using ScratchFloats =
    Kokkos::View<float*, ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Threads per team for the fused kernels (1 on host backends).
constexpr int fused_team_size() {
#if defined(KOKKOS_ENABLE_CUDA)
  return 128;
#else
  return 1;
#endif
}

/// Bytes of level-0 team scratch a kernel may request (shared memory per block on GPUs, less
/// what Kokkos reserves for itself).
inline std::size_t fused_scratch_limit() {
  return std::size_t(TeamPolicy::scratch_size_max(0));
}

/// Team scratch at level 0 is the block's dynamic shared memory on GPUs, but the pointer Kokkos
/// hands out has lost that: loads and stores through it compile to generic ones (an address-space
/// check each; in the fused update they were the top stall).  `in_shared(p, align)` returns p rounded up
/// to `align` bytes, rebuilt from a shared-memory symbol so that the compiler emits LDS/STS;
/// elsewhere (host backends, level-1 scratch on hosts) only the rounding.
KOKKOS_FORCEINLINE_FUNCTION float* in_shared(void* p, std::uintptr_t align) {
  const std::uintptr_t a = (reinterpret_cast<std::uintptr_t>(p) + align - 1) & ~(align - 1);
#if defined(__CUDA_ARCH__)
  extern __shared__ float4 gmi_nn_dynamic_shared[];
  const auto base = reinterpret_cast<std::uintptr_t>(gmi_nn_dynamic_shared);
  return reinterpret_cast<float*>(reinterpret_cast<char*>(gmi_nn_dynamic_shared) + (a - base));
#else
  return reinterpret_cast<float*>(a);
#endif
}

/// Four consecutive floats from a 16-byte aligned address (one vector load on GPUs).
KOKKOS_FORCEINLINE_FUNCTION void load4(const float* p, float& a, float& b, float& c, float& d) {
#if defined(__CUDA_ARCH__)
  const float4 v = *reinterpret_cast<const float4*>(p);
  a = v.x, b = v.y, c = v.z, d = v.w;
#else
  a = p[0], b = p[1], c = p[2], d = p[3];
#endif
}

/// Four consecutive floats to a 16-byte aligned address (one vector store on GPUs).
KOKKOS_FORCEINLINE_FUNCTION void store4(float* p, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
#else
  p[0] = a, p[1] = b, p[2] = c, p[3] = d;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0;
}

/// Samples per team for n samples: the largest of `tiles` whose scratch fits
/// (scratch_floats(tile) floats) and that still gives about two teams per multiprocessor; if
/// none does, the smallest that fits (most teams); 0 if none fits.
template <class F>
int pick_tile(long long n, std::initializer_list<int> tiles, F&& scratch_floats) {
  const long long target = std::max(1, ExecSpace().concurrency() / 1024);
  int smallest = 0;
  for (int t : tiles) {  // descending
    if (scratch_floats(t) * sizeof(float) > fused_scratch_limit()) continue;
    if (n / t >= target) return t;
    smallest = t;
  }
  return smallest;
}

/// y[o][s] = f(b[o] + sum_k W(o, k) x[k][s]) for the samples of a tile; W column-major out x in,
/// f the identity when `linear`.  x and y have leading dimension `ld`; `tile` samples are computed.
/// With out % 4 == 0 and W 16-byte aligned each thread computes four outputs of one sample, reading
/// W(o..o+3, k) as one (warp-broadcast) vector load per k: 4 FMAs per 2 loads instead of 1 per 2.
/// If `wbuf` (16-byte aligned scratch of staged_floats(in, out) floats) is given, the team first
/// copies W and the bias there: every load is issued at once, so a team pays one device-memory
/// latency per layer instead of one per k (the k loop's loads depend on nothing but are issued one
/// iteration at a time; with a few teams per multiprocessor, as in a rollout step of a few
/// thousand envs, those L2 round trips were most of the kernel's time).
/// Staged layers with in % 8 == 0 and out % 16 == 0 run on tensor cores on sm_80 and newer when
/// tile % 16 == 0 and ld % 32 == 8 (conflict-free operand loads), each warp owning 16 x 16 output
/// tiles, in FP32 accuracy (3xTF32) or, with `tf32`, one TF32 pass; their staged rows are padded
/// to out + 8 floats for the same reason.
///
/// `bfrag`: the layer's W in fragment-native order (tc::bfrag_index with K = in, N = out; see
/// fused_act_prepare), for a layer that runs on tensor cores: the products read it from device
/// memory (L1) and nothing is staged; without tensor cores the layer reads W from device memory.
template <class A>
KOKKOS_INLINE_FUNCTION void team_layer(const TeamMember& team, const float* W, const float* bias,
                                       int in, int out, const float* x, float* y, int tile, int ld,
                                       bool linear, float* wbuf = nullptr, bool tf32 = false,
                                       const float* bfrag = nullptr) {
#if GMI_TENSOR_CORES
  if (bfrag && tensor_core_layer(in, out) && tile % 16 == 0 && ld % 32 == 8) {
    tc::gemm_bfrag(
        team.team_rank() / 32, team.team_size() / 32, tile, out, in, [&](int s, int k) { return x[k * ld + s]; },
        bfrag, tf32, tc::Zero(), [&](int s, int o, float v) {
          v += bias[o];
          y[o * ld + s] = linear ? v : A::f(v);
        });
    team.team_barrier();
    return;
  }
#endif
  if (bfrag) wbuf = nullptr;  // the staging buffer is sized for the other layers
#if GMI_TENSOR_CORES
  if (wbuf && tensor_core_layer(in, out) && tile % 16 == 0 && ld % 32 == 8) {
    const int ldw = out + 8;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in * out + out), [&](const int i) {
      if (i < in * out)
        wbuf[(i / out) * ldw + i % out] = W[i];
      else
        wbuf[in * ldw + i - in * out] = bias[i - in * out];
    });
    team.team_barrier();
    const float* Ws = wbuf;
    const float* bs = wbuf + in * ldw;
    tc::gemm(
        team.team_rank() / 32, team.team_size() / 32, tile, out, in,
        [&](int s, int k) { return x[k * ld + s]; }, [&](int k, int o) { return Ws[k * ldw + o]; }, tf32,
        tc::Zero(), [&](int s, int o, float v) {
          v += bs[o];
          y[o * ld + s] = linear ? v : A::f(v);
        });
    team.team_barrier();
    return;
  }
#else
  (void)tf32;
#endif
  if (wbuf) {
    const int n = in * out;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n + out),
                         [&](const int i) { wbuf[i] = i < n ? W[i] : bias[i - n]; });
    team.team_barrier();
    W = wbuf;
    bias = wbuf + n;
  }
  if ((out & 3) == 0 && aligned16(W)) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (out / 4) * tile), [&](const int item) {
      const int s = item % tile, o = 4 * (item / tile);
      float a0 = bias[o], a1 = bias[o + 1], a2 = bias[o + 2], a3 = bias[o + 3];
      const float* wk = W + o;
      const float* xk = x + s;
      for (int k = 0; k < in; ++k, wk += out, xk += ld) {
        float w0, w1, w2, w3;
        load4(wk, w0, w1, w2, w3);
        const float v = *xk;
        a0 += w0 * v, a1 += w1 * v, a2 += w2 * v, a3 += w3 * v;
      }
      y[o * ld + s] = linear ? a0 : A::f(a0);
      y[(o + 1) * ld + s] = linear ? a1 : A::f(a1);
      y[(o + 2) * ld + s] = linear ? a2 : A::f(a2);
      y[(o + 3) * ld + s] = linear ? a3 : A::f(a3);
    });
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, out * tile), [&](const int item) {
      const int s = item % tile, o = item / tile;
      float acc = bias[o];
      for (int k = 0; k < in; ++k) acc += W[o + std::size_t(out) * k] * x[k * ld + s];
      y[o * ld + s] = linear ? acc : A::f(acc);
    });
  }
  team.team_barrier();
}

/// Runs a whole MLP on a tile: x -> ping-pong buffers a, b; returns the output buffer.  frag,
/// frag_off: fragment-native copies of the tensor-core layers (layer l's at frag + frag_off[l],
/// -1 for the others), or null (see team_layer's bfrag).  wbuf:
/// staging scratch for one layer's weights (see team_layer; FusedNet::max_layer_floats), or null.  If
/// `store` is given, hidden layer l's outputs are also written to store[l] (feature-major,
/// leading dimension `store_ld`, starting at sample `first`) for a later backward pass.
template <class A>
KOKKOS_INLINE_FUNCTION const float* team_mlp(const TeamMember& team, const FusedNet& net,
                                             const float* p, const float* x, float* a, float* b,
                                             int tile, int ld, float* wbuf = nullptr,
                                             float* const* store = nullptr, std::size_t store_ld = 0,
                                             std::size_t first = 0, int valid = 0, bool tf32 = false,
                                             const float* frag = nullptr, const int* frag_off = nullptr) {
  const float* in = x;
  float* out = a;
  for (int l = 0; l < net.num_layers; ++l) {
    const bool last = l + 1 == net.num_layers;
    const float* bfrag = frag && frag_off[l] >= 0 ? frag + frag_off[l] : nullptr;
    team_layer<A>(team, p + net.w[l], p + net.b[l], net.in[l], net.out[l], in, out, tile, ld, last, wbuf, tf32,
                  bfrag);
    if (store && !last) {
      float* dst = store[l];
      const int w = net.out[l];
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, w * tile), [&](const int item) {
        const int s = item % tile, o = item / tile;
        if (s < valid) dst[std::size_t(o) * store_ld + first + s] = out[o * ld + s];
      });
    }
    in = out;
    out = (out == a) ? b : a;
  }
  return in;
}

}  // namespace gmi::nn
