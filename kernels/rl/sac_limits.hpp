#pragma once
/// \file
/// \brief Limits of the device SAC kernels that a configuration is checked against before
/// anything starts (no Kokkos here: the config reader includes it).

namespace gmi::rl {

/// Action dimensions one SAC sample draws normals for: 16 Philox blocks of 4.
constexpr int kMaxSacActDim = 64;

}  // namespace gmi::rl
