// The tuner's search (Algorithm 1 of GMI-DRL, paper 003 §3.1.2) on synthetic measurements, so the
// choices are exact: what it probes, where the memory projection (Eq. 4) and the saturation
// ratio stop it, that a failed probe does not stop the search, the time budget, and that on a
// grid with one peak its choice equals the full grid's best.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "kernels/core/error.hpp"
#include "src/gmi/tune.hpp"

using namespace gmi::tuning;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

/// A GPU of `gpu_gib` whose GMIs' throughput follows `top(g, n)` and memory 0.5 GiB + 1 MiB/env
/// (or `mem(n)` bytes).
struct FakeGpu {
  double gpu_gib = 80;
  std::function<double(int, int)> top;
  std::function<double(int)> mem;
  std::set<std::pair<int, int>> fail;     ///< probes that fail
  std::set<std::pair<int, int>> invalid;  ///< configs that the config check refuses
  std::vector<std::pair<int, int>> probed;
  Point operator()(int g, int n) {
    probed.emplace_back(g, n);
    Point p;
    p.gmis = g;
    p.envs = n;
    p.seconds = 1;
    p.budget = gpu_gib * kGiB / g;
    if (invalid.count({g, n})) {
      p.status = "invalid";
      p.note = "ppo.num_minibatches does not divide the batch";
      p.seconds = 0;
      p.budget = 0;
      return p;
    }
    if (fail.count({g, n})) {
      p.status = "failed";
      p.note = "exit status 1: out of memory";
      return p;
    }
    p.status = "probed";
    p.top = top(g, n);
    p.mem = mem ? mem(n) : 0.5 * kGiB + n * 1024.0 * 1024;
    return p;
  }
};

/// Throughput that grows with envs until `knee` envs per GMI, then flat; more GMIs help up to 4.
double knee_top(int g, int n, int knee) {
  const double per_gmi = 1e6 * std::min(n, knee) / 128.0;
  return per_gmi * std::min(g, 4) * (g > 4 ? 0.9 : 1.0);
}

const std::vector<int> kGmis = {8, 7, 6, 5, 4, 3, 2, 1};
const std::vector<int> kEnvs = {128, 256, 512, 1024, 2048, 4096, 8192};

Point best_of_grid(FakeGpu gpu) {
  Point best;
  for (int g : kGmis)
    for (int n : kEnvs) {
      const Point p = gpu(g, n);
      if (p.status == "probed" && p.top > best.top) best = p;
    }
  return best;
}

}  // namespace

TEST(Tune, EnvCountsParse) {
  EXPECT_EQ(parse_env_counts("128..1024"), std::vector<int>({128, 256, 512, 1024}));
  EXPECT_EQ(parse_env_counts("100..500"), std::vector<int>({100, 200, 400}));
  EXPECT_EQ(parse_env_counts("4,16,64"), std::vector<int>({4, 16, 64}));
  for (const char* bad : {"", "0..8", "a..8", "64..8", "8,4", "4,4", "1.5"})
    EXPECT_THROW(parse_env_counts(bad), gmi::InputError) << bad;
}

TEST(Tune, SaturationStopsTheEnvCountAndTheChoiceIsTheGridsBest) {
  FakeGpu gpu;
  gpu.top = [](int g, int n) { return knee_top(g, n, 1024); };
  const SearchResult r = search(kGmis, kEnvs, 0.05, 1, 0, 0, std::ref(gpu));
  ASSERT_GE(r.best, 0);
  const Point& b = r.points[r.best];
  const Point full = best_of_grid(gpu);
  EXPECT_EQ(b.gmis, 4);
  EXPECT_DOUBLE_EQ(b.top, full.top);
  // Per GMI count: 128..1024 grow, 2048 is flat (Sat 0 < alpha) and saturates; 4096 and 8192
  // are never probed.
  for (const Point& p : r.points) {
    if (p.envs <= 1024) EXPECT_EQ(p.status, "probed") << p.gmis << "x" << p.envs;
    if (p.envs == 2048) EXPECT_EQ(p.status, "saturated") << p.gmis << "x" << p.envs;
    if (p.envs > 2048) EXPECT_EQ(p.status, "not visited") << p.gmis << "x" << p.envs;
  }
  EXPECT_EQ(r.probes, int(kGmis.size()) * 5);
  EXPECT_LE(r.probes, int(kGmis.size() * kEnvs.size()) * 3 / 4);
  // Sat of 256 after 128: throughput doubles (R_top 1) while memory grows by 128 MiB of 640 MiB.
  const Point& p256 = r.points[1];
  EXPECT_NEAR(p256.sat, 1.0 / (128.0 / 640.0), 1e-9);
  EXPECT_TRUE(std::isnan(r.points[0].sat));
}

TEST(Tune, MemoryProjectionSkipsWhatCannotFit) {
  FakeGpu gpu;
  gpu.gpu_gib = 8;  // 8 GMIs: 1 GiB each; 0.5 GiB + 1 MiB/env fits up to 512 envs
  gpu.top = [](int g, int n) { return knee_top(g, n, 1 << 20); };
  const SearchResult r = search({8}, kEnvs, 0.05, 1, 0, 0, std::ref(gpu));
  // 128 and 256 are probed; Eq. 4 from them projects 1024 -> 1.5 GiB > 1 GiB, but 512 -> 1.0 GiB fits.
  ASSERT_EQ(r.points.size(), kEnvs.size());
  EXPECT_EQ(r.points[2].status, "probed");
  EXPECT_EQ(r.points[3].status, "skipped");
  EXPECT_NEAR(r.points[3].mem, 0.5 * kGiB + 1024 * 1048576.0, 1.0);
  EXPECT_NE(r.points[3].note.find("projected 1.50 GiB per GMI > its share 1.00 GiB"), std::string::npos)
      << r.points[3].note;
  for (std::size_t i = 4; i < kEnvs.size(); ++i) EXPECT_EQ(r.points[i].status, "not visited");
  EXPECT_EQ(gpu.probed.size(), 3u);
  EXPECT_EQ(r.points[r.best].envs, 512);
  // --gpu-memory given: the same, without a probe's report.
  FakeGpu again = gpu;
  again.probed.clear();
  const SearchResult g = search({8}, kEnvs, 0.05, 1, 8 * kGiB, 0, std::ref(again));
  EXPECT_EQ(g.points[3].status, "skipped");
}

TEST(Tune, Eq4ProjectsFromTheLastTwoProbes) {
  FakeGpu gpu;
  gpu.gpu_gib = 4;  // 1 GMI: a 4 GiB share
  gpu.top = [](int g, int n) { return knee_top(g, n, 1 << 20); };
  // Memory grows faster with more envs: 1, 1.25, 2 GiB at 128, 256, 512 envs.  From the last two
  // probes 1024 projects to 3.5 GiB (fits); from the first two it would be 2.5 GiB.  2048 projects
  // from (512, 2 GiB) and (1024, 3.5 GiB) to 6.5 GiB: skipped.
  gpu.mem = [](int n) { return kGiB * (n <= 128 ? 1.0 : n == 256 ? 1.25 : n == 512 ? 2.0 : n == 1024 ? 3.5 : 8.0); };
  const SearchResult r = search({1}, kEnvs, 0.0, 1, 0, 0, std::ref(gpu));
  EXPECT_EQ(r.points[3].status, "probed");
  EXPECT_EQ(r.points[4].status, "skipped");
  EXPECT_NEAR(r.points[4].mem, 6.5 * kGiB, 1.0);
}

TEST(Tune, AnInvalidConfigSkipsOnlyItsPoint) {
  FakeGpu gpu;
  gpu.top = [](int g, int n) { return knee_top(g, n, 1 << 20); };
  gpu.invalid = {{2, 128}};
  const SearchResult r = search({2}, {128, 256, 512}, 0.05, 1, 0, 0, std::ref(gpu));
  EXPECT_EQ(r.points[0].status, "invalid");
  EXPECT_EQ(r.points[1].status, "probed");
  EXPECT_EQ(r.points[2].status, "probed");
  EXPECT_TRUE(std::isnan(r.points[1].sat));  // the first measured point of the GMI count
  EXPECT_EQ(r.points[r.best].envs, 512);
}

TEST(Tune, AFailedProbeDoesNotStopTheSearch) {
  FakeGpu gpu;
  gpu.top = [](int g, int n) { return knee_top(g, n, 1 << 20); };
  gpu.fail = {{8, 512}, {4, 128}};
  const SearchResult r = search({8, 4, 2}, {128, 256, 512, 1024}, 0.05, 1, 0, 0, std::ref(gpu));
  auto at = [&](int g, int n) -> const Point& {
    for (const Point& p : r.points)
      if (p.gmis == g && p.envs == n) return p;
    throw std::runtime_error("missing point");
  };
  EXPECT_EQ(at(8, 256).status, "probed");
  EXPECT_EQ(at(8, 512).status, "failed");
  EXPECT_EQ(at(8, 512).note, "exit status 1: out of memory");
  EXPECT_EQ(at(8, 1024).status, "not visited");  // a larger env count would not fit either
  EXPECT_EQ(at(4, 128).status, "failed");
  EXPECT_EQ(at(4, 256).status, "not visited");
  EXPECT_EQ(at(2, 1024).status, "probed");       // the search went on to 2 GMIs
  // 2 x 1024 (2 x 8 M = 16 M samples/s) beats 8 x 256 (0.9 x 4 x 2 M = 7.2 M).
  EXPECT_EQ(r.points[r.best].gmis, 2);
  EXPECT_EQ(r.points[r.best].envs, 1024);
}

TEST(Tune, TheTimeBudgetCutsTheSearchAndKeepsTheBestSoFar) {
  FakeGpu gpu;
  gpu.top = [](int g, int n) { return knee_top(g, n, 1 << 20); };
  const SearchResult r = search({4, 2, 1}, {128, 256, 512}, 0.05, 1, 0, 2.5, std::ref(gpu));
  EXPECT_TRUE(r.cut);
  EXPECT_EQ(r.probes, 3);  // 1 s each: the budget of 2.5 s is spent after the third
  EXPECT_EQ(r.points[r.best].gmis, 4);
  EXPECT_EQ(r.points[r.best].envs, 512);
  int cut = 0;
  for (const Point& p : r.points) cut += p.status == "cut";
  EXPECT_EQ(cut, 6);
}

TEST(Tune, TheEstimateScalesWithTheJobsGpus) {
  FakeGpu gpu;
  gpu.top = [](int g, int n) { return 1000.0 * n; };
  const SearchResult r = search({1}, {128, 256}, 0.05, 4, 0, 0, std::ref(gpu));
  EXPECT_DOUBLE_EQ(r.points[r.best].system, 4 * 256000.0);
}
