#include "kernels/rl/fused_act.hpp"

#include <algorithm>
#include <cstdint>

#include "kernels/core/error.hpp"
#include "kernels/nn/activation.hpp"
#include "kernels/nn/fused_mlp.hpp"
#include "kernels/rl/normalizer.hpp"

namespace gmi::rl {

namespace {
/// Floats of the largest layer's weights and bias (the staging buffer), rounded up to 16 bytes.
std::size_t staging_floats(const nn::ActorCriticLayout& l) {
  const int a = nn::FusedNet(l.actor).max_layer_floats, c = nn::FusedNet(l.critic).max_layer_floats;
  return (std::size_t(std::max(a, c)) + 3) / 4 * 4;
}

/// Leading dimension of the feature-major tiles: at least the tile, and 8 more than a multiple of
/// 32 floats so that tensor-core operand loads hit distinct banks (see team_layer).
int tile_ld(int tile) { return (tile + 23) / 32 * 32 + 8; }

/// Weight staging buffer, input tile (obs_dim rows) and two ping-pong buffers of the widest layer.
std::size_t scratch_floats(const nn::ActorCriticLayout& l, int tile, std::size_t staging) {
  const int w = std::max(l.actor.max_width(), l.critic.max_width());
  return staging + 4 + (std::size_t(l.obs_dim) + 2 * std::size_t(w)) * tile_ld(tile);
}
std::size_t scratch_floats(const nn::ActorCriticLayout& l, int tile) { return scratch_floats(l, tile, staging_floats(l)); }

/// Layer l's offset in the fragment buffer (actor's layers, then the critic's), -1 for layers
/// that do not run on tensor cores.
struct FragOffsets {
  int actor[nn::FusedNet::kMaxLayers], critic[nn::FusedNet::kMaxLayers];
  std::size_t floats = 0;
  explicit FragOffsets(const nn::ActorCriticLayout& l) {
    const auto place = [&](const nn::MlpLayout& m, int* off) {
      for (int i = 0; i < nn::FusedNet::kMaxLayers; ++i) off[i] = -1;
      for (std::size_t i = 0; i < m.layers.size() && int(i) < nn::FusedNet::kMaxLayers; ++i)
        if (nn::tensor_core_layer(m.layers[i].in, m.layers[i].out)) {
          off[i] = int(floats);
          floats += std::size_t(m.layers[i].in) * m.layers[i].out;
        }
    };
    place(l.actor, actor);
    place(l.critic, critic);
  }
};

/// Staging floats with fragment copies: the largest layer that still stages its weights.
std::size_t small_staging_floats(const nn::ActorCriticLayout& l) {
  std::size_t m = 0;
  for (const auto* net : {&l.actor, &l.critic})
    for (const auto& L : net->layers)
      if (!nn::tensor_core_layer(L.in, L.out)) m = std::max(m, std::size_t(nn::staged_floats(L.in, L.out)));
  return (m + 3) / 4 * 4;
}
}  // namespace

std::size_t fused_act_fragment_floats(const nn::ActorCriticLayout& layout) { return FragOffsets(layout).floats; }

bool fused_act_fragments_help() {
#if defined(KOKKOS_ENABLE_CUDA)
  return Kokkos::Cuda().cuda_device_prop().major >= 8;  // the kernels' tensor-core layers (sm_80+)
#else
  return false;
#endif
}

void fused_act_prepare(const ExecSpace& space, const nn::ActorCriticLayout& layout, const float* params, float* frag) {
  const FragOffsets fo(layout);
  // one launch per tensor-core layer: W(o, k), column-major out x in, to its fragment-native place
  const auto copy = [&](const nn::MlpLayout& m, const int* off) {
    for (std::size_t l = 0; l < m.layers.size() && int(l) < nn::FusedNet::kMaxLayers; ++l) {
      if (off[l] < 0) continue;
      const int in = m.layers[l].in, out = m.layers[l].out;
      const float* W = params + m.layers[l].w;
      float* dst = frag + off[l];
      Kokkos::parallel_for(
          "gmi::rl::fused_act_prepare", Range(space, 0, in * out), KOKKOS_LAMBDA(const int q) {
            int k = 0, o = 0;
            nn::tc::bfrag_entry(in, q, k, o);
            dst[q] = W[o + std::size_t(out) * k];
          });
    }
  };
  copy(layout.actor, fo.actor);
  copy(layout.critic, fo.critic);
}

int fused_act_tile(const nn::ActorCriticLayout& l, long long n) {
  if (l.action_nvec.size() > 1 || l.shared()) return 0;  // MultiDiscrete heads, shared hidden layers: layered
  if (int(l.actor.layers.size()) > nn::FusedNet::kMaxLayers ||
      int(l.critic.layers.size()) > nn::FusedNet::kMaxLayers)
    return 0;
  // 8-sample tiles only where nothing larger fits: 16 is the smallest tile the tensor-core layers
  // take, and at 4096 envs 256 teams of 16 beat 512 teams of 8 (H100: 4.25 vs 4.32 ms per rollout)
  const auto floats = [&](int t) { return scratch_floats(l, t); };
  const int tile = nn::pick_tile(n, {64, 32, 16}, floats);
  return tile > 0 ? tile : nn::pick_tile(n, {8}, floats);
}

namespace detail {

using nn::FusedNet;
using nn::TeamMember;
using Team = nn::TeamPolicy;
using Member = nn::TeamMember;
using Scratch = nn::ScratchFloats;
using nn::team_mlp;

template <class A>
void launch(const ExecSpace& space, const FusedNet actor, const FusedNet critic, const int tile,
            const int ld, const std::size_t width, const std::size_t staging, const std::size_t floats,
            const FusedActArgs a, const FragOffsets fo) {
  const int league = (a.N + tile - 1) / tile;
  const std::size_t od = std::size_t(a.obs_dim);
  const std::size_t bytes = floats * sizeof(float);
  Team policy(space, league, nn::fused_team_size());
  Kokkos::parallel_for(
      "gmi::rl::fused_act", policy.set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const Member& team) {
        Scratch buf(team.team_scratch(0), floats);
        float* wbuf = nn::in_shared(buf.data(), 16);
        float* x = wbuf + staging;
        float* b0 = x + od * ld;
        float* b1 = b0 + width * ld;
        const int first = team.league_rank() * tile;
        // observations (normalised when statistics are given); padding rows are zeros
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(od) * tile), [&](const int item) {
          const int s = item % tile, k = item / tile, i = first + s;
          float v = 0.0f;
          if (i < a.N) {
            v = a.obs[std::size_t(i) * od + k];
            if (a.obs_stats) v = normalize_feature(v, a.obs_stats, int(od), k, a.obs_clip);
          }
          x[k * ld + s] = v;
        });
        team.team_barrier();
        const float* y =
            team_mlp<A>(team, actor, a.params, x, b0, b1, tile, ld, wbuf, nullptr, 0, 0, 0, a.tf32, a.frag, fo.actor);
        // sample: one thread per env of the tile
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile), [&](const int s) {
          const int i = first + s;
          if (i >= a.N) return;
          const std::uint64_t hi = rng::tag(rng::kAction, a.env_offset + i);
          const std::uint64_t step = a.step_base ? *a.step_base + a.step : a.step;
          if (a.num_actions > 0) {
            const int n = a.num_actions;
            float m = y[s];
            for (int j = 1; j < n; ++j) m = math::max(m, y[j * ld + s]);
            float sum = 0.0f;
            for (int j = 0; j < n; ++j) sum += math::exp(y[j * ld + s] - m);
            const float lse = m + math::log(sum);
            int act = n - 1;
            if (a.deterministic) {
              act = 0;
              for (int j = 1; j < n; ++j)
                if (y[j * ld + s] > y[act * ld + s]) act = j;
            } else {
              const auto bits = rng::philox(a.seed, step << 8, hi);
              const float u = rng::uniform01(bits.v[0]);
              float c = 0.0f;
              for (int j = 0; j < n - 1; ++j) {
                c += math::exp(y[j * ld + s] - lse);
                if (u <= c) {
                  act = j;
                  break;
                }
              }
            }
            a.actions[i] = float(act);
            if (a.env_actions != a.actions) a.env_actions[i] = float(act);
            a.logp[i] = y[act * ld + s] - lse;
          } else {
            const int d = a.act_dim;
            const float* log_std = a.params + a.log_std;
            float lp = 0.0f;
            for (int j0 = 0; j0 < d; j0 += 4) {
              const auto bits = rng::philox(a.seed, (step << 8) | std::uint64_t(j0 / 4), hi);
              float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
              if (!a.deterministic) {
                rng::normal2(bits.v[0], bits.v[1], z[0], z[1]);
                rng::normal2(bits.v[2], bits.v[3], z[2], z[3]);
              }
              for (int k = 0; k < 4 && j0 + k < d; ++k) {
                const int j = j0 + k;
                const float act = y[j * ld + s] + math::exp(log_std[j]) * z[k];
                a.actions[std::size_t(i) * d + j] = act;
                a.env_actions[std::size_t(i) * d + j] =
                    a.clip_actions ? math::clamp(act, a.act_low[j], a.act_high[j]) : act;
                lp += -0.5f * z[k] * z[k] - log_std[j] - float(kHalfLog2Pi);
              }
            }
            a.logp[i] = lp;
          }
        });
        team.team_barrier();  // the actor's output buffer is reused by the critic
        const float* v =
            team_mlp<A>(team, critic, a.params, x, b0, b1, tile, ld, wbuf, nullptr, 0, 0, 0, a.tf32, a.frag, fo.critic);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile), [&](const int s) {
          if (first + s < a.N) a.values[first + s] = v[s];
        });
      });
}

}  // namespace detail

void fused_act(const ExecSpace& space, const nn::ActorCriticLayout& layout, const FusedActArgs& a) {
  const nn::FusedNet actor(layout.actor), critic(layout.critic);
  const std::size_t width = std::size_t(std::max(layout.actor.max_width(), layout.critic.max_width()));
  const FragOffsets fo(layout);
  if (a.frag && fo.floats > 0) {
    // Fragment copies: only the small layers stage their weights, so a team needs far less
    // shared memory and more teams fit; 32-sample tiles at most (more teams, shorter last wave).
    const std::size_t staging = small_staging_floats(layout);
    const int tile = nn::pick_tile(a.N, {32, 16}, [&](int t) { return scratch_floats(layout, t, staging); });
    if (tile % 16 == 0 && tile > 0) {
      nn::dispatch(layout.actor.act, [&](auto act) {
        detail::launch<decltype(act)>(space, actor, critic, tile, tile_ld(tile), width, staging,
                                      scratch_floats(layout, tile, staging), a, fo);
      });
      return;
    }
  }
  const int tile = fused_act_tile(layout, a.N);
  GMI_REQUIRE(tile > 0, "fused_act: networks too wide for the fused kernel");
  FusedActArgs b = a;
  b.frag = nullptr;
  nn::dispatch(layout.actor.act, [&](auto act) {
    detail::launch<decltype(act)>(space, actor, critic, tile, tile_ld(tile), width, staging_floats(layout),
                                  scratch_floats(layout, tile), b, fo);
  });
}

}  // namespace gmi::rl
