// GPU only: cuRAND's Philox4_32_10 on the device and Random123's Philox4x32 on the host give the
// same bits for the same (key, counter), so CPU and GPU builds draw the same random streams.
// (This file avoids curand_kernel.h: a translation unit including it here failed to register its
// kernels with the CUDA runtime, "invalid resource handle"; production code includes only
// curand_philox4x32_x.h, as kernels/core/random.hpp does.)
#include <gtest/gtest.h>

#include "kernels/core/random.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::test {

KOKKOS_INLINE_FUNCTION std::uint64_t key_of(int i) { return 0x0123456789abcdefULL ^ std::uint64_t(i % 7); }
KOKKOS_INLINE_FUNCTION std::uint64_t lo_of(int i) { return std::uint64_t(i) * 0x9e3779b97f4a7c15ULL; }

// Device lambdas may not live in gtest's private TestBody: the kernels are free functions.
gmi::View1<std::uint32_t> philox_on_device(int n) {
  gmi::View1<std::uint32_t> out("out", 4 * std::size_t(n));
  Kokkos::parallel_for(
      "test::philox", gmi::Range(0, n), KOKKOS_LAMBDA(const int i) {
        const auto b = gmi::rng::philox(key_of(i), lo_of(i), gmi::rng::tag(gmi::rng::kAction, std::uint64_t(i) * 31));
        for (int k = 0; k < 4; ++k) out(4 * std::size_t(i) + k) = b.v[k];
      });
  return out;
}

}  // namespace gmi::test

TEST(RngCurand, DeviceMatchesRandom123OnHost) {
  static_assert(!gmi::device_is_host(), "this test is for device builds");
  const int n = 1 << 16;
  const auto h = gmi::test::to_host(gmi::test::philox_on_device(n));
  for (int i = 0; i < n; ++i) {
    const auto b = gmi::rng::philox_host(gmi::test::key_of(i), gmi::test::lo_of(i),
                                         gmi::rng::tag(gmi::rng::kAction, std::uint64_t(i) * 31));
    for (int k = 0; k < 4; ++k) ASSERT_EQ(h[4 * std::size_t(i) + k], b.v[k]) << "i=" << i << " k=" << k;
  }
}
