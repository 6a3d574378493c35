#pragma once
/// \file
/// \brief Kokkos aliases shared by all device code, and math shims that compile unchanged against
/// Kokkos 3.4 (Debian, Serial) and Kokkos 4.x (CUDA).
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace gmi {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using HostSpace = Kokkos::HostSpace;
/// Policies carry Kokkos' light-weight hint (all but the fused update's two gradient kernels,
/// which measured faster without it: kernels/rl/fused_update.cpp): the functor travels as a
/// kernel argument (up to 4 KiB).  Without it Kokkos' CUDA backend copies functors of 512 bytes or more (an env step
/// with its Views, the fused kernels with their layer tables) to constant memory and, before each
/// such launch, waits on the host for the previous one to finish: the host could never queue work
/// ahead and the GPU idled for a launch latency per kernel.
using LaunchHint = Kokkos::Experimental::WorkItemProperty::HintLightWeight_t;
using Range = Kokkos::RangePolicy<ExecSpace, LaunchHint>;
/// Range with 64-bit indices (arrays of 2^31 elements or more).
using Range64 = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>, LaunchHint>;
using TeamPolicy = Kokkos::TeamPolicy<ExecSpace, LaunchHint>;

/// 1-D device array.
template <class T>
using View1 = Kokkos::View<T*, MemSpace>;

/// Raw pointer to the first element of a contiguous view.
template <class V>
auto* ptr(const V& v) {
  return v.data();
}

/// True when device memory is not directly readable from the host.
constexpr bool device_is_host() {
  return std::is_same<MemSpace, HostSpace>::value;
}

/// \brief f(i) for every i in [0, n), `block` indices to a CUDA thread block.
/// Kokkos sizes a RangePolicy's blocks for occupancy and, for a kernel of many registers, never
/// below 128 threads: a heavy kernel over a few thousand indices (the device physics, one env per
/// thread) then runs on a fraction of the SMs while the rest idle.  With `block` > 0 on a GPU the
/// indices go to blocks of that many threads (a TeamPolicy, one index per team member), so n / block
/// SMs take part; `block` <= 0, and every host backend, keep the RangePolicy.
template <class F>
void parallel_for_blocks(const char* label, const ExecSpace& space, int n, int block, const F& f) {
  if constexpr (device_is_host()) {
    Kokkos::parallel_for(label, Range(space, 0, n), f);
  } else if (block <= 0) {
    Kokkos::parallel_for(label, Range(space, 0, n), f);
  } else {
    Kokkos::parallel_for(
        label, TeamPolicy(space, (n + block - 1) / block, block), KOKKOS_LAMBDA(const TeamPolicy::member_type& t) {
          const int i = t.league_rank() * block + t.team_rank();
          if (i < n) f(i);
        });
  }
}

/// \brief Math functions usable in host and device code alike, overloaded for float and double.
/// CUDA provides device versions of the C math library; the std:: overloads are not all usable
/// in device code, and Kokkos 3.4 keeps its own math in Kokkos::Experimental.
namespace math {
#define GMI_MATH_UNARY(name)                                                 \
  KOKKOS_FORCEINLINE_FUNCTION float name(float x) { return ::name##f(x); }   \
  KOKKOS_FORCEINLINE_FUNCTION double name(double x) { return ::name(x); }
GMI_MATH_UNARY(sin)
GMI_MATH_UNARY(cos)
GMI_MATH_UNARY(exp)
GMI_MATH_UNARY(log)
GMI_MATH_UNARY(log1p)
GMI_MATH_UNARY(expm1)
GMI_MATH_UNARY(tanh)
GMI_MATH_UNARY(sqrt)
GMI_MATH_UNARY(fabs)
GMI_MATH_UNARY(floor)
#undef GMI_MATH_UNARY
KOKKOS_FORCEINLINE_FUNCTION float atan2(float y, float x) { return ::atan2f(y, x); }
KOKKOS_FORCEINLINE_FUNCTION double atan2(double y, double x) { return ::atan2(y, x); }
KOKKOS_FORCEINLINE_FUNCTION float fmod(float y, float x) { return ::fmodf(y, x); }
KOKKOS_FORCEINLINE_FUNCTION double fmod(double y, double x) { return ::fmod(y, x); }
/// x - x is 0 for finite x and NaN for +-inf and NaN (valid without -ffast-math).
KOKKOS_FORCEINLINE_FUNCTION bool isfinite(float x) { return (x - x) == 0.0f; }
KOKKOS_FORCEINLINE_FUNCTION bool isfinite(double x) { return (x - x) == 0.0; }
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T max(T a, T b) {
  return a < b ? b : a;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T clamp(T x, T lo, T hi) {
  return x < lo ? lo : (hi < x ? hi : x);
}
template <class T>
constexpr T pi = T(3.14159265358979323846);
}  // namespace math

}  // namespace gmi
