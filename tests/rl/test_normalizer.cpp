// RunningMeanStd against a direct computation that does not merge anything: the prior
// (mean 0, var 1, count 1e-4) is treated as a weight of 1e-4 pseudo-samples with that mean and
// variance, and the weighted mean and (population) variance of prior + all data are computed in
// two passes over everything at once.  Gymnasium's Chan-style merge is exact for these weighted
// moments, so after any sequence of batches the kernel must agree to rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/rl/normalizer.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

struct Ref {
  std::vector<double> mean, var;
  double count;
};

Ref direct(const std::vector<float>& all, int dim) {
  const long double w0 = 1e-4L;  // prior weight; prior mean 0, prior variance 1
  const std::size_t n = all.size() / dim;
  Ref r;
  r.count = double(w0 + n);
  for (int k = 0; k < dim; ++k) {
    long double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += all[i * dim + k];
    const long double mean = (w0 * 0.0L + s) / (w0 + n);
    long double m2 = w0 * (1.0L + (0.0L - mean) * (0.0L - mean));
    for (std::size_t i = 0; i < n; ++i) {
      const long double d = all[i * dim + k] - mean;
      m2 += d * d;
    }
    r.mean.push_back(double(mean));
    r.var.push_back(double(m2 / (w0 + n)));
  }
  return r;
}

std::vector<float> gaussian_rows(std::size_t n, const std::vector<double>& mu,
                                 const std::vector<double>& sd, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<float> x;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < mu.size(); ++k) x.push_back(float(mu[k] + sd[k] * z(g)));
  return x;
}

void expect_state(const RunningMeanStd& rms, const Ref& ref) {
  const int d = rms.dim();
  const auto st = to_host(rms.state());
  for (int k = 0; k < d; ++k) {
    // Chan's merge vs two passes: relative error ~ eps * mean^2 / var per merge (<= 1e-12 here).
    EXPECT_NEAR(st[k], ref.mean[k], 1e-10 * (std::fabs(ref.mean[k]) + std::sqrt(ref.var[k])))
        << "mean[" << k << "]";
    EXPECT_NEAR(st[d + k], ref.var[k], 1e-10 * ref.var[k]) << "var[" << k << "]";
    EXPECT_NEAR(st[2 * d + k], ref.count, 1e-12 * ref.count) << "count[" << k << "]";
  }
}

TEST(RunningMeanStd, StartsAtPrior) {
  RunningMeanStd rms(3);
  const auto st = to_host(rms.state());
  ASSERT_EQ(st.size(), 9u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(st[k], 0.0);
    EXPECT_EQ(st[3 + k], 1.0);
    EXPECT_EQ(st[6 + k], 1e-4);
  }
}

TEST(RunningMeanStd, BatchesEqualDirectMoments) {
  // Dimensions with a large mean over a small spread (where naive sums of squares lose
  // digits), a wide one, and a nearly constant one.
  const std::vector<double> mu = {5.0, -2.0, 0.1}, sd = {0.1, 3.0, 1e-3};
  RunningMeanStd rms(3);
  ExecSpace space;
  std::vector<float> all;
  std::uint64_t seed = 1;
  for (std::size_t n : {1, 7, 0, 100, 1000, 2, 513}) {
    SCOPED_TRACE(::testing::Message() << "after a batch of " << n);
    const auto x = gaussian_rows(n, mu, sd, seed++);
    all.insert(all.end(), x.begin(), x.end());
    auto dx = to_device(x.empty() ? std::vector<float>(1, 0.0f) : x);
    rms.update(space, dx.data(), std::int64_t(n));
    space.fence();
    expect_state(rms, direct(all, 3));
  }
  // The test is sensitive to the prior: without it, dim 0's variance (~0.01) would differ by
  // ~1e-4 (1 + 25) / count, i.e. ~1e-4 relative, far above the 1e-10 tolerance.
  const Ref r = direct(all, 3);
  long double s = 0, m2 = 0;
  const std::size_t n = all.size() / 3;
  for (std::size_t i = 0; i < n; ++i) s += all[i * 3];
  for (std::size_t i = 0; i < n; ++i) m2 += (all[i * 3] - s / n) * (all[i * 3] - s / n);
  EXPECT_GT(std::fabs(double(m2 / n) - r.var[0]), 1e-5 * r.var[0]);
}

TEST(RunningMeanStd, ScalarStream) {
  // dim 1, as used for the return scale of reward normalisation; many small batches.
  RunningMeanStd rms(1);
  ExecSpace space;
  std::vector<float> all;
  for (int b = 0; b < 40; ++b) {
    const auto x = gaussian_rows(1 + b % 5, {3.0}, {0.5 + 0.1 * b}, 100 + b);
    all.insert(all.end(), x.begin(), x.end());
    auto dx = to_device(x);
    rms.update(space, dx.data(), std::int64_t(x.size()));
  }
  space.fence();
  expect_state(rms, direct(all, 1));
}

TEST(RunningMeanStd, NormalizeClips) {
  const std::vector<double> mu = {1.0, -4.0}, sd = {2.0, 0.5};
  RunningMeanStd rms(2);
  ExecSpace space;
  const auto x = gaussian_rows(2000, mu, sd, 7);
  auto dx = to_device(x);
  rms.update(space, dx.data(), 2000);
  // Rows to normalise: typical values plus outliers on both sides of both dimensions.
  auto y = gaussian_rows(300, mu, sd, 8);
  for (int k = 0; k < 2; ++k) {
    y[0 * 2 + k] = float(mu[k] + 50 * sd[k]);
    y[1 * 2 + k] = float(mu[k] - 50 * sd[k]);
  }
  auto dy = to_device(y);
  View1<float> out("out", y.size());
  const float clip = 2.5f;
  rms.normalize(space, dy.data(), out.data(), 300, clip);
  space.fence();
  const auto z = to_host(out);
  const Ref r = direct(x, 2);
  int clipped = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const int k = int(i % 2);
    const double ref = (double(y[i]) - r.mean[k]) / std::sqrt(r.var[k] + 1e-8);
    ASSERT_LE(std::fabs(z[i]), clip) << i;
    if (std::fabs(ref) >= clip) {
      ++clipped;
      EXPECT_EQ(z[i], ref > 0 ? clip : -clip) << i;
    } else {
      // One float rounding of a double result, plus the state's 1e-10 relative error.
      EXPECT_NEAR(z[i], ref, 2e-7 * std::max(1.0, std::fabs(ref))) << i;
    }
  }
  EXPECT_GE(clipped, 4);  // the outliers, at least
}

}  // namespace
}  // namespace gmi::rl
