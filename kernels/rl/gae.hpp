#pragma once
/// \file
/// \brief Generalised advantage estimation (Schulman et al. 2016, eq. 16) over a [T][N] rollout.
/// Transition t of env e ends its episode when terminated or truncated; the caller has already
/// added gamma * V(final_obs) to the reward of truncated transitions when bootstrapping them.
///   delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t)
///   A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1},   R_t = A_t + V(s_t)
#include <cstdint>

#include "kernels/core/kokkos.hpp"

namespace gmi::rl {

template <class S>
void gae(const ExecSpace& space, int T, int N, const S* rewards, const std::uint8_t* terminated,
         const std::uint8_t* truncated, const S* values, const S* last_values, S gamma, S lambda,
         S* advantages, S* returns) {
  Kokkos::parallel_for(
      "gmi::rl::gae", Range(space, 0, N), KOKKOS_LAMBDA(const int e) {
        S next_adv = 0;
        S next_value = last_values[e];
        for (int t = T - 1; t >= 0; --t) {
          const std::size_t j = std::size_t(t) * N + e;
          const S live = (terminated[j] || truncated[j]) ? S(0) : S(1);
          const S delta = rewards[j] + gamma * next_value * live - values[j];
          next_adv = delta + gamma * lambda * live * next_adv;
          advantages[j] = next_adv;
          returns[j] = next_adv + values[j];
          next_value = values[j];
        }
      });
}

}  // namespace gmi::rl
