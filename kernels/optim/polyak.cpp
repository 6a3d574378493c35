// Polyak averaging of target networks (kernels/optim/polyak.hpp), compiled once.
#include "kernels/optim/polyak.hpp"

namespace gmi::optim {

void polyak(const ExecSpace& space, std::size_t n, float* target, const float* source, double tau) {
  const float t = float(tau), keep = float(1.0 - tau);
  const bool copy = tau == 1.0;
  Kokkos::parallel_for(
      "gmi::optim::polyak", Range64(space, 0, std::int64_t(n)), KOKKOS_LAMBDA(const std::int64_t i) {
        target[i] = copy ? source[i] : t * source[i] + keep * target[i];
      });
}

}  // namespace gmi::optim
