#include "kernels/rl/fused_update.hpp"

#include <algorithm>

#include "kernels/nn/activation.hpp"

namespace gmi::rl {
namespace {

std::size_t forward_floats(const nn::ActorCriticLayout& l, int tile) {
  const int w = std::max(l.actor.max_width(), l.critic.max_width());
  return (std::size_t(l.obs_dim) + 2 * std::size_t(w)) * tile;
}

/// Largest forward tile that fits (0: none).
int forward_tile(const nn::ActorCriticLayout& l) {
  for (int tile : {64, 32, 16})
    if (forward_floats(l, tile) * sizeof(float) <= nn::fused_scratch_limit()) return tile;
  return 0;
}

/// Scratch floats of the backward kernel: parameter accumulators and three padded tiles.
std::size_t backward_floats(const nn::MlpLayout& net, int tile) {
  return net.num_params + 3 * std::size_t(net.max_width()) * (tile + 1);
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
            if (a.obs_stats)
              v = math::clamp(float((v - a.obs_stats[k]) / math::sqrt(a.obs_stats[od + k] + 1e-8)),
                              -a.obs_clip, a.obs_clip);
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
void backward(const ExecSpace& space, const FusedNet net, const int tile, const FusedBackwardArgs a) {
  const int ld = tile + 1;  // padding: lanes reading the same sample of consecutive features
  const std::size_t width = std::size_t(net.max_width);
  const std::size_t P = net.num_params;
  const std::size_t floats = P + 3 * width * ld;
  const int tiles = (a.B + tile - 1) / tile;
  // Persistent teams: enough to fill the device, few enough that the final atomics are cheap.
  const int league = std::max(1, std::min(tiles, ExecSpace().concurrency() / 512));
  nn::TeamPolicy policy(space, league, nn::fused_team_size());
  Kokkos::parallel_for(
      "gmi::rl::fused_backward", policy.set_scratch_size(0, Kokkos::PerTeam(floats * sizeof(float))),
      KOKKOS_LAMBDA(const Member& team) {
        nn::ScratchFloats buf(team.team_scratch(0), floats);
        float* acc = buf.data();  // per layer: dW entries (o, k) at o * in + k, then db
        float* dz = acc + P;
        float* dzn = dz + width * ld;
        float* ap = dzn + width * ld;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(P)), [&](const int e) { acc[e] = 0.0f; });
        const int L = net.num_layers;
        const int out_L = net.out[L - 1];
        for (int t = team.league_rank(); t < tiles; t += team.league_size()) {
          const int first = t * tile;
          const int valid = math::min(tile, a.B - first);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, out_L * tile), [&](const int item) {
            const int s = item % tile, o = item / tile;
            dz[o * ld + s] = s < valid ? a.dY[(std::size_t(first) + s) * out_L + o] : 0.0f;
          });
          std::size_t acc_off = P;  // accumulators of layer l start at acc_off (walking down)
          float* cur = dz;
          float* nxt = dzn;
          for (int l = L - 1; l >= 0; --l) {
            const int in = net.in[l], out = net.out[l];
            acc_off -= std::size_t(out) * in + out;
            const float* src = l == 0 ? a.x : a.hidden[l - 1];
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in * tile), [&](const int item) {
              const int s = item % tile, k = item / tile;
              ap[k * ld + s] = s < valid ? src[std::size_t(k) * a.B + first + s] : 0.0f;
            });
            team.team_barrier();
            // dW(o, k) += sum_s dZ(o, s) A(k, s);  db(o) += sum_s dZ(o, s)
            float* accl = acc + acc_off;
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, out * in + out), [&](const int e) {
              float sum = 0.0f;
              if (e < out * in) {
                const int o = e / in, k = e % in;
                for (int s = 0; s < tile; ++s) sum += cur[o * ld + s] * ap[k * ld + s];
              } else {
                const int o = e - out * in;
                for (int s = 0; s < tile; ++s) sum += cur[o * ld + s];
              }
              accl[e] += sum;
            });
            if (l > 0) {
              // dZ_{l-1}(k, s) = f'(A_{l-1}(k, s)) * sum_o W(o, k) dZ(o, s)
              const float* W = a.params + net.w[l];
              Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in * tile), [&](const int item) {
                const int s = item % tile, k = item / tile;
                float sum = 0.0f;
                for (int o = 0; o < out; ++o) sum += W[o + std::size_t(out) * k] * cur[o * ld + s];
                nxt[k * ld + s] = sum * A::df_from_y(ap[k * ld + s]);
              });
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
    detail::forward<decltype(act)>(space, actor, critic, forward_tile(layout), width, a);
  });
}

void fused_backward(const ExecSpace& space, const nn::MlpLayout& net, const FusedBackwardArgs& a) {
  const int tile = backward_tile(net);
  GMI_REQUIRE(tile > 0, "fused_backward: network too wide");
  const nn::FusedNet n(net);
  nn::dispatch(net.act, [&](auto act) { detail::backward<decltype(act)>(space, n, tile, a); });
}

}  // namespace gmi::rl
