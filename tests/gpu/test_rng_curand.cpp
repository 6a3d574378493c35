// GPU only: cuRAND's Philox4_32_10 on the device and Random123's Philox4x32 on the host give the
// same bits for the same (key, counter), so CPU and GPU builds draw the same random streams.
#include <curand_kernel.h>
#include <gtest/gtest.h>

#include "kernels/core/random.hpp"
#include "tests/support/test_util.hpp"

namespace {

constexpr std::uint64_t key_of(int i) { return 0x0123456789abcdefULL ^ std::uint64_t(i % 7); }
constexpr std::uint64_t lo_of(int i) { return std::uint64_t(i) * 0x9e3779b97f4a7c15ULL; }

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

gmi::View1<std::uint32_t> curand_contract_on_device() {
  gmi::View1<std::uint32_t> out("out", 8);
  Kokkos::parallel_for(
      "test::curand_contract", gmi::Range(0, 1), KOKKOS_LAMBDA(const int) {
#if defined(__CUDA_ARCH__)
        curandStatePhilox4_32_10_t s;
        curand_init(42ULL, 7ULL, 4ULL * 5, &s);
        const uint4 r = curand4(&s);
        const auto b = gmi::rng::philox(42ULL, 5, 7);
        out(0) = r.x, out(1) = r.y, out(2) = r.z, out(3) = r.w;
        for (int k = 0; k < 4; ++k) out(4 + k) = b.v[k];
#endif
      });
  return out;
}

}  // namespace

TEST(RngCurand, DeviceMatchesRandom123OnHost) {
  static_assert(!gmi::device_is_host(), "this test is for device builds");
  const int n = 1 << 16;
  const auto h = gmi::test::to_host(philox_on_device(n));
  for (int i = 0; i < n; ++i) {
    const auto b = gmi::rng::philox_host(key_of(i), lo_of(i),
                                         gmi::rng::tag(gmi::rng::kAction, std::uint64_t(i) * 31));
    for (int k = 0; k < 4; ++k) ASSERT_EQ(h[4 * std::size_t(i) + k], b.v[k]) << "i=" << i << " k=" << k;
  }
}

TEST(RngCurand, MatchesCurandInitCurand4Contract) {
  // The documented API: curand_init(seed, subsequence, offset) then curand4() returns
  // philox(counter = {offset / 4, subsequence}, key = seed) for offsets that are multiples of 4.
  const auto h = gmi::test::to_host(curand_contract_on_device());
  for (int k = 0; k < 4; ++k) EXPECT_EQ(h[k], h[4 + k]);
  EXPECT_NE(h[0] | h[1] | h[2] | h[3], 0u);
}
