#pragma once
/// \file
/// \brief Random permutations of [0, n) evaluated per index, with no sort and no storage: a
/// 4-round Feistel network on the smallest even number of bits covering n, with cycle-walking
/// (Black & Rogaway 2002) to stay inside [0, n).  Keys come from Philox, so the permutation of
/// each (update, epoch) is reproducible on any backend.
#include <cstdint>

#include "kernels/core/random.hpp"

namespace gmi::rl {

struct Permutation {
  std::uint32_t n = 1;
  std::uint32_t half_bits = 1;
  std::uint32_t keys[4] = {0, 0, 0, 0};

  Permutation() = default;
  /// Permutation number `index` of [0, n) under `seed`.
  Permutation(std::uint32_t n_, std::uint64_t seed, std::uint64_t index) : n(n_) {
    std::uint32_t bits = 2;
    while (bits < 32 && (std::uint64_t(1) << bits) < n) bits += 2;
    half_bits = bits / 2;
    const auto r = rng::philox(seed, index, rng::tag(rng::kShuffle, 0));
    for (int k = 0; k < 4; ++k) keys[k] = r.v[k];
  }

  KOKKOS_INLINE_FUNCTION static std::uint32_t mix(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
  }

  KOKKOS_INLINE_FUNCTION std::uint32_t operator()(std::uint32_t i) const {
    const std::uint32_t mask = (std::uint32_t(1) << half_bits) - 1;
    do {
      std::uint32_t L = i >> half_bits, R = i & mask;
      for (int k = 0; k < 4; ++k) {
        const std::uint32_t t = L ^ (mix(R ^ keys[k]) & mask);
        L = R;
        R = t;
      }
      i = (L << half_bits) | R;
    } while (i >= n);
    return i;
  }
};

}  // namespace gmi::rl
