#pragma once
/// \file
/// \brief SyntheticHumanoid-v0: Humanoid-v5's sizes (376 observations, 17 actions in [-0.4, 0.4],
/// 1000-step episodes) with trivial dynamics, on the device.  It exists to benchmark policies of
/// those sizes at env counts a host simulator cannot reach (`gmi_drl bench`, issue 20's larger
/// policies); it is not a task anyone needs to solve.  Each env holds one 64-bit key: the
/// observation is 376 hashes of it mapped to [-1, 1), the reward is -mean_j (a_j - 0.4 o_j)^2 over
/// the first 17 components (so a policy can learn it), and each step advances the key (an LCG).
/// Resets draw the key from the env's counter-based random stream; episodes never terminate.
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/state.hpp"

namespace gmi::envs {

struct SyntheticHumanoid {
  static constexpr const char* kName = "SyntheticHumanoid-v0";
  static constexpr int kObsDim = 376;
  static constexpr int kActDim = 17;

  struct Params {
    int max_episode_steps = 1000;
    float act_bound = 0.4f;  ///< Humanoid-v5's action bound
  };

  static EnvSpec spec(const Params& p) {
    EnvSpec s;
    s.name = kName;
    s.obs_dim = kObsDim;
    s.act_dim = kActDim;
    s.num_actions = 0;
    s.obs_low.assign(kObsDim, -1.0f);
    s.obs_high.assign(kObsDim, 1.0f);
    s.act_low.assign(kActDim, -p.act_bound);
    s.act_high.assign(kActDim, p.act_bound);
    s.max_episode_steps = p.max_episode_steps;
    return s;
  }

  SyntheticHumanoid(int n, const Params& params) : p(params) { allocate_state(n); }

  /// Component c of the observation of key k: splitmix64 of (k, c), 24 bits to [-1, 1).
  KOKKOS_INLINE_FUNCTION static float feature(std::uint64_t k, int c) {
    std::uint64_t z = k + std::uint64_t(c + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return float(z >> 40) * 0x1p-23f - 1.0f;
  }

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    key(i) = (std::uint64_t(r.v[0]) << 32) | r.v[1];
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    const std::uint64_t k = key(i);
    float cost = 0.0f;
    for (int j = 0; j < kActDim; ++j) {
      const float d = math::clamp(action[j], -p.act_bound, p.act_bound) - p.act_bound * feature(k, j);
      cost += d * d;
    }
    key(i) = k * 6364136223846793005ull + 1442695040888963407ull;
    terminated = false;
    return -cost / float(kActDim);
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    const std::uint64_t k = key(i);
    for (int c = 0; c < kObsDim; ++c) obs[c] = feature(k, c);
  }

  Params p;
  // Per-env state (SoA), declared once: members, allocation and checkpoint names.
#define GMI_SYNTHETIC_HUMANOID_STATE(X) X(std::uint64_t, key)
  GMI_ENV_STATE(SyntheticHumanoid, GMI_SYNTHETIC_HUMANOID_STATE)
#undef GMI_SYNTHETIC_HUMANOID_STATE
};

}  // namespace gmi::envs
