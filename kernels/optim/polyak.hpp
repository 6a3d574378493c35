#pragma once
/// \file
/// \brief Target-network updates: target <- tau * source + (1 - tau) * target (Polyak averaging,
/// as CleanRL's `target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)`);
/// tau = 1 copies exactly.
#include <cstdint>

#include "kernels/core/kokkos.hpp"

namespace gmi::optim {

inline void polyak(const ExecSpace& space, std::size_t n, float* target, const float* source, double tau) {
  const float t = float(tau), keep = float(1.0 - tau);
  const bool copy = tau == 1.0;
  Kokkos::parallel_for(
      "gmi::optim::polyak", Range64(space, 0, std::int64_t(n)), KOKKOS_LAMBDA(const std::int64_t i) {
        target[i] = copy ? source[i] : t * source[i] + keep * target[i];
      });
}

}  // namespace gmi::optim
