// GpuMonitor (kernels/core/gpu_monitor.hpp): the mean of the driver's utilisation samples over an
// interval, with the newest earlier sample standing in for an interval too short to hold one; on
// host builds a monitor that says why it has nothing; on GPU builds (run on the GPU machine) a GPU
// kept busy for a second reads busy, and its memory in use is at least what this process holds.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/core/gpu_monitor.hpp"
#include "kernels/core/kokkos.hpp"

namespace gmi {
namespace {

TEST(GpuMonitor, MeanOfTheSamplesNewerThanTheLastSeen) {
  const std::vector<GpuSample> s = {{100, 10}, {200, 30}, {300, 50}, {50, 99}};
  const SampleMean m = mean_since(s, GpuSample{150, 70});
  EXPECT_EQ(m.counted, 2);
  EXPECT_DOUBLE_EQ(m.util_pct, 40);
  EXPECT_EQ(m.newest.time_us, 300u);
  EXPECT_DOUBLE_EQ(m.newest.util_pct, 50);
}

TEST(GpuMonitor, AnIntervalWithoutASampleHasTheNewestEarlierOne) {
  const SampleMean m = mean_since({{100, 10}, {200, 30}}, GpuSample{200, 30});
  EXPECT_EQ(m.counted, 0);
  EXPECT_DOUBLE_EQ(m.util_pct, 30);
  EXPECT_EQ(m.newest.time_us, 200u);
}

TEST(GpuMonitor, NoSampleEverIsNaN) {
  EXPECT_TRUE(std::isnan(mean_since({}, GpuSample{}).util_pct));
}

#if defined(KOKKOS_ENABLE_CUDA)
/// Kernels back to back for `ms` milliseconds.
void keep_busy(const View1<float>& a, int ms) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(ms)) {
    Kokkos::parallel_for(
        "test::busy", Range(0, int(a.extent(0))), KOKKOS_LAMBDA(const int i) {
          float x = a(i);
          for (int k = 0; k < 2000; ++k) x = x * 0.999f + 1e-3f;
          a(i) = x;
        });
    Kokkos::fence();
  }
}

TEST(GpuMonitor, ABusyGpuReadsBusy) {
  GpuMonitor gpu;
  ASSERT_TRUE(gpu.available()) << gpu.why_not();
  View1<float> a("a", 1 << 20);
  gpu.read_now();
  gpu.start();
  keep_busy(a, 1500);
  const GpuInterval g = gpu.interval();  // what the monitor's own thread read meanwhile
  EXPECT_GE(g.samples, 1);
  EXPECT_GT(g.util_pct, 50) << g.samples << " samples";
  EXPECT_GT(g.mem_mib, 4.0);  // this process's 4 MiB array at least
  // What the calls cost (printed, not asserted): training calls interval() once per iteration; the
  // monitor's thread reads the driver every 0.1 s.
  auto us_per_call = [](auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 100; ++k) call();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 100;
  };
  const double read_us = us_per_call([&] { gpu.read_now(); });
  const double interval_us = us_per_call([&] { gpu.interval(); });
  std::printf("GpuMonitor: a driver reading %.1f us, interval() %.2f us; busy interval %.0f %% over %d samples, %.0f "
              "MiB in use\n",
              read_us, interval_us, g.util_pct, g.samples, g.mem_mib);
}
#else
TEST(GpuMonitor, AHostBuildSaysWhyItHasNothing) {
  GpuMonitor gpu;
  EXPECT_FALSE(gpu.available());
  EXPECT_FALSE(gpu.why_not().empty());
  gpu.read_now();
  const GpuInterval g = gpu.interval();
  EXPECT_TRUE(std::isnan(g.util_pct));
  EXPECT_TRUE(std::isnan(g.mem_mib));
  EXPECT_EQ(g.samples, 0);
}
#endif

}  // namespace
}  // namespace gmi
