// GPU only: cuRAND's Philox4_32_10 on the device and Random123's Philox4x32 on the host give the
// same bits for the same (key, counter), so CPU and GPU builds draw the same random streams.
#include <gtest/gtest.h>

#include <curand_kernel.h>

#include "kernels/core/random.hpp"
#include "tests/support/test_util.hpp"

TEST(RngCurand, DeviceMatchesRandom123OnHost) {
  static_assert(!gmi::device_is_host(), "this test is for device builds");
  const int n = 1 << 16;
  gmi::View1<std::uint32_t> out("out", 4 * std::size_t(n));
  Kokkos::parallel_for(
      "test::philox", gmi::Range(0, n), KOKKOS_LAMBDA(const int i) {
        const std::uint64_t key = 0x0123456789abcdefULL ^ std::uint64_t(i % 7);
        const std::uint64_t lo = std::uint64_t(i) * 0x9e3779b97f4a7c15ULL;
        const std::uint64_t hi = gmi::rng::tag(gmi::rng::kAction, std::uint64_t(i) * 31);
        const auto b = gmi::rng::philox(key, lo, hi);
        for (int k = 0; k < 4; ++k) out(4 * std::size_t(i) + k) = b.v[k];
      });
  const auto h = gmi::test::to_host(out);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t key = 0x0123456789abcdefULL ^ std::uint64_t(i % 7);
    const auto b = gmi::rng::philox_host(key, std::uint64_t(i) * 0x9e3779b97f4a7c15ULL,
                                         gmi::rng::tag(gmi::rng::kAction, std::uint64_t(i) * 31));
    for (int k = 0; k < 4; ++k) ASSERT_EQ(h[4 * std::size_t(i) + k], b.v[k]) << "i=" << i << " k=" << k;
  }
}

TEST(RngCurand, MatchesCurandInitCurand4Contract) {
  // The documented API: curand_init(seed, subsequence, offset) then curand4() returns
  // philox(counter = {offset/4, subsequence}, key = seed) for offsets that are multiples of 4.
  gmi::View1<std::uint32_t> out("out", 8);
  Kokkos::parallel_for(
      "test::curand_contract", gmi::Range(0, 1), KOKKOS_LAMBDA(const int) {
        curandStatePhilox4_32_10_t s;
        curand_init(42ULL, 7ULL, 4ULL * 5, &s);
        const uint4 r = curand4(&s);
        const auto b = gmi::rng::philox(42ULL, 5, 7);
        out(0) = r.x, out(1) = r.y, out(2) = r.z, out(3) = r.w;
        for (int k = 0; k < 4; ++k) out(4 + k) = b.v[k];
      });
  const auto h = gmi::test::to_host(out);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(h[k], h[4 + k]);
}
