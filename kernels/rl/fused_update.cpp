#include "kernels/rl/fused_update.hpp"

#include <algorithm>

#include "kernels/nn/activation.hpp"
#include "kernels/rl/normalizer.hpp"

namespace gmi::rl {
namespace {

std::size_t forward_floats(const nn::ActorCriticLayout& l, int tile) {
  const int w = std::max(l.actor.max_width(), l.critic.max_width());
  return (std::size_t(l.obs_dim) + 2 * std::size_t(w)) * tile;
}

/// Forward tile for a minibatch of n samples (0: none fits).
int forward_tile(const nn::ActorCriticLayout& l, long long n = 1 << 30) {
  return nn::pick_tile(n, {64, 32, 16}, [&](int t) { return forward_floats(l, t); });
}

/// Parameters of an MLP without alignment padding (the backward kernel's accumulators).
std::size_t compact_params(const nn::MlpLayout& net) {
  std::size_t n = 0;
  for (const auto& l : net.layers) n += std::size_t(l.out) * l.in + l.out;
  return n;
}

/// Leading dimension of the backward kernel's sample-major tiles: a multiple of 4 (vector loads)
/// that is 4 mod 32, so that 8 consecutive samples' vectors fall into distinct bank groups.
int backward_ld(const nn::MlpLayout& net) {
  int ld = (net.max_width() + 3) / 4 * 4;
  while (ld % 32 != 4) ld += 4;
  return ld;
}

/// Scratch floats of the backward kernel: parameter accumulators and three tiles.
std::size_t backward_floats(const nn::MlpLayout& net, int tile) {
  return (compact_params(net) + 3) / 4 * 4 + 3 * std::size_t(backward_ld(net)) * tile + 4;
}

/// Largest backward tile that fits (0: none).
int backward_tile(const nn::MlpLayout& net) {
  if (int(net.layers.size()) > nn::FusedNet::kMaxLayers) return 0;
  for (int tile : {32, 16, 8})
    if (backward_floats(net, tile) * sizeof(float) <= nn::fused_scratch_limit()) return tile;
  return 0;
}

}  // namespace

bool fused_update_supported(const nn::ActorCriticLayout& l) {
  return int(l.actor.layers.size()) <= nn::FusedNet::kMaxLayers &&
         int(l.critic.layers.size()) <= nn::FusedNet::kMaxLayers &&
         forward_tile(l) > 0 &&
         backward_tile(l.actor) > 0 && backward_tile(l.critic) > 0;
}

namespace detail {

using nn::FusedNet;
using Member = nn::TeamMember;

template <class A>
void forward(const ExecSpace& space, const FusedNet actor, const FusedNet critic, const int tile,
             const std::size_t width, const FusedForwardArgs a) {
  const std::size_t od = std::size_t(a.obs_dim), ad = std::size_t(a.act_dim);
  const std::size_t floats = (od + 2 * width) * tile;
  const int league = (a.B + tile - 1) / tile;
  const int aout = actor.out[actor.num_layers - 1];
  nn::TeamPolicy policy(space, league, nn::fused_team_size());
  Kokkos::parallel_for(
      "gmi::rl::fused_forward_train",
      policy.set_scratch_size(0, Kokkos::PerTeam(floats * sizeof(float))),
      KOKKOS_LAMBDA(const Member& team) {
        nn::ScratchFloats buf(team.team_scratch(0), floats);
        float* x = buf.data();
        float* b0 = x + od * tile;
        float* b1 = b0 + width * tile;
        const int first = team.league_rank() * tile;
        const int valid = math::min(tile, a.B - first);
        // gather: observations (normalised) into scratch and x, the sample's stored data
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(od) * tile), [&](const int item) {
          const int s = item % tile, k = item / tile;
          float v = 0.0f;
          if (s < valid) {
            const std::uint32_t j = a.perm(a.base + std::uint32_t(first + s));
            v = a.obs[std::size_t(j) * od + k];
            if (a.obs_stats) v = normalize_feature(v, a.obs_stats, int(od), k, a.obs_clip);
            a.x[std::size_t(k) * a.B + first + s] = v;
          }
          x[k * tile + s] = v;
        });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, valid), [&](const int s) {
          const std::size_t i = std::size_t(first) + s;
          const std::uint32_t j = a.perm(a.base + std::uint32_t(i));
          for (std::size_t d = 0; d < ad; ++d) a.mb_actions[i * ad + d] = a.actions[j * ad + d];
          a.mb_logp[i] = a.logp[j];
          a.mb_adv[i] = a.adv[j];
          a.mb_returns[i] = a.returns[j];
          a.mb_values[i] = a.values[j];
        });
        team.team_barrier();
        const float* y = nn::team_mlp<A>(team, actor, a.params, x, b0, b1, tile, tile,
                                         a.actor_hidden, std::size_t(a.B), std::size_t(first), valid);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, aout * tile), [&](const int item) {
          const int s = item % tile, o = item / tile;
          if (s < valid) a.actor_out[(std::size_t(first) + s) * aout + o] = y[o * tile + s];
        });
        team.team_barrier();
        const float* v = nn::team_mlp<A>(team, critic, a.params, x, b0, b1, tile, tile,
                                         a.critic_hidden, std::size_t(a.B), std::size_t(first), valid);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, valid), [&](const int s) {
          a.value_out[std::size_t(first) + s] = v[s];
        });
      });
}

template <class A>
void backward(const ExecSpace& space, const FusedNet net, const int tile, const int ld,
              const std::size_t P, const FusedBackwardArgs a) {
  // Tiles are sample-major: value (sample s, feature k) at s * ld + k, 16-byte aligned for vector
  // loads (the scratch base is aligned by hand: Kokkos guarantees less).
  const std::size_t P4 = (P + 3) / 4 * 4;
  const std::size_t floats = P4 + 3 * std::size_t(ld) * tile + 4;
  const int tiles = (a.B + tile - 1) / tile;
  // Persistent teams: enough to fill the device, few enough that the final atomics are cheap.
  const int league = std::max(1, std::min(tiles, ExecSpace().concurrency() / 512));
  nn::TeamPolicy policy(space, league, nn::fused_team_size());
  Kokkos::parallel_for(
      "gmi::rl::fused_backward", policy.set_scratch_size(0, Kokkos::PerTeam(floats * sizeof(float))),
      KOKKOS_LAMBDA(const Member& team) {
        nn::ScratchFloats buf(team.team_scratch(0), floats);
        float* acc = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(buf.data()) + 15) &
                                              ~std::uintptr_t(15));
        // per layer: dW(o, k) at o * in + k, then db
        float* dz = acc + P4;
        float* dzn = dz + std::size_t(ld) * tile;
        float* ap = dzn + std::size_t(ld) * tile;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(P)), [&](const int e) { acc[e] = 0.0f; });
        const int L = net.num_layers;
        const int out_L = net.out[L - 1];
        for (int t = team.league_rank(); t < tiles; t += team.league_size()) {
          const int first = t * tile;
          const int valid = math::min(tile, a.B - first);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, out_L * tile), [&](const int item) {
            const int o = item % out_L, s = item / out_L;
            dz[s * ld + o] = s < valid ? a.dY[(std::size_t(first) + s) * out_L + o] : 0.0f;
          });
          std::size_t acc_off = P;  // accumulators of layer l start at acc_off (walking down)
          float* cur = dz;
          float* nxt = dzn;
          for (int l = L - 1; l >= 0; --l) {
            const int in = net.in[l], out = net.out[l];
            acc_off -= std::size_t(out) * in + out;
            const float* src = l == 0 ? a.x : a.hidden[l - 1];
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in * tile), [&](const int item) {
              const int s = item % tile, k = item / tile;  // coalesced reads of feature-major src
              ap[s * ld + k] = s < valid ? src[std::size_t(k) * a.B + first + s] : 0.0f;
            });
            team.team_barrier();
            // dW(o, k) += sum_s dZ(s, o) A(s, k);  db(o) += sum_s dZ(s, o)
            float* accl = acc + acc_off;
            if ((out & 3) == 0 && (in & 3) == 0) {
              const int kq = in / 4, blocks = (out / 4) * kq;
              Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks + out), [&](const int e) {
                if (e < blocks) {  // a 4 x 4 block: 16 FMAs per two vector loads
                  const int o0 = 4 * (e / kq), k0 = 4 * (e % kq);
                  float c[4][4] = {};
                  for (int s = 0; s < tile; ++s) {
                    float d[4], x[4];
                    nn::load4(cur + s * ld + o0, d[0], d[1], d[2], d[3]);
                    nn::load4(ap + s * ld + k0, x[0], x[1], x[2], x[3]);
                    for (int i = 0; i < 4; ++i)
                      for (int j = 0; j < 4; ++j) c[i][j] += d[i] * x[j];
                  }
                  for (int i = 0; i < 4; ++i)
                    for (int j = 0; j < 4; ++j) accl[(o0 + i) * in + k0 + j] += c[i][j];
                } else {
                  const int o = e - blocks;
                  float sum = 0.0f;
                  for (int s = 0; s < tile; ++s) sum += cur[s * ld + o];
                  accl[out * in + o] += sum;
                }
              });
            } else {
              Kokkos::parallel_for(Kokkos::TeamThreadRange(team, out * in + out), [&](const int e) {
                float sum = 0.0f;
                if (e < out * in) {
                  const int o = e / in, k = e % in;
                  for (int s = 0; s < tile; ++s) sum += cur[s * ld + o] * ap[s * ld + k];
                } else {
                  const int o = e - out * in;
                  for (int s = 0; s < tile; ++s) sum += cur[s * ld + o];
                }
                accl[e] += sum;
              });
            }
            if (l > 0) {
              // dZ_{l-1}(s, k) = f'(A_{l-1}(s, k)) * sum_o W(o, k) dZ(s, o)
              const float* W = a.params + net.w[l];
              if ((out & 3) == 0 && (in & 3) == 0 && nn::aligned16(W)) {
                // four k of one sample per thread: per quad of o, four vector loads of W columns
                // (warp-broadcast) and one of dZ give 16 FMAs
                const int kq = in / 4;
                Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kq * tile), [&](const int item) {
                  const int s = item % tile, k0 = 4 * (item / tile);
                  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                  for (int o0 = 0; o0 < out; o0 += 4) {
                    float d[4];
                    nn::load4(cur + s * ld + o0, d[0], d[1], d[2], d[3]);
                    for (int j = 0; j < 4; ++j) {
                      float w[4];
                      nn::load4(W + o0 + std::size_t(out) * (k0 + j), w[0], w[1], w[2], w[3]);
                      sum[j] += w[0] * d[0] + w[1] * d[1] + w[2] * d[2] + w[3] * d[3];
                    }
                  }
                  for (int j = 0; j < 4; ++j)
                    nxt[s * ld + k0 + j] = sum[j] * A::df_from_y(ap[s * ld + k0 + j]);
                });
              } else {
                Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in * tile), [&](const int item) {
                  const int k = item % in, s = item / in;
                  float sum = 0.0f;
                  for (int o = 0; o < out; ++o) sum += W[o + std::size_t(out) * k] * cur[s * ld + o];
                  nxt[s * ld + k] = sum * A::df_from_y(ap[s * ld + k]);
                });
              }
            }
            team.team_barrier();
            float* tmp = cur;
            cur = nxt;
            nxt = tmp;
          }
        }
        team.team_barrier();
        // flush: one atomic per parameter per team
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(P)), [&](const int e0) {
          int e = e0;
          for (int l = 0; l < L; ++l) {
            const int in = net.in[l], out = net.out[l];
            if (e < out * in) {
              const int o = e / in, k = e % in;
              Kokkos::atomic_add(&a.grads[net.w[l] + o + std::size_t(out) * k], acc[e0]);
              return;
            }
            e -= out * in;
            if (e < out) {
              Kokkos::atomic_add(&a.grads[net.b[l] + e], acc[e0]);
              return;
            }
            e -= out;
          }
        });
      });
}

}  // namespace detail

void fused_forward_train(const ExecSpace& space, const nn::ActorCriticLayout& layout,
                         const FusedForwardArgs& a) {
  GMI_REQUIRE(fused_update_supported(layout), "fused_forward_train: networks too wide");
  const nn::FusedNet actor(layout.actor), critic(layout.critic);
  const std::size_t width = std::size_t(std::max(layout.actor.max_width(), layout.critic.max_width()));
  nn::dispatch(layout.actor.act, [&](auto act) {
    detail::forward<decltype(act)>(space, actor, critic, forward_tile(layout, a.B), width, a);
  });
}

void fused_backward(const ExecSpace& space, const nn::MlpLayout& net, const FusedBackwardArgs& a) {
  const int tile = backward_tile(net);
  GMI_REQUIRE(tile > 0, "fused_backward: network too wide");
  const nn::FusedNet n(net);
  nn::dispatch(net.act, [&](auto act) {
    detail::backward<decltype(act)>(space, n, tile, backward_ld(net), compact_params(net), a);
  });
}

}  // namespace gmi::rl
