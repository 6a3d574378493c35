#pragma once
/// \file
/// \brief Random permutations of [0, n) evaluated per index, with no sort and no storage: a
/// 4-round Feistel network on the smallest even number of bits covering n, with cycle-walking
/// (Black & Rogaway 2002) to stay inside [0, n).  Keys come from Philox, so the permutation of
/// each (update, epoch) is reproducible on any backend.  A permutation may read its keys from
/// device memory instead (launches captured once into a CUDA graph and replayed with new keys).
#include <cstdint>

#include "kernels/core/random.hpp"

namespace gmi::rl {

struct Permutation {
  std::uint32_t n = 1;
  std::uint32_t half_bits = 1;
  std::uint32_t keys[4] = {0, 0, 0, 0};
  const std::uint32_t* stored_keys = nullptr;  ///< where set, the 4 keys in memory the kernels read

  Permutation() = default;
  /// Permutation number `index` of [0, n) under `seed`.
  Permutation(std::uint32_t n_, std::uint64_t seed, std::uint64_t index) : n(n_), half_bits(half_bits_of(n_)) {
    make_keys(seed, index, keys);
  }
  /// The 4 keys of permutation `index` under `seed` into out (host or device: what a stored
  /// permutation's memory is to hold).
  KOKKOS_INLINE_FUNCTION static void make_keys(std::uint64_t seed, std::uint64_t index, std::uint32_t* out) {
    const auto r = rng::philox(seed, index, rng::tag(rng::kShuffle, 0));
    for (int k = 0; k < 4; ++k) out[k] = r.v[k];
  }
  /// A permutation of [0, n) whose keys are read from `stored` (4 values, device memory on GPU
  /// builds: evaluate it in kernels only) when it is evaluated: the one of Permutation(n, seed,
  /// index) once they hold its keys.
  static Permutation stored(std::uint32_t n_, const std::uint32_t* stored) {
    Permutation p;
    p.n = n_;
    p.half_bits = half_bits_of(n_);
    p.stored_keys = stored;
    return p;
  }
  /// Half the smallest even number of bits that covers [0, n).
  static std::uint32_t half_bits_of(std::uint32_t n_) {
    std::uint32_t bits = 2;
    while (bits < 32 && (std::uint64_t(1) << bits) < n_) bits += 2;
    return bits / 2;
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
    std::uint32_t key[4];
    for (int k = 0; k < 4; ++k) key[k] = stored_keys ? stored_keys[k] : keys[k];
    do {
      std::uint32_t L = i >> half_bits, R = i & mask;
      for (int k = 0; k < 4; ++k) {
        const std::uint32_t t = L ^ (mix(R ^ key[k]) & mask);
        L = R;
        R = t;
      }
      i = (L << half_bits) | R;
    } while (i >= n);
    return i;
  }
};

}  // namespace gmi::rl
