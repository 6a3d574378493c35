// SAC's kernels (kernels/rl/sac_loss.hpp) against an independent host implementation of CleanRL's
// sac_continuous_action.py, written from its code:
//   log_std = LOG_STD_MIN + 0.5 (LOG_STD_MAX - LOG_STD_MIN) (tanh(raw) + 1)
//   x_t = normal.rsample(); y_t = tanh(x_t); action = y_t * scale + bias
//   log_prob = normal.log_prob(x_t) - log(scale (1 - y_t^2) + 1e-6), summed over dimensions
//   qf_loss = mse(qf1(s, a), y) + mse(qf2(s, a), y),
//             y = r + (1 - d) gamma (min(qf1_t, qf2_t)(s', a') - alpha log pi(a'|s'))
//   actor_loss = (alpha log_pi - min(qf1(s, pi), qf2(s, pi))).mean()
//   alpha_loss = (-exp(log_alpha) (log_pi + target_entropy)).mean()
// The actor loss's gradient with respect to the actor's outputs (through the reparameterised
// sample, with the noise the kernel drew held fixed, and through Q networks that are linear in the
// action here) and the alpha and critic gradients are compared with central finite differences of
// the host losses in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/rl/sac_loss.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

constexpr double kLog2Pi = 1.83787706640934548356;

double host_log_std(double raw) { return -5.0 + 0.5 * 7.0 * (std::tanh(raw) + 1.0); }

/// log pi and the action of one row, from the actor's outputs and a fixed noise z.
double host_logp(const double* out, const float* z, const std::vector<float>& scale, const std::vector<float>& bias,
                 int A, double* action = nullptr) {
  double lp = 0;
  for (int j = 0; j < A; ++j) {
    const double mean = out[j], log_std = host_log_std(out[A + j]), sd = std::exp(log_std);
    const double x = mean + sd * z[j];
    const double y = std::tanh(x);
    if (action) action[j] = y * scale[j] + bias[j];
    lp += -0.5 * std::pow((x - mean) / sd, 2) - log_std - 0.5 * kLog2Pi - std::log(scale[j] * (1 - y * y) + 1e-6);
  }
  return lp;
}

struct Policy {
  int B = 6, A = 3;
  std::vector<float> out, scale = {1.0f, 2.0f, 0.5f}, bias = {0.0f, -1.0f, 0.25f};
};

Policy make_policy(unsigned seed) {
  Policy p;
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < p.B * 2 * p.A; ++i) p.out.push_back(u(g));
  return p;
}

/// Runs squashed_gaussian on p; returns actions, logp and noise.
void sample(const Policy& p, bool deterministic, std::vector<float>& actions, std::vector<float>& logp,
            std::vector<float>& noise) {
  auto out = to_device(p.out), sc = to_device(p.scale), bi = to_device(p.bias);
  View1<float> a("a", p.B * p.A), lp("lp", p.B), z("z", p.B * p.A);
  SquashedGaussianArgs s;
  s.B = p.B;
  s.act_dim = p.A;
  s.deterministic = deterministic;
  s.seed = 11;
  s.counter = 5 << 8;
  s.stream = rng::kPolicyNoise;
  s.index = 0;
  s.actor_out = out.data();
  s.scale = sc.data();
  s.bias = bi.data();
  s.actions = a.data();
  s.logp = lp.data();
  s.noise = z.data();
  squashed_gaussian(ExecSpace(), s);
  actions = to_host(a);
  logp = to_host(lp);
  noise = to_host(z);
}

TEST(SquashedGaussian, LogProbabilityAndActionMatchTheTransformedGaussian) {
  const Policy p = make_policy(1);
  std::vector<float> a, lp, z;
  sample(p, false, a, lp, z);
  for (int i = 0; i < p.B; ++i) {
    std::vector<double> out(p.out.begin() + i * 2 * p.A, p.out.begin() + (i + 1) * 2 * p.A);
    double act[3];
    const double ref = host_logp(out.data(), z.data() + i * p.A, p.scale, p.bias, p.A, act);
    EXPECT_NEAR(lp[i], ref, 1e-4 * (1 + std::fabs(ref))) << "row " << i;
    for (int j = 0; j < p.A; ++j) {
      EXPECT_NEAR(a[i * p.A + j], act[j], 1e-5) << "row " << i << " dim " << j;
      EXPECT_LE(std::fabs(a[i * p.A + j] - p.bias[j]), p.scale[j]) << "inside the action space";
    }
  }
  std::vector<float> a2, lp2, z2;
  sample(p, false, a2, lp2, z2);
  EXPECT_EQ(a, a2) << "same counters, same sample";
  sample(p, true, a2, lp2, z2);
  for (int i = 0; i < p.B; ++i)
    for (int j = 0; j < p.A; ++j)
      EXPECT_NEAR(a2[i * p.A + j], std::tanh(p.out[i * 2 * p.A + j]) * p.scale[j] + p.bias[j], 1e-6);
}

TEST(SquashedGaussian, NoiseIsStandardNormal) {
  Policy p;
  p.B = 20000;
  p.A = 5;
  p.out.assign(std::size_t(p.B) * 2 * p.A, 0.0f);
  p.scale.assign(5, 1.0f);
  p.bias.assign(5, 0.0f);
  std::vector<float> a, lp, z;
  sample(p, false, a, lp, z);
  for (int j = 0; j < p.A; ++j) {
    double m = 0, v = 0;
    for (int i = 0; i < p.B; ++i) m += z[i * p.A + j];
    m /= p.B;
    for (int i = 0; i < p.B; ++i) v += std::pow(z[i * p.A + j] - m, 2);
    v /= p.B;
    EXPECT_NEAR(m, 0.0, 0.03) << "dim " << j;
    EXPECT_NEAR(v, 1.0, 0.04) << "dim " << j;
  }
}

TEST(SacActorLoss, GradientMatchesFiniteDifferences) {
  // Q_k(s, a) = c_k . a + d_k per row: linear in the action, so dQ_k/da = c_k exactly; d_k keeps
  // the two apart, so min() picks Q1 on some rows and Q2 on others, far from a tie.
  const Policy p = make_policy(2);
  const int B = p.B, A = p.A, od = 2, in = od + A;
  const double log_alpha = -0.7;
  std::vector<float> act, lp, z;
  sample(p, false, act, lp, z);
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<double> c1(B * A), c2(B * A), d1(B), d2(B);
  for (int i = 0; i < B * A; ++i) c1[i] = u(g), c2[i] = u(g);
  for (int i = 0; i < B; ++i) d1[i] = i % 2 ? 10.0 : -10.0, d2[i] = 0.0;
  auto q_of = [&](const std::vector<double>& c, const std::vector<double>& d, const double* a, int i) {
    double q = d[i];
    for (int j = 0; j < A; ++j) q += c[i * A + j] * a[j];
    return q;
  };
  auto loss = [&](const std::vector<double>& out) {
    double L = 0;
    for (int i = 0; i < B; ++i) {
      double a[3];
      const double l = host_logp(out.data() + i * 2 * A, z.data() + i * A, p.scale, p.bias, A, a);
      L += (std::exp(log_alpha) * l - std::min(q_of(c1, d1, a, i), q_of(c2, d2, a, i))) / B;
    }
    return L;
  };
  // The kernels: Q values at the sampled actions, the min's gradient, then dL/d(actor outputs).
  std::vector<float> q1(B), q2(B);
  for (int i = 0; i < B; ++i) {
    const double a[3] = {act[i * A], act[i * A + 1], act[i * A + 2]};
    q1[i] = float(q_of(c1, d1, a, i));
    q2[i] = float(q_of(c2, d2, a, i));
  }
  auto dq1 = to_device(q1), dq2 = to_device(q2), dlp = to_device(lp), dz = to_device(z), out = to_device(p.out),
       sc = to_device(p.scale);
  auto la = to_device(std::vector<float>{float(log_alpha)});
  View1<float> gq1("gq1", B), gq2("gq2", B), dqin1("dqin1", B * in), dqin2("dqin2", B * in), dout("dout", B * 2 * A);
  View1<Sums4> stats("stats", 1);
  SacActorArgs s;
  s.B = B;
  s.act_dim = A;
  s.obs_dim = od;
  s.log_alpha = la.data();
  s.actor_out = out.data();
  s.noise = dz.data();
  s.scale = sc.data();
  s.q1 = dq1.data();
  s.q2 = dq2.data();
  s.logp = dlp.data();
  s.d_q1 = gq1.data();
  s.d_q2 = gq2.data();
  s.d_qin1 = dqin1.data();
  s.d_qin2 = dqin2.data();
  s.d_actor_out = dout.data();
  sac_actor_q_grad(ExecSpace(), s, stats.data());
  // What the Q networks' backward pass gives for linear Qs: dL/d(input) = dL/dQ * (0 | c).
  const auto g1 = to_host(gq1), g2 = to_host(gq2);
  std::vector<float> in1(B * in, 0.0f), in2(B * in, 0.0f);
  for (int i = 0; i < B; ++i)
    for (int j = 0; j < A; ++j) {
      in1[i * in + od + j] = float(g1[i] * c1[i * A + j]);
      in2[i * in + od + j] = float(g2[i] * c2[i * A + j]);
    }
  Kokkos::deep_copy(dqin1, to_device(in1));
  Kokkos::deep_copy(dqin2, to_device(in2));
  sac_actor_out_grad(ExecSpace(), s);
  const auto grad = to_host(dout);
  std::vector<double> o(p.out.begin(), p.out.end());
  EXPECT_NEAR(to_host(stats)[0].v[0] / B, loss(o), 1e-4) << "actor loss";
  for (int k = 0; k < B * 2 * A; ++k) {
    const double h = 1e-4;
    std::vector<double> pp = o, mm = o;
    pp[k] += h;
    mm[k] -= h;
    const double fd = (loss(pp) - loss(mm)) / (2 * h);
    EXPECT_NEAR(grad[k], fd, 2e-4 + 2e-3 * std::fabs(fd)) << "output " << k << (k % (2 * A) < A ? " (mean)" : " (log-std)");
  }
}

TEST(SacActorLoss, MinimumSplitsItsGradientOnATie) {
  // torch.min(a, b) (torch.minimum) sends the gradient to the smaller input and half to each
  // when they are equal; the loss's sum uses the minimum.
  const int B = 4;
  const std::vector<float> q1 = {1.0f, 2.0f, 3.0f, -0.5f}, q2 = {1.0f, 1.5f, 4.0f, -0.5f}, lp = {0, 0, 0, 0};
  auto dq1 = to_device(q1), dq2 = to_device(q2), dlp = to_device(lp);
  auto la = to_device(std::vector<float>{0.0f});
  View1<float> g1("g1", B), g2("g2", B);
  View1<Sums4> stats("stats", 1);
  SacActorArgs a;
  a.B = B;
  a.log_alpha = la.data();
  a.q1 = dq1.data();
  a.q2 = dq2.data();
  a.logp = dlp.data();
  a.d_q1 = g1.data();
  a.d_q2 = g2.data();
  sac_actor_q_grad(ExecSpace(), a, stats.data());
  const auto h1 = to_host(g1), h2 = to_host(g2);
  const float g = -1.0f / B;
  EXPECT_EQ(h1, (std::vector<float>{0.5f * g, 0.0f, g, 0.5f * g}));
  EXPECT_EQ(h2, (std::vector<float>{0.5f * g, g, 0.0f, 0.5f * g}));
  EXPECT_DOUBLE_EQ(to_host(stats)[0].v[0], -(1.0 + 1.5 + 3.0 - 0.5));
}

TEST(SacCriticLoss, TargetAndGradient) {
  const int B = 5;
  std::mt19937 g(9);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> q1(B), q2(B), q1n(B), q2n(B), lpn(B), r(B);
  std::vector<std::uint8_t> d(B);
  for (int i = 0; i < B; ++i) q1[i] = u(g), q2[i] = u(g), q1n[i] = u(g), q2n[i] = u(g), lpn[i] = u(g), r[i] = u(g), d[i] = i == 2;
  const double gamma = 0.97, log_alpha = 0.3;
  auto loss = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double L = 0;
    for (int i = 0; i < B; ++i) {
      const double y = r[i] + (1 - d[i]) * gamma * (std::min<double>(q1n[i], q2n[i]) - std::exp(log_alpha) * lpn[i]);
      L += ((a[i] - y) * (a[i] - y) + (b[i] - y) * (b[i] - y)) / B;
    }
    return L;
  };
  auto Q1 = to_device(q1), Q2 = to_device(q2), Q1n = to_device(q1n), Q2n = to_device(q2n), LP = to_device(lpn),
       R = to_device(r);
  auto D = to_device(d);
  auto la = to_device(std::vector<float>{float(log_alpha)});
  View1<float> g1("g1", B), g2("g2", B);
  View1<Sums4> stats("stats", 1);
  SacCriticArgs c;
  c.B = B;
  c.gamma = float(gamma);
  c.log_alpha = la.data();
  c.q1 = Q1.data();
  c.q2 = Q2.data();
  c.q1_next = Q1n.data();
  c.q2_next = Q2n.data();
  c.logp_next = LP.data();
  c.rewards = R.data();
  c.terminated = D.data();
  c.d_q1 = g1.data();
  c.d_q2 = g2.data();
  sac_critic_loss(ExecSpace(), c, stats.data());
  const auto h1 = to_host(g1), h2 = to_host(g2);
  const Sums4 s = to_host(stats)[0];
  std::vector<double> a(q1.begin(), q1.end()), b(q2.begin(), q2.end());
  EXPECT_NEAR((s.v[0] + s.v[1]) / B, loss(a, b), 1e-4);
  for (int i = 0; i < B; ++i) {
    const double h = 1e-4;
    auto ap = a, am = a, bp = b, bm = b;
    ap[i] += h, am[i] -= h, bp[i] += h, bm[i] -= h;
    EXPECT_NEAR(h1[i], (loss(ap, b) - loss(am, b)) / (2 * h), 1e-4) << "dL/dQ1 row " << i;
    EXPECT_NEAR(h2[i], (loss(a, bp) - loss(a, bm)) / (2 * h), 1e-4) << "dL/dQ2 row " << i;
  }
}

TEST(SacAlphaLoss, GradientMatchesFiniteDifferences) {
  const int B = 8;
  std::vector<float> lp = {-1.0f, 0.5f, -2.0f, 0.1f, -0.3f, 1.2f, -0.7f, 0.0f};
  const double H = -3.0;
  for (double log_alpha : {-1.0, 0.0, 0.8}) {
    auto L = [&](double la) {
      double s = 0;
      for (float x : lp) s += -std::exp(la) * (x + H) / B;
      return s;
    };
    auto dlp = to_device(lp);
    auto la = to_device(std::vector<float>{float(log_alpha)});
    View1<float> grad("grad", 1);
    View1<Sums4> stats("stats", 1);
    sac_alpha_grad(ExecSpace(), B, dlp.data(), float(H), la.data(), grad.data(), stats.data());
    const double h = 1e-5, fd = (L(log_alpha + h) - L(log_alpha - h)) / (2 * h);
    EXPECT_NEAR(to_host(grad)[0], fd, 1e-4 * (1 + std::fabs(fd)));
    EXPECT_NEAR(to_host(stats)[0].v[0], L(log_alpha), 1e-5 * (1 + std::fabs(fd)));
  }
}

TEST(UniformActions, InsideBoundsAndReproducible) {
  const int N = 5000, A = 2;
  auto lo = to_device(std::vector<float>{-2.0f, 0.0f}), hi = to_device(std::vector<float>{2.0f, 0.5f});
  View1<float> a("a", N * A);
  uniform_actions(ExecSpace(), N, A, 3, 9, 100, lo.data(), hi.data(), a.data());
  const auto h = to_host(a);
  double m0 = 0;
  for (int i = 0; i < N; ++i) {
    ASSERT_GE(h[i * A], -2.0f);
    ASSERT_LT(h[i * A], 2.0f);
    ASSERT_GE(h[i * A + 1], 0.0f);
    ASSERT_LT(h[i * A + 1], 0.5f);
    m0 += h[i * A] / N;
  }
  EXPECT_NEAR(m0, 0.0, 0.1);
  uniform_actions(ExecSpace(), N, A, 3, 9, 100, lo.data(), hi.data(), a.data());
  EXPECT_EQ(to_host(a), h);
}

}  // namespace
}  // namespace gmi::rl
