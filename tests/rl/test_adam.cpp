// adam_step against torch.optim.Adam's documented algorithm (torch docs, "Adam"), and grad_norm
// (the norm kernel before it) against a host sum:
//   g = grad (optionally scaled by clip_grad_norm_: c = max_norm / (||g|| + 1e-6), applied if c < 1)
//   m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2
//   m_hat = m / (1 - b1^t) ;  v_hat = v / (1 - b2^t) ;  p -= lr m_hat / (sqrt(v_hat) + eps)
// The kernel uses the algebraically equal form of torch's implementation (step_size = lr / bc1,
// denom = sqrt(v) / sqrt(bc2) + eps); the reference uses the documented form, so the two agree
// to rounding.  Moments are compared as well as parameters: m/sqrt(v) is nearly invariant to the
// gradient's scale, so only the moments show whether clipping was applied.
//
// Float: as torch, the kernel uses float(beta) for the decay and float(1 - beta), with 1 - beta
// formed in double, for the new term (1 - float(0.999) would be 9.9998713e-4, not 1.0e-3); the
// reference does the same, so the comparison is torch's arithmetic, not only its algorithm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/nn/blas.hpp"
#include "kernels/optim/adam.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::optim {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

/// The moments use the betas as the kernel's scalar type S holds them (see the note at the top).
/// They are stored as S, not as double(S(beta)): GCC 12.2 at -O2 (the host compiler behind
/// nvcc here) SLP-vectorised two adjacent `double(float(x))` assignments into a plain copy,
/// dropping the rounding, in the CUDA build of this file.
template <class S>
struct HostAdam {
  std::vector<double> p, m, v;
  S beta1 = S(0.9), beta2 = S(0.999);
  S one_minus_beta1 = S(1.0 - 0.9), one_minus_beta2 = S(1.0 - 0.999);
  void step(const std::vector<double>& grad, const AdamArgs& a) {
    std::vector<double> g = grad;
    if (a.max_grad_norm > 0) {
      double ss = 0;
      for (double x : g) ss += x * x;
      const double c = a.max_grad_norm / (std::sqrt(ss) + 1e-6);
      if (c < 1)
        for (double& x : g) x *= c;
    }
    const double b1 = beta1, b2 = beta2, omb1 = one_minus_beta1, omb2 = one_minus_beta2;
    const int t = int(a.step);
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + omb1 * g[i];
      v[i] = b2 * v[i] + omb2 * g[i] * g[i];
      // Bias corrections use the exact (double) betas, as the kernel computes them on the host.
      const double m_hat = m[i] / (1 - std::pow(a.beta1, t));
      const double v_hat = v[i] / (1 - std::pow(a.beta2, t));
      p[i] -= a.lr * m_hat / (std::sqrt(v_hat) + a.eps);
    }
  }
};

std::vector<double> random_vec(std::size_t n, double scale, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * u(g);
  return v;
}

/// Runs `steps` Adam steps on device and host from the same start and compares p, m, v after
/// every step.  `grad_scale` sets the size of the gradients (their norm is ~ grad_scale *
/// sqrt(n/3)).  The device receives the host-computed global norm through a device scalar.
template <class S>
void compare(const AdamArgs& base, int steps, double grad_scale, double tol_rel,
             std::uint64_t seed, int* clipped_steps = nullptr) {
  const std::size_t n = 257;
  HostAdam<S> h;
  h.beta1 = S(base.beta1);
  h.beta2 = S(base.beta2);
  h.one_minus_beta1 = S(1.0 - base.beta1);
  h.one_minus_beta2 = S(1.0 - base.beta2);
  h.p = random_vec(n, 1.0, seed);
  h.m.assign(n, 0.0);
  h.v.assign(n, 0.0);
  // Start from the float-rounded parameters so both sides begin identically.
  std::vector<S> p0(h.p.begin(), h.p.end());
  h.p.assign(p0.begin(), p0.end());
  auto dp = to_device(p0);
  auto dm = to_device(std::vector<S>(n, S(0))), dv = to_device(std::vector<S>(n, S(0)));
  View1<S> dnorm("grad_norm", 1);
  ExecSpace space;
  double gmax = 0;  // largest gradient entry so far: m is a signed sum and may cancel
  for (int t = 1; t <= steps; ++t) {
    SCOPED_TRACE(::testing::Message() << "step " << t << " max_grad_norm " << base.max_grad_norm);
    // Gradients change scale from step to step (x0.25 .. x4), so clipping switches on and off.
    const double scale = grad_scale * std::pow(2.0, double((t * 3) % 5) - 2.0);
    auto gd = random_vec(n, scale, seed + 100 * t);
    std::vector<S> gs(gd.begin(), gd.end());
    gd.assign(gs.begin(), gs.end());
    double ss = 0;
    for (double x : gd) ss += x * x, gmax = std::max(gmax, std::fabs(x));
    const double norm = std::sqrt(ss);
    if (clipped_steps && base.max_grad_norm > 0 && base.max_grad_norm / (norm + 1e-6) < 1)
      ++*clipped_steps;
    Kokkos::deep_copy(dnorm, S(norm));
    auto dg = to_device(gs);
    AdamArgs a = base;
    a.step = t;
    adam_step<S>(space, n, dp.data(), dg.data(), dm.data(), dv.data(), dnorm.data(), a);
    space.fence();
    h.step(gd, a);
    const auto p = to_host(dp), m = to_host(dm), v = to_host(dv);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(m[i], h.m[i], tol_rel * (std::fabs(h.m[i]) + gmax)) << "m[" << i << "]";
      ASSERT_NEAR(v[i], h.v[i], tol_rel * std::fabs(h.v[i]) + 1e-30) << "v[" << i << "]";
      // Parameter: error relative to its size (the update itself is ~lr).
      ASSERT_NEAR(p[i], h.p[i], tol_rel * (std::fabs(h.p[i]) + a.lr)) << "p[" << i << "]";
    }
  }
}

TEST(Adam, MatchesTorchAlgorithmDouble) {
  AdamArgs a;
  a.lr = 1e-2;
  a.eps = 1e-5;  // CleanRL's eps
  compare<double>(a, 8, 1.0, 1e-12, 1);
  a.eps = 1e-8;  // torch's default
  a.beta1 = 0.8;
  a.beta2 = 0.99;
  compare<double>(a, 8, 1e-7, 1e-12, 2);  // gradients ~10 eps: eps matters
}

TEST(Adam, MatchesTorchAlgorithmFloat) {
  AdamArgs a;
  a.lr = 2.5e-4;
  // Float: a few roundings per step, accumulated over the steps in m and v.
  compare<float>(a, 8, 1.0, 1e-5, 3);
}

TEST(Adam, GradientClippingAppliedOnlyBelowOne) {
  AdamArgs a;
  a.lr = 1e-2;
  // Gradient norms vary between ~0.25 * 9 and 4 * 9 across steps (n = 257 entries U(-1,1)).
  int clipped = 0;
  a.max_grad_norm = 5.0;
  compare<double>(a, 10, 1.0, 1e-12, 4, &clipped);
  EXPECT_GT(clipped, 0) << "test must clip on some steps";
  EXPECT_LT(clipped, 10) << "and leave others unscaled (factor > 1 must not scale up)";
  compare<float>(a, 10, 1.0, 1e-5, 5);
  // A huge max norm: never clipped, identical to no clipping.
  a.max_grad_norm = 1e9;
  compare<double>(a, 5, 1.0, 1e-12, 6);
}

TEST(Adam, ClipFactorValues) {
  // One step from m = v = 0 exposes the scaled gradient directly: m = (1 - b1) * g * scale.
  ExecSpace space;
  const std::vector<double> g = {3.0, -4.0};  // norm 5
  for (double max_norm : {0.0, -1.0, 1.0, 5.0, 7.5}) {
    SCOPED_TRACE(max_norm);
    auto dp = to_device(std::vector<double>{0.0, 0.0}), dg = to_device(g);
    auto dm = to_device(std::vector<double>{0.0, 0.0}), dv = to_device(std::vector<double>{0.0, 0.0});
    auto dn = to_device(std::vector<double>{5.0});
    AdamArgs a;
    a.max_grad_norm = max_norm;
    adam_step<double>(space, 2, dp.data(), dg.data(), dm.data(), dv.data(), dn.data(), a);
    space.fence();
    const auto m = to_host(dm);
    const double c = max_norm / (5.0 + 1e-6);
    const double scale = max_norm > 0 && c < 1 ? c : 1.0;
    EXPECT_NEAR(m[0], 0.1 * 3.0 * scale, 1e-15);
    EXPECT_NEAR(m[1], -0.1 * 4.0 * scale, 1e-15);
  }
}

TEST(Adam, ClipWithDeviceNorm) {
  // As in training: the norm comes from blas::nrm2 into device memory, no host round-trip.
  const std::size_t n = 1000;
  const auto g = random_vec(n, 1.0, 9);
  auto dg = to_device(g);
  View1<double> dn("norm", 1);
  auto dp = to_device(std::vector<double>(n, 0.0));
  auto dm = to_device(std::vector<double>(n, 0.0)), dv = to_device(std::vector<double>(n, 0.0));
  ExecSpace space;
  blas::nrm2<double>(space, int(n), dg.data(), dn.data());
  AdamArgs a;
  a.max_grad_norm = 0.5;
  adam_step<double>(space, n, dp.data(), dg.data(), dm.data(), dv.data(), dn.data(), a);
  space.fence();
  double ss = 0;
  for (double x : g) ss += x * x;
  const double c = 0.5 / (std::sqrt(ss) + 1e-6);
  const auto m = to_host(dm);
  for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(m[i], 0.1 * g[i] * c, 1e-14);
}

TEST(Adam, NonFiniteGradientSkipsTheStep) {
  // NaN or Inf in the gradient reaches the norm; the step must leave params and moments alone,
  // with or without clipping.  The norm is computed by nrm2, as in training.
  const double bad_values[] = {std::nan(""), INFINITY, -INFINITY};
  for (double bad : bad_values) {
    for (double max_norm : {0.0, 0.5}) {
      SCOPED_TRACE(testing::Message() << bad << " max_norm " << max_norm);
      const std::size_t n = 64;
      auto g = random_vec(n, 1.0, 3);
      g[17] = bad;
      const auto p0 = random_vec(n, 1.0, 4), m0 = random_vec(n, 0.1, 5), v0 = random_vec(n, 0.1, 6);
      std::vector<double> v0abs(v0);
      for (double& x : v0abs) x = std::abs(x);
      auto dp = to_device(p0), dg = to_device(g), dm = to_device(m0), dv = to_device(v0abs);
      View1<double> dn("norm", 1);
      ExecSpace space;
      blas::nrm2<double>(space, int(n), dg.data(), dn.data());
      AdamArgs a;
      a.max_grad_norm = max_norm;
      a.step = 7;
      adam_step<double>(space, n, dp.data(), dg.data(), dm.data(), dv.data(), dn.data(), a);
      space.fence();
      EXPECT_EQ(to_host(dp), p0);
      EXPECT_EQ(to_host(dm), m0);
      EXPECT_EQ(to_host(dv), v0abs);
    }
  }
}

// grad_norm: the norm, the count and the caller's bookkeeping in one kernel, against a host sum in
// long double.
struct Poison {
  bool on;
  KOKKOS_INLINE_FUNCTION bool operator()() const { return on; }
};
/// Records what grad_norm's final step passed: calls and the last norm.
struct Seen {
  double* out;  // [calls, norm]
  KOKKOS_INLINE_FUNCTION void operator()(float nv) const {
    out[0] += 1;
    out[1] = double(nv);
  }
};

struct NormRun {
  float norm;
  std::vector<double> seen, coeffs;
  std::int64_t count;
};

/// `device_lr` > 0: the counter reads that learning rate from device memory (AdamArgs says 1e-3).
NormRun run_grad_norm(const std::vector<float>& g, bool poisoned, double device_lr = 0) {
  ExecSpace space;
  auto dg = to_device(g);
  View1<float> norm("norm", 1);
  View1<double> sum("sum", 1), seen("seen", 2), coeffs("coeffs", 2), lr("lr", 1);
  View1<std::int64_t> count("count", 1);
  Kokkos::deep_copy(count, std::int64_t(5));
  Kokkos::deep_copy(lr, device_lr);
  AdamArgs a;
  a.lr = 1e-3;
  grad_norm<float>(space, g.size(), dg.data(), norm.data(), sum.data(), Poison{poisoned}, Seen{seen.data()}, a,
                   AdamCounter{count.data(), coeffs.data(), device_lr > 0 ? lr.data() : nullptr});
  space.fence();
  return {to_host(norm)[0], to_host(seen), to_host(coeffs), to_host(count)[0]};
}

TEST(GradNorm, NormCountAndBookkeepingInOneKernel) {
  std::mt19937 gen(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> g(100003);
  for (float& x : g) x = d(gen);
  long double ss = 0;
  for (float x : g) ss += (long double)x * x;
  const double want = double(std::sqrt(ss));
  const NormRun r = run_grad_norm(g, false);
  EXPECT_NEAR(r.norm, want, 1e-6 * want);
  EXPECT_EQ(r.seen[0], 1.0) << "after() runs once";
  EXPECT_EQ(r.seen[1], double(r.norm));
  EXPECT_EQ(r.count, 6);
  EXPECT_NEAR(r.coeffs[0], 1e-3 / (1.0 - std::pow(0.9, 6.0)), 1e-15);
  EXPECT_NEAR(r.coeffs[1], 1.0 / std::sqrt(1.0 - std::pow(0.999, 6.0)), 1e-12);
  // a learning rate in device memory (PPO's annealed one, under update graphs) replaces AdamArgs::lr
  EXPECT_NEAR(run_grad_norm(g, false, 3e-4).coeffs[0], 3e-4 / (1.0 - std::pow(0.9, 6.0)), 1e-15);
}

TEST(GradNorm, PoisonedOrNonFiniteGivesNaNAndNoCount) {
  std::vector<float> g(1000, 0.5f);
  const NormRun p = run_grad_norm(g, true);
  EXPECT_TRUE(std::isnan(p.norm));
  EXPECT_TRUE(std::isnan(p.seen[1]));
  EXPECT_EQ(p.count, 5);
  EXPECT_EQ(p.coeffs, std::vector<double>(2, 0.0));
  for (float bad : {std::nanf(""), INFINITY}) {
    g[417] = bad;
    const NormRun r = run_grad_norm(g, false);
    EXPECT_FALSE(std::isfinite(r.norm)) << bad;
    EXPECT_EQ(r.count, 5) << bad;
  }
}

TEST(GradNorm, LargeGradientsDoNotOverflow) {
  // Squares summed in double: float gradients of 1e20 (squares beyond float's range) keep a finite norm.
  const std::vector<float> g(64, 1e20f);
  const NormRun r = run_grad_norm(g, false);
  EXPECT_NEAR(r.norm, 8e20, 8e20 * 1e-6);
  EXPECT_EQ(r.count, 6);
}

}  // namespace
}  // namespace gmi::optim
