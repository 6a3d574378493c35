#include "kernels/rl/fused_update.hpp"

#include <algorithm>

#include "kernels/core/error.hpp"
#include "kernels/core/side_stream.hpp"
#include "kernels/nn/activation.hpp"
#include "kernels/nn/fused_mlp.hpp"
#include "kernels/nn/tensor_core.hpp"
#include "kernels/rl/heads.hpp"
#include "kernels/rl/normalizer.hpp"

namespace gmi::rl {
namespace {

using Member = nn::TeamMember;
using Scratch = nn::ScratchFloats;
using Net = FusedUpdate::Net;

/// Threads per team: a 64-wide layer of a 32-sample tile is 128 register blocks of 4 x 4, which is
/// the fused kernels' team size.
constexpr int team_size() { return nn::fused_team_size(); }
/// Scratch level: shared memory on GPUs; host backends allow little level-0 scratch.
constexpr int kScratchLevel = device_is_host() ? 1 : 0;
/// Teams per multiprocessor the gradient kernels' registers must allow (launch bounds)
constexpr int kMinTeamsPerSm = 5;

constexpr int pad4(int n) { return (n + 3) / 4 * 4; }
constexpr int pad8(int n) { return (n + 7) / 8 * 8; }
/// Row stride of a sample-major tile of width w: a multiple of 4 floats (16-byte rows) whose
/// quotient by 4 is odd, so 8 consecutive rows start in 8 distinct groups of 4 banks.
constexpr int row_stride(int w) { return (pad4(w) / 4) % 2 == 1 ? pad4(w) : pad4(w) + 4; }

Net plan(const nn::MlpLayout& m) {
  GMI_REQUIRE(int(m.layers.size()) <= FusedUpdate::kMaxLayers, "FusedUpdate: too many layers");
  Net n;
  n.layers = int(m.layers.size());
  int w = 0, act = 0;
  n.act[0] = 0;
  n.ld[0] = row_stride(m.layers[0].in);
  act += n.ld[0];
  for (int l = 0; l < n.layers; ++l) {
    const auto& L = m.layers[l];
    n.in[l] = L.in;
    n.out[l] = L.out;
    n.in4[l] = pad4(L.in);
    n.out4[l] = pad4(L.out);
    n.w_src[l] = L.w;
    n.b_src[l] = L.b;
    n.tc[l] = n.in4[l] % 16 == 0 && n.out4[l] % 16 == 0;
    n.w[l] = w;  // 32-byte aligned blocks (tensor-core loads)
    w = pad8(w + n.in4[l] * n.out4[l]);
    n.b[l] = w;
    w = pad8(w + n.out4[l]);
    n.act[l + 1] = act;
    n.ld[l + 1] = row_stride(L.out);
    act += n.ld[l + 1];
  }
  n.acc_floats = w;
  for (int l = 0; l < n.layers; ++l) {
    if (!n.tc[l]) continue;
    n.fw[l] = w;
    w += n.in4[l] * n.out4[l];
    n.bw[l] = w;
    w += n.in4[l] * n.out4[l];
  }
  n.weight_floats = w;
  n.act_row_floats = act;
  n.offset = m.offset;
  n.num_params = m.num_params;
  return n;
}

/// Per-sample loss inputs gathered with the observations (so the loss step reads no device memory
/// and evaluates no permutation): advantage, old log-probability and action(s) for the actor,
/// return and old value for the critic.
KOKKOS_INLINE_FUNCTION constexpr int side_floats(int act_dim) { return 2 + act_dim; }

/// Scratch floats of one network's kernel: the tile's activations and loss inputs and (after the
/// last tile, over them) one row of loss sums per thread.  The dW/db accumulators live in device
/// memory, one block per team: in shared memory they halved the tile, and per-tile costs (weight
/// loads, barriers, the accumulators' own loads and stores) dominate the kernel.
std::size_t scratch_floats(const Net& n, int tile, int act_dim) {
  const std::size_t acts = std::size_t(n.act_row_floats + side_floats(act_dim)) * tile;
  const std::size_t sums = std::size_t(team_size()) * (5 + act_dim) * 2;  // doubles
  return std::max(acts, sums) + 8;  // + 8: 32-byte alignment
}

KOKKOS_FORCEINLINE_FUNCTION void load4(const float* p, float v[4]) { nn::load4(p, v[0], v[1], v[2], v[3]); }

/// db(o0 .. o0 + 3) += sum over the tile's S samples of dZ(s, o0 .. o0 + 3), in sample order.
KOKKOS_FORCEINLINE_FUNCTION void add_bias_gradient4(const float* dZ, int ldo, int S, int o0, float* accb) {
  float c[4] = {};
  for (int s = 0; s < S; ++s) {
    float d[4];
    load4(dZ + s * ldo + o0, d);
    for (int i = 0; i < 4; ++i) c[i] += d[i];
  }
  for (int i = 0; i < 4; ++i) accb[o0 + i] += c[i];
}

/// Y(s, o0 .. o0 + 3) = f(b + sum_k W(o, k) X(s, k)) for M samples per item (samples
/// sl, sl + S/M, ...: consecutive lanes read consecutive rows), 4 outputs per item.
template <int M, class A>
KOKKOS_FORCEINLINE_FUNCTION void forward_block(const Member& team, const float* X, int ldi, float* Y, int ldo,
                                               const float* Wl, const float* bl, int in4, int out4, int S,
                                               bool last) {
  const int SM = S / M;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (out4 / 4) * SM), [&](const int item) {
    const int sl = item % SM, o0 = 4 * (item / SM);
    float c[M][4], bias[4];
    load4(bl + o0, bias);
    for (int m = 0; m < M; ++m)
      for (int i = 0; i < 4; ++i) c[m][i] = bias[i];
    for (int k0 = 0; k0 < in4; k0 += 4) {
      float x[M][4];
      for (int m = 0; m < M; ++m) load4(X + (sl + m * SM) * ldi + k0, x[m]);
      for (int kk = 0; kk < 4; ++kk) {
        float w[4];
        load4(Wl + (k0 + kk) * out4 + o0, w);
        for (int m = 0; m < M; ++m)
          for (int i = 0; i < 4; ++i) c[m][i] += w[i] * x[m][kk];
      }
    }
    for (int m = 0; m < M; ++m) {
      if (!last)
        for (int i = 0; i < 4; ++i) c[m][i] = A::f(c[m][i]);
      nn::store4(Y + (sl + m * SM) * ldo + o0, c[m][0], c[m][1], c[m][2], c[m][3]);  // rows are 16-byte aligned
    }
  });
}

/// Sum of v over the G consecutive lanes of a warp that form this lane's group (G a power of two
/// up to 32, all of the group's lanes calling), added in a fixed tree; v itself where G == 1.
template <int G>
KOKKOS_FORCEINLINE_FUNCTION float group_sum(const Member& team, float v) {
#if defined(__CUDA_ARCH__)
  if (G > 1) {
    const int lane = team.team_rank() % 32;
    const unsigned mask = unsigned((std::uint64_t(1) << G) - 1) << (lane & ~(G - 1));
    for (int d = 1; d < G; d *= 2) v += __shfl_xor_sync(mask, v, d);
  }
#else
  (void)team;
#endif
  return v;
}

/// dW(k0 .. k0 + 3, o0 .. o0 + 3) += sum_s A(s, k) dZ(s, o) for every 4x4 block (KQ x OQ of
/// them) and db(o) += sum_s dZ(s, o): one block per G lanes, lane g summing samples g, g + G, ...
/// (G = 1 on host backends, whose teams have one thread).  Every accumulator has one owner, so
/// the sums are race-free and in a fixed order.
template <int G>
KOKKOS_FORCEINLINE_FUNCTION void weight_gradient(const Member& team, const float* dZ, int ldo, const float* Ap,
                                                 int ldi, int S, int KQ, int OQ, int out4, float* accW,
                                                 float* accb) {
#if defined(__CUDA_ARCH__)
  constexpr int g_max = G;
#else
  constexpr int g_max = 1;
#endif
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (KQ * OQ + OQ) * g_max), [&](const int it) {
    const int item = it / g_max, g = it % g_max;
    if (item < KQ * OQ) {
      const int k0 = 4 * (item % KQ), o0 = 4 * (item / KQ);
      float c[4][4] = {};
      for (int s = g; s < S; s += g_max) {
        float d[4], x[4];
        load4(dZ + s * ldo + o0, d);
        load4(Ap + s * ldi + k0, x);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) c[i][j] += d[i] * x[j];
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) c[i][j] = group_sum<g_max>(team, c[i][j]);
      if (g == 0)
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) accW[(k0 + j) * out4 + o0 + i] += c[i][j];
    } else {
      const int o0 = 4 * (item - KQ * OQ);
      float c[4] = {};
      for (int s = g; s < S; s += g_max) {
        float d[4];
        load4(dZ + s * ldo + o0, d);
        for (int i = 0; i < 4; ++i) c[i] += d[i];
      }
      for (int i = 0; i < 4; ++i) c[i] = group_sum<g_max>(team, c[i]);
      if (g == 0)
        for (int i = 0; i < 4; ++i) accb[o0 + i] += c[i];
    }
  });
}

/// Both networks' weights in the padded layout: per layer W(o, k) at w + k * out4 + o, then the
/// bias; zeros in the padding; after them (from acc_floats) the tensor-core layers' W and W^T
/// again, fragment-native (fw, bw).  One launch per minibatch (the weights change every minibatch).
struct PadWeights {
  Net nets[2];
  const float* params;
  float* padded;  // [actor block | critic block]
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int which = i < nets[0].weight_floats ? 0 : 1;
    const Net& n = nets[which];
    const int e = which == 0 ? i : i - nets[0].weight_floats;
    float v = 0.0f;
    for (int l = 0; l < n.layers; ++l) {
      if (n.tc[l] && e >= n.fw[l] && e < n.bw[l] + n.in4[l] * n.out4[l]) {
        // fragment-native copies: find (k, o) of entry q
        const bool fwd = e < n.bw[l];
        const int q = e - (fwd ? n.fw[l] : n.bw[l]);
        int kk = 0, nn_ = 0;
        nn::tc::bfrag_entry(fwd ? n.in4[l] : n.out4[l], q, kk, nn_);
        const int k = fwd ? kk : nn_, o = fwd ? nn_ : kk;
        if (k < n.in[l] && o < n.out[l]) v = params[n.w_src[l] + o + std::size_t(n.out[l]) * k];
      } else if (e >= n.w[l] && e < n.b[l]) {
        const int q = e - n.w[l], k = q / n.out4[l], o = q % n.out4[l];
        if (k < n.in[l] && o < n.out[l]) v = params[n.w_src[l] + o + std::size_t(n.out[l]) * k];
      } else if (e >= n.b[l] && e < n.b[l] + n.out4[l]) {
        const int o = e - n.b[l];
        if (o < n.out[l]) v = params[n.b_src[l] + o];
      }
    }
    padded[i] = v;
  }
};

/// One network's part of the minibatch gradient (see the header).  kPolicy: the actor with the
/// categorical or Gaussian head and the policy loss; otherwise the critic and the value loss.
template <class A, bool kPolicy>
struct NetGradient {
  Net net;
  FusedUpdateArgs a;
  int obs_dim, act_dim, num_actions;
  std::size_t log_std_offset;  // in params (Gaussian head)
  const float* W;       // this network's padded weights
  int S, tiles;
  std::size_t floats;   // scratch floats per team
  float* accs;          // [league][acc_stride]: dW/db accumulators, padded layout (fragment-native
                        // dW of the tensor-core layers: frag_acc)
  std::size_t acc_stride;
  float* partials;      // [league][P]
  std::size_t P;
  double* stat_rows;    // [league][5 + act_dim]

  /// Whether layer l's dW accumulators are fragment-native (its dW ran on tensor cores).
  KOKKOS_INLINE_FUNCTION bool frag_acc(int l) const {
#if GMI_TENSOR_CORES
    return net.tc[l] && S % 16 == 0;
#else
    (void)l;
    return false;
#endif
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int level = kScratchLevel;  // a copy: team_scratch takes a reference
    Scratch buf(team.team_scratch(level), floats);
    float* act = nn::in_shared(buf.data(), 32);
    const int SW = side_floats(act_dim);
    float* side = act + std::size_t(net.act_row_floats) * S;
    float* acc = accs + std::size_t(team.league_rank()) * acc_stride;
    const int L = net.layers;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, net.acc_floats), [&](const int e) { acc[e] = 0.0f; });
    double sums[5] = {0, 0, 0, 0, 0};  // this thread's samples: pg, v, entropy, approx_kl, clipfrac
    float dls[FusedUpdate::kMaxActDim] = {};
    const float invB = 1.0f / float(a.B);
    float adv_mean = 0.0f, adv_scale = 1.0f;
    if (kPolicy && a.norm_adv) {
      const double mean = a.adv_moments->s / a.B;
      const double var = a.B > 1 ? (a.adv_moments->s2 - a.adv_moments->s * mean) / (a.B - 1) : 0.0;
      adv_mean = float(mean);
      adv_scale = float(1.0 / (math::sqrt(math::max(var, 0.0)) + 1e-8));
    }
    const int SQ = S / 4;
#if GMI_TENSOR_CORES
    const int warp = team.team_rank() / 32, warps = team.team_size() / 32;
#endif

    for (int t = team.league_rank(); t < tiles; t += team.league_size()) {
      const int first = t * S;
      const int valid = math::min(S, a.B - first);
      // gather, one thread per sample: the (normalised) observation, zeros in padding and beyond
      // the minibatch, and the loss inputs
      {
        const int in4 = net.in4[0], ld = net.ld[0];
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, S), [&](const int s) {
          float* x = act + s * ld;
          float* sd = side + s * SW;
          if (s >= valid) {
            for (int k = 0; k < in4; ++k) x[k] = 0.0f;
            return;
          }
          const std::uint32_t j = a.perm(a.base + std::uint32_t(first + s));
          const float* o = a.obs + std::size_t(j) * obs_dim;
          for (int k = 0; k < in4; ++k) {
            float v = 0.0f;
            if (k < obs_dim) {
              v = o[k];
              if (a.obs_stats) v = normalize_feature(v, a.obs_stats, obs_dim, k, a.obs_clip);
            }
            x[k] = v;
          }
          if (kPolicy) {
            sd[0] = a.adv[j];
            sd[1] = a.logp[j];
            const int na = num_actions > 0 ? 1 : act_dim;
            for (int e = 0; e < na; ++e) sd[2 + e] = a.actions[std::size_t(j) * na + e];
          } else {
            sd[0] = a.returns[j];
            sd[1] = a.values[j];
          }
        });
      }
      team.team_barrier();
      // forward: Y(s, o) = f(b(o) + sum_k W(o, k) X(s, k)); a thread owns 4 outputs x 4 samples
      // (samples sl, sl + S/4, ...: consecutive lanes read consecutive rows)
      for (int l = 0; l < L; ++l) {
        const int in4 = net.in4[l], out4 = net.out4[l], ldi = net.ld[l], ldo = net.ld[l + 1];
        const float* X = act + net.act[l] * S;
        float* Y = act + net.act[l + 1] * S;
        const float* Wl = W + net.w[l];
        const float* bl = W + net.b[l];
        const bool last = l + 1 == L;
#if GMI_TENSOR_CORES
        if (net.tc[l] && S % 16 == 0) {  // 16x16 output tiles per warp; bias and f in registers
          nn::tc::gemm_rows_bfrag(
              warp, warps, S, out4, in4, X, ldi, W + net.fw[l], a.tf32, nn::tc::Zero(), [&](int s, int o, float v) {
                v += bl[o];
                Y[s * ldo + o] = last ? v : A::f(v);
              });
          team.team_barrier();
          continue;
        }
#endif
        // a narrow layer (the output layer: 4 padded outputs) would leave most of the team idle
        // with 4 samples per thread: there, one sample per thread
        if ((out4 / 4) * SQ >= team.team_size())
          forward_block<4, A>(team, X, ldi, Y, ldo, Wl, bl, in4, out4, S, last);
        else
          forward_block<1, A>(team, X, ldi, Y, ldo, Wl, bl, in4, out4, S, last);
        team.team_barrier();
      }
      // loss: dL/d(output) per sample replaces the output row (zeros beyond the minibatch)
      {
        float* Y = act + net.act[L] * S;
        const int ldy = net.ld[L], out4 = net.out4[L - 1];
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, S), [&](const int s) {
          float* y = Y + s * ldy;
          if (s >= valid) {
            for (int o = 0; o < out4; ++o) y[o] = 0.0f;
            return;
          }
          const float* sd = side + s * SW;
          if (kPolicy) {
            float A_ = sd[0];
            if (a.norm_adv) A_ = (A_ - adv_mean) * adv_scale;
            float logp, ent, lse = 0.0f;
            const float* log_std = a.params + log_std_offset;
            if (num_actions > 0) {
              lse = logsumexp(y, num_actions);
              logp = y[int(sd[2])] - lse;
              ent = categorical_entropy(y, num_actions, lse);
            } else {
              logp = gaussian_logp(sd + 2, y, log_std, act_dim);
              ent = gaussian_entropy(log_std, act_dim);
            }
            const float logratio = logp - sd[1];
            const float ratio = math::exp(logratio);
            const float pg1 = -A_ * ratio;
            const float pg2 = -A_ * math::clamp(ratio, 1.0f - a.clip_coef, 1.0f + a.clip_coef);
            const float g_logp = (pg1 >= pg2 ? -A_ : 0.0f) * ratio * invB;
            const float g_ent = -a.ent_coef * invB;
            if (num_actions > 0) {
              // dlogp/dy_o = [o == a] - p_o ;  dH/dy_o = -p_o (log p_o + H): in place, each
              // entry needs only its own logit
              const int ac = int(sd[2]);
              for (int o = 0; o < num_actions; ++o) {
                const float lpo = y[o] - lse;
                const float po = math::exp(lpo);
                y[o] = g_logp * ((o == ac ? 1.0f : 0.0f) - po) + g_ent * (-po * (lpo + ent));
              }
            } else {
              const float* ac = sd + 2;
              for (int o = 0; o < act_dim; ++o) {
                const float inv_std = math::exp(-log_std[o]);
                const float z = (ac[o] - y[o]) * inv_std;
                y[o] = g_logp * z * inv_std;
                dls[o] += g_logp * (z * z - 1.0f) + g_ent;
              }
            }
            for (int o = num_actions > 0 ? num_actions : act_dim; o < out4; ++o) y[o] = 0.0f;
            sums[0] += double(math::max(pg1, pg2));
            sums[2] += double(ent);
            sums[3] += double((ratio - 1.0f) - logratio);
            sums[4] += math::fabs(ratio - 1.0f) > a.clip_coef ? 1.0 : 0.0;
          } else {
            const float v = y[0], R = sd[0], vo = sd[1];
            float vl, dv;
            if (a.clip_vloss) {
              const float dvo = v - vo;
              const float vc = vo + math::clamp(dvo, -a.clip_coef, a.clip_coef);
              const float lu = (v - R) * (v - R), lc = (vc - R) * (vc - R);
              const bool inside = dvo > -a.clip_coef && dvo < a.clip_coef;
              vl = 0.5f * math::max(lu, lc);
              dv = lu >= lc ? (v - R) : (inside ? (vc - R) : 0.0f);
            } else {
              vl = 0.5f * (v - R) * (v - R);
              dv = v - R;
            }
            y[0] = a.vf_coef * dv * invB;
            for (int o = 1; o < out4; ++o) y[o] = 0.0f;
            sums[1] += double(vl);
          }
        });
      }
      team.team_barrier();
      // backward, last layer first
      for (int l = L - 1; l >= 0; --l) {
        const int in4 = net.in4[l], out4 = net.out4[l], ldi = net.ld[l], ldo = net.ld[l + 1];
        float* Ap = act + net.act[l] * S;        // layer input; becomes its dZ below
        const float* dZ = act + net.act[l + 1] * S;
        float* accW = acc + net.w[l];
        float* accb = acc + net.b[l];
        // dW(o, k) += sum_s dZ(s, o) A(s, k);  db(o) += sum_s dZ(s, o).  Every accumulator has
        // one owner, so the sums are race-free and in a fixed order.
        const int KQ = in4 / 4, OQ = out4 / 4;
#if GMI_TENSOR_CORES
        const bool tc = net.tc[l] && S % 16 == 0;
        if (tc) {  // dW on tensor cores, 16x16 accumulator tiles per warp (fragment-native); db below
          nn::tc::gemm_accumulate(
              warp, warps, in4, out4, S, [&](int k, int s) { return Ap[s * ldi + k]; },
              [&](int s, int o) { return dZ[s * ldo + o]; }, a.tf32, accW);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, OQ),
                               [&](const int q) { add_bias_gradient4(dZ, ldo, S, 4 * q, accb); });
        } else
#endif
        if (KQ * OQ >= team.team_size() / 8) {
          // narrow layers have few 4x4 blocks: G lanes share a block, each summing every G-th
          // sample, and add their sums in a fixed tree (warp shuffles)
          const int n = KQ * OQ + OQ;
          if (n * 4 <= team.team_size())
            weight_gradient<4>(team, dZ, ldo, Ap, ldi, S, KQ, OQ, out4, accW, accb);
          else if (n * 2 <= team.team_size())
            weight_gradient<2>(team, dZ, ldo, Ap, ldi, S, KQ, OQ, out4, accW, accb);
          else
            weight_gradient<1>(team, dZ, ldo, Ap, ldi, S, KQ, OQ, out4, accW, accb);
        } else {  // small layer: one accumulator per item, more items than threads
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in4 * out4 + out4), [&](const int item) {
            if (item < in4 * out4) {
              const int k = item % in4, o = item / in4;
              float c = 0.0f;
              for (int s = 0; s < S; ++s) c += dZ[s * ldo + o] * Ap[s * ldi + k];
              accW[k * out4 + o] += c;
            } else {
              const int o = item - in4 * out4;
              float c = 0.0f;
              for (int s = 0; s < S; ++s) c += dZ[s * ldo + o];
              accb[o] += c;
            }
          });
        }
        if (l == 0) break;
        team.team_barrier();
        // dZ_prev(s, k) = f'(A(s, k)) * sum_o W(o, k) dZ(s, o), in place of A
        const float* Wl = W + net.w[l];
#if GMI_TENSOR_CORES
        if (tc) {  // dZ_prev tiles on tensor cores, f' applied in registers
          nn::tc::gemm_rows_bfrag(
              warp, warps, S, in4, out4, dZ, ldo, W + net.bw[l], a.tf32, nn::tc::Zero(), [&](int s, int k, float v) {
                float* p = Ap + s * ldi + k;
                *p = v * A::df_from_y(*p);
              });
          team.team_barrier();
          continue;
        }
#endif
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, KQ * SQ), [&](const int item) {
          const int sl = item % SQ, k0 = 4 * (item / SQ);
          float c[4][4] = {};
          for (int o0 = 0; o0 < out4; o0 += 4) {
            float d[4][4];
            for (int m = 0; m < 4; ++m) load4(dZ + (sl + m * SQ) * ldo + o0, d[m]);
            for (int j = 0; j < 4; ++j) {
              float w[4];
              load4(Wl + (k0 + j) * out4 + o0, w);
              for (int m = 0; m < 4; ++m) c[m][j] += w[0] * d[m][0] + w[1] * d[m][1] + w[2] * d[m][2] + w[3] * d[m][3];
            }
          }
          for (int m = 0; m < 4; ++m) {
            float* p = Ap + (sl + m * SQ) * ldi + k0;
            float y[4];
            load4(p, y);
            nn::store4(p, c[m][0] * A::df_from_y(y[0]), c[m][1] * A::df_from_y(y[1]), c[m][2] * A::df_from_y(y[2]),
                       c[m][3] * A::df_from_y(y[3]));
          }
        });
        team.team_barrier();
      }
      team.team_barrier();
    }
    // this team's sums: gradients (unpadded, the network's range of the flat buffer) ...
    float* row = partials + std::size_t(team.league_rank()) * P + net.offset;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(net.num_params)), [&](const int p) {
      float v = 0.0f;
      const std::size_t e = net.offset + std::size_t(p);
      for (int l = 0; l < L; ++l) {
        const std::size_t nw = std::size_t(net.out[l]) * net.in[l];
        if (e >= net.w_src[l] && e < net.w_src[l] + nw) {
          const int q = int(e - net.w_src[l]), o = q % net.out[l], k = q / net.out[l];
          v = acc[net.w[l] + (frag_acc(l) ? nn::tc::cfrag_index(net.in4[l] / 16, k, o) : k * net.out4[l] + o)];
        } else if (e >= net.b_src[l] && e < net.b_src[l] + std::size_t(net.out[l])) {
          v = acc[net.b[l] + int(e - net.b_src[l])];
        }
      }
      row[p] = v;  // alignment gaps: 0
    });
    // ... and the loss sums, thread rows added in thread order
    const int ns = 5 + act_dim;
    double* own = reinterpret_cast<double*>(act) + std::size_t(team.team_rank()) * ns;
    team.team_barrier();
    for (int e = 0; e < 5; ++e) own[e] = sums[e];
    for (int e = 0; e < act_dim; ++e) own[5 + e] = kPolicy && num_actions == 0 ? double(dls[e]) : 0.0;
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ns), [&](const int e) {
      if (kPolicy == (e == 1)) return;  // the actor owns all but the value loss
      double v = 0;
      const double* rows = reinterpret_cast<const double*>(act);
      for (int th = 0; th < team.team_size(); ++th) v += rows[std::size_t(th) * ns + e];
      stat_rows[std::size_t(team.league_rank()) * ns + e] = v;
    });
  }
};

template <class A, bool kPolicy>
void launch(const ExecSpace& space, const char* name, const Net& net, const FusedUpdateArgs& a,
            const nn::ActorCriticLayout& layout, const float* W, int S, int league, std::size_t bytes,
            float* partials, double* stat_rows, float* accs, std::size_t acc_stride) {
  NetGradient<A, kPolicy> f;
  f.net = net;
  f.a = a;
  f.obs_dim = layout.obs_dim;
  f.act_dim = layout.act_dim;
  f.num_actions = layout.num_actions;
  f.log_std_offset = layout.log_std;
  f.W = W;
  f.S = S;
  f.tiles = (a.B + S - 1) / S;
  f.floats = bytes / sizeof(float);
  f.accs = accs;
  f.acc_stride = acc_stride;
  f.partials = partials;
  f.P = layout.num_params;
  f.stat_rows = stat_rows;
  // At most 96 registers a thread, so that registers allow as many teams as the shared memory
  // does (5 of 128 threads on an H100 at 64 samples a tile).  No light-weight hint here (see
  // gmi::LaunchHint): launched from constant memory these two kernels ran faster on the H100
  // (update 75.3 against 78.1 ms at 65536 CartPole envs, equal at 4096), and at about 2 ms each
  // the host's wait for the previous one costs nothing. A graph capture cannot contain that wait
  // (cudaErrorStreamCaptureUnsupported): captured, they take the hint.
  using Bounds = Kokkos::LaunchBounds<team_size(), kMinTeamsPerSm>;
  auto run = [&](auto policy) {
    Kokkos::parallel_for(name, policy.set_scratch_size(kScratchLevel, Kokkos::PerTeam(bytes)), f);
  };
  if (SideStream::capturing(space))
    run(Kokkos::TeamPolicy<ExecSpace, Bounds, LaunchHint>(space, league, team_size()));
  else
    run(Kokkos::TeamPolicy<ExecSpace, Bounds>(space, league, team_size()));
}

/// Teams that are resident at once (persistent teams: more would only queue).
int resident_teams(std::size_t bytes) {
#if defined(KOKKOS_ENABLE_CUDA)
  const cudaDeviceProp& p = Kokkos::Cuda().cuda_device_prop();
  const std::size_t per_block = bytes + p.reservedSharedMemPerBlock + (team_size() + 2) * sizeof(double) + 64;
  const int by_smem = int(p.sharedMemPerMultiprocessor / per_block);
  const int by_threads = p.maxThreadsPerMultiProcessor / team_size();
  // the launch bounds hold the registers to kMinTeamsPerSm teams (the kernels use all they allow)
  return std::max(1, std::min({by_smem, by_threads, kMinTeamsPerSm, p.maxBlocksPerMultiProcessor})) *
         p.multiProcessorCount;
#else
  (void)bytes;
  return std::max(1, ExecSpace().concurrency());
#endif
}

std::size_t scratch_limit() { return std::size_t(TeamPolicy::scratch_size_max(kScratchLevel)); }

/// Largest tile whose scratch fits both networks (0: none).
int pick_tile(const nn::ActorCriticLayout& l) {
  if (l.action_nvec.size() > 1 || l.shared()) return 0;  // MultiDiscrete heads, shared hidden layers: layered
  if (int(l.actor.layers.size()) > FusedUpdate::kMaxLayers || int(l.critic.layers.size()) > FusedUpdate::kMaxLayers)
    return 0;
  if (l.continuous() && l.act_dim > FusedUpdate::kMaxActDim) return 0;
  const Net a = plan(l.actor), c = plan(l.critic);
  for (int S : {64, 32, 16, 8})
    if (std::max(scratch_floats(a, S, l.act_dim), scratch_floats(c, S, l.act_dim)) * sizeof(float) <= scratch_limit())
      return S;
  return 0;
}

}  // namespace

void permuted_moments(const ExecSpace& space, const float* adv, const Permutation& perm,
                      std::uint32_t base, int B, Moments* out) {
  Kokkos::View<Moments, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(out);
  Kokkos::parallel_reduce(
      "gmi::rl::permuted_moments", Range(space, 0, B),
      KOKKOS_LAMBDA(const int i, Moments& m) {
        const double v = adv[perm(base + std::uint32_t(i))];
        m.s += v;
        m.s2 += v * v;
      },
      Kokkos::Sum<Moments, MemSpace>(r));
}

bool FusedUpdate::supported(const nn::ActorCriticLayout& layout) { return pick_tile(layout) > 0; }

FusedUpdate::FusedUpdate(const nn::ActorCriticLayout& layout, int max_B) : layout_(layout) {
  tile_ = pick_tile(layout);
  GMI_REQUIRE(tile_ > 0, "FusedUpdate: networks too wide for the fused kernels");
  actor_ = plan(layout.actor);
  critic_ = plan(layout.critic);
  scratch_bytes_ = std::max(scratch_floats(actor_, tile_, layout.act_dim), scratch_floats(critic_, tile_, layout.act_dim)) * sizeof(float);
  const int tiles = (std::max(max_B, 1) + tile_ - 1) / tile_;
  league_ = std::max(1, std::min(tiles, resident_teams(scratch_bytes_)));
  partials_ = View1<float>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::rl::fused_update::partials"),
                           std::size_t(league_) * layout.num_params);
  padded_ = View1<float>("gmi::rl::fused_update::padded_weights", std::size_t(actor_.weight_floats) + critic_.weight_floats);
  stat_rows_ = View1<double>("gmi::rl::fused_update::stat_rows", std::size_t(league_) * (5 + layout.act_dim));
  acc_stride_ = (std::size_t(std::max(actor_.acc_floats, critic_.acc_floats)) + 63) / 64 * 64;  // 256-byte rows
  accs_ = View1<float>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::rl::fused_update::accumulators"),
                       std::size_t(league_) * acc_stride_);
  groups_ = device_is_host() ? 1 : std::min(league_, 16);
  group_sums_ = View1<float>("gmi::rl::fused_update::group_sums", std::size_t(groups_) * layout.num_params);
  group_stats_ = View1<double>("gmi::rl::fused_update::group_stats", std::size_t(groups_) * (5 + layout.act_dim));
}

void FusedUpdate::gradients(const ExecSpace& space, const FusedUpdateArgs& a) const {
  GMI_REQUIRE(league_ > 0, "FusedUpdate: not planned");
  const std::size_t P = layout_.num_params;
  float* padded = padded_.data();  // View data is at least 16-byte aligned (vector loads)
  PadWeights pw;
  pw.nets[0] = actor_;
  pw.nets[1] = critic_;
  pw.params = a.params;
  pw.padded = padded;
  Kokkos::parallel_for("gmi::rl::fused_update_pad_weights", Range(space, 0, actor_.weight_floats + critic_.weight_floats), pw);
  nn::dispatch(layout_.actor.act, [&](auto act) {
    using A = decltype(act);
    launch<A, true>(space, "gmi::rl::fused_update_actor", actor_, a, layout_, padded, tile_, league_,
                    scratch_bytes_, partials_.data(), stat_rows_.data(), accs_.data(), acc_stride_);
    launch<A, false>(space, "gmi::rl::fused_update_critic", critic_, a, layout_, padded + actor_.weight_floats,
                     tile_, league_, scratch_bytes_, partials_.data(), stat_rows_.data(), accs_.data(), acc_stride_);
  });
  // Add the teams' rows in a fixed order, in two passes so that enough threads share the work
  // (one thread per parameter summing every row left most of the GPU idle, about 60 us per
  // minibatch): group g adds rows g, g + G, ... in order, then each entry adds the G group sums
  // in order.
  const int league = league_, ns = 5 + layout_.act_dim, G = groups_;
  const bool gaussian = layout_.continuous();
  const std::size_t ls = layout_.log_std;
  const int ad = layout_.act_dim;
  const float* rows = partials_.data();
  const double* srows = stat_rows_.data();
  float* gsum = group_sums_.data();
  double* gstat = group_stats_.data();
  const int width = int(P) + ns;
  Kokkos::parallel_for(
      "gmi::rl::fused_update_reduce_groups", Range(space, 0, G * width), KOKKOS_LAMBDA(const int i) {
        const int g = i / width, p = i % width;
        if (p < int(P)) {
          float v = 0.0f;
          for (int t = g; t < league; t += G) v += rows[std::size_t(t) * P + p];
          gsum[std::size_t(g) * P + p] = v;
        } else {
          const int e = p - int(P);
          double v = 0;
          for (int t = g; t < league; t += G) v += srows[std::size_t(t) * ns + e];
          gstat[std::size_t(g) * ns + e] = v;
        }
      });
  float* grads = a.grads;
  double* stats = reinterpret_cast<double*>(a.stats);
  static_assert(sizeof(LossStats) == 5 * sizeof(double), "LossStats: five sums");
  Kokkos::parallel_for(
      "gmi::rl::fused_update_reduce", Range(space, 0, int(P) + 5), KOKKOS_LAMBDA(const int p) {
        if (p < int(P)) {
          if (gaussian && std::size_t(p) >= ls && std::size_t(p) < ls + std::size_t(ad)) {
            double v = 0;
            for (int g = 0; g < G; ++g) v += gstat[std::size_t(g) * ns + 5 + (p - int(ls))];
            grads[p] = float(v);
          } else {
            float v = 0.0f;
            for (int g = 0; g < G; ++g) v += gsum[std::size_t(g) * P + p];
            grads[p] = v;
          }
        } else {
          const int e = p - int(P);
          double v = 0;
          for (int g = 0; g < G; ++g) v += gstat[std::size_t(g) * ns + e];
          stats[e] = v;
        }
      });
}

}  // namespace gmi::rl
