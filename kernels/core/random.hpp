#pragma once
/// \file
/// \brief Counter-based random numbers: Philox4x32-10, the same function on host and device.
///
/// A draw is a pure function of (key, counter), so there is no generator state to carry between
/// kernels, to save in a checkpoint or to split between ranks: the counter names the event
/// (which env, which episode or step, which purpose) and the key is the run's seed.  On CUDA the
/// bits come from cuRAND's Philox4_32_10 (`curand_Philox4x32_10`, the function behind
/// curand_init/curand4 for curandStatePhilox4_32_10_t: curand_init(seed, subsequence, 4*offset)
/// followed by curand4 returns exactly philox(counter = {offset, subsequence}, key = seed)); on the
/// host from Random123's r123::Philox4x32, the reference implementation of the same function.
/// The gpu-labelled test `rng_curand_matches_random123` checks that both give identical bits.
#include "kernels/core/kokkos.hpp"

#if defined(__CUDACC__) && !defined(GMI_RNG_HOST_ONLY)
#include <curand_philox4x32_x.h>
#endif

namespace gmi::rng {

struct Bits4 {
  std::uint32_t v[4];
};

/// Host implementation (Random123), out of line: Random123 and cuRAND both define a global
/// mulhilo32, so they cannot share a CUDA translation unit.
Bits4 philox_host(std::uint64_t key, std::uint64_t lo, std::uint64_t hi);

#if !defined(GMI_RNG_HOST_ONLY)  // random.cpp needs only the declarations above

/// Purposes of draws; part of the counter so that streams never overlap.
enum Stream : std::uint32_t {
  kEnvReset = 1,     ///< initial states: counter = (episode index, global env index)
  kAction = 2,       ///< action sampling: counter = (global step index, global env index)
  kInit = 3,         ///< weight initialisation (host only)
  kShuffle = 4,      ///< minibatch permutations: counter = (update index, epoch)
  kPhysicsReset = 5, ///< host-simulated initial states: counter = (episode << 8 | block, global env index)
  kReplay = 6,       ///< replay sampling: counter = (draw, sample index in the batch)
  kExplore = 7,      ///< off-policy exploration (epsilon-greedy, uniform warm-up actions):
                     ///< counter = (global vector step << 8 | block, global env index)
  kPolicyNoise = 8,  ///< SAC's reparameterised samples in updates: counter = (update << 8 | purpose
                     ///< << 4 | block, GMI << 32 | sample index)
};

/// Philox4x32-10 of a 128-bit counter {lo, hi} under a 64-bit key.
KOKKOS_INLINE_FUNCTION Bits4 philox(std::uint64_t key, std::uint64_t lo, std::uint64_t hi) {
  Bits4 out;
#if defined(__CUDA_ARCH__)
  const uint4 c = make_uint4(std::uint32_t(lo), std::uint32_t(lo >> 32), std::uint32_t(hi),
                             std::uint32_t(hi >> 32));
  const uint2 k = make_uint2(std::uint32_t(key), std::uint32_t(key >> 32));
  const uint4 r = curand_Philox4x32_10(c, k);
  out.v[0] = r.x;
  out.v[1] = r.y;
  out.v[2] = r.z;
  out.v[3] = r.w;
#else
  out = philox_host(key, lo, hi);
#endif
  return out;
}

/// High half of a counter: a stream tag in the top 8 bits and an index (an env, an epoch) below.
KOKKOS_INLINE_FUNCTION std::uint64_t tag(Stream s, std::uint64_t index) {
  return (std::uint64_t(s) << 56) | (index & ((std::uint64_t(1) << 56) - 1));
}

/// Uniform float in the open interval (0, 1) from 24 random bits.
KOKKOS_INLINE_FUNCTION float uniform01(std::uint32_t bits) {
  return float(bits >> 8) * 5.9604644775390625e-08f + 2.98023223876953125e-08f;
}

/// Uniform float in [lo, hi).
KOKKOS_INLINE_FUNCTION float uniform(std::uint32_t bits, float lo, float hi) {
  return lo + (hi - lo) * float(bits >> 8) * 5.9604644775390625e-08f;
}

/// Two standard normals from two uniforms (Box-Muller).
KOKKOS_INLINE_FUNCTION void normal2(std::uint32_t b0, std::uint32_t b1, float& z0, float& z1) {
  const float r = math::sqrt(-2.0f * math::log(uniform01(b0)));
  const float t = 2.0f * math::pi<float> * uniform01(b1);
  z0 = r * math::cos(t);
  z1 = r * math::sin(t);
}

#endif  // !GMI_RNG_HOST_ONLY

}  // namespace gmi::rng
