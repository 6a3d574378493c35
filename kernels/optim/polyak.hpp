#pragma once
/// \file
/// \brief Target-network updates: target <- tau * source + (1 - tau) * target (Polyak averaging,
/// as CleanRL's `target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)`);
/// tau = 1 copies exactly.
#include <cstdint>

#include "kernels/core/kokkos.hpp"

namespace gmi::optim {

/// Defined once (polyak.cpp): DQN, SAC and TD3 all launch it (see kernels/rl/sac_loss.hpp on
/// shared launchers).
void polyak(const ExecSpace& space, std::size_t n, float* target, const float* source, double tau);

}  // namespace gmi::optim
