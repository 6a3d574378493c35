// sample_actions: many envs with identical policy outputs give independent draws, so the
// empirical distribution over envs must match the policy (within 5 standard errors: the draws
// are deterministic in the seed, so these bounds pass or fail reproducibly); logp must be the
// log-density of the returned action under the policy; env actions are the clipped actions;
// values are copied; draws are deterministic, change with the step, and depend on the global
// env index only (not on how envs are split across ranks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/rl/sample.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

constexpr double kLog2Pi = 1.83787706640934548356;

struct Outputs {
  std::vector<float> actions, env_actions, logp, values;
};

/// Runs sample_actions for N envs whose policy outputs are `per_env` repeated.
struct Sampler {
  int N, num_actions, act_dim;
  std::vector<float> actor_out, log_std, low, high, critic;
  std::vector<int> nvec;  ///< MultiDiscrete groups (act_dim of them)
  bool deterministic = false;

  Sampler(int N_, int na, int ad, std::vector<float> per_env, std::vector<float> ls = {},
          std::vector<float> lo = {}, std::vector<float> hi = {})
      : N(N_), num_actions(na), act_dim(ad), log_std(ls), low(lo), high(hi) {
    for (int i = 0; i < N; ++i) actor_out.insert(actor_out.end(), per_env.begin(), per_env.end());
    for (int i = 0; i < N; ++i) critic.push_back(float(i % 97) * 0.25f - 3.0f);
  }

  Outputs run(std::uint64_t seed, std::uint64_t step, std::uint64_t env_offset = 0,
              bool clip_actions = true, bool alias_env_actions = false) const {
    const int per = act_dim;
    auto y = to_device(actor_out), c = to_device(critic);
    View1<float> ls("ls", std::max<std::size_t>(1, log_std.size())),
        lo("lo", std::max<std::size_t>(1, low.size())), hi("hi", std::max<std::size_t>(1, high.size()));
    if (!log_std.empty()) ls = to_device(log_std);
    if (!low.empty()) lo = to_device(low), hi = to_device(high);
    View1<float> act("act", std::size_t(N) * per), env("env", std::size_t(N) * per),
        logp("logp", N), val("val", N);
    SampleArgs a;
    a.N = N;
    a.num_actions = num_actions;
    a.categories = categories(nvec, "test");
    a.act_dim = act_dim;
    a.seed = seed;
    a.step = step;
    a.env_offset = env_offset;
    a.clip_actions = clip_actions;
    a.deterministic = deterministic;
    a.actor_out = y.data();
    a.log_std = ls.data();
    a.act_low = lo.data();
    a.act_high = hi.data();
    a.critic_out = c.data();
    a.actions = act.data();
    a.env_actions = alias_env_actions ? act.data() : env.data();
    a.logp = logp.data();
    a.values = val.data();
    ExecSpace space;
    sample_actions(space, a);
    space.fence();
    Outputs o{to_host(act), to_host(alias_env_actions ? act : env), to_host(logp), to_host(val)};
    return o;
  }
};

TEST(SampleActions, CategoricalFrequenciesAndLogp) {
  const std::vector<float> logits = {0.5f, -1.0f, 1.2f, 0.0f, -3.0f};
  const int K = int(logits.size()), N = 200000;
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  const Sampler s(N, K, 1, logits);
  for (bool alias : {false, true}) {
    SCOPED_TRACE(alias ? "env_actions == actions" : "separate env_actions");
    const auto o = s.run(7, 1234, 0, true, alias);
    std::vector<double> count(K, 0);
    for (int i = 0; i < N; ++i) {
      const float a = o.actions[i];
      ASSERT_EQ(a, std::floor(a));
      ASSERT_GE(a, 0.0f);
      ASSERT_LT(a, float(K));
      ASSERT_EQ(o.env_actions[i], a);
      count[int(a)] += 1;
      // log softmax in double from the same float logits; the kernel's float lse is ~1e-7 off.
      const double ref = double(logits[int(a)]) - std::log(z);
      ASSERT_NEAR(o.logp[i], ref, 1e-6) << "env " << i;
      ASSERT_EQ(o.values[i], s.critic[i]);
    }
    for (int j = 0; j < K; ++j) {
      const double p = std::exp(double(logits[j])) / z;
      const double se = std::sqrt(p * (1 - p) / N);
      EXPECT_NEAR(count[j] / N, p, 5 * se) << "action " << j;
    }
  }
}

// MultiDiscrete: one index per group from its own softmax (six groups: two Philox blocks), the
// groups independent of each other, log pi the sum of the groups'; deterministic: each group's
// argmax.
TEST(SampleActions, MultiDiscreteGroupsAreIndependentSoftmaxes) {
  const std::vector<int> nvec = {3, 2, 5, 1, 4, 2};
  const std::vector<float> logits = {0.5f, -1.0f, 1.2f, 0.3f, 0.0f, -0.2f, 1.5f, 0.1f, -2.0f, 0.7f,
                                     0.4f, 1.1f, -0.6f, 0.2f, 0.0f, 2.0f, -1.0f};
  const int G = int(nvec.size()), N = 200000;
  std::vector<int> at(G, 0);
  std::vector<double> z(G, 0);
  for (int g = 0; g < G; ++g) {
    at[g] = g ? at[g - 1] + nvec[g - 1] : 0;
    for (int j = 0; j < nvec[g]; ++j) z[g] += std::exp(double(logits[at[g] + j]));
  }
  auto p = [&](int g, int j) { return std::exp(double(logits[at[g] + j])) / z[g]; };
  Sampler s(N, int(logits.size()), G, logits);
  s.nvec = nvec;
  const auto o = s.run(11, 77);
  std::vector<std::vector<double>> count(G);
  for (int g = 0; g < G; ++g) count[g].assign(nvec[g], 0);
  std::vector<double> joint(3 * 4, 0);  // groups 0 and 4: different Philox blocks
  std::vector<double> lanes(3 * 2, 0);  // groups 0 and 1: lanes 0 and 1 of one block
  for (int i = 0; i < N; ++i) {
    double ref = 0;
    for (int g = 0; g < G; ++g) {
      const float a = o.actions[std::size_t(i) * G + g];
      ASSERT_EQ(a, std::floor(a));
      ASSERT_GE(a, 0.0f);
      ASSERT_LT(a, float(nvec[g]));
      ASSERT_EQ(o.env_actions[std::size_t(i) * G + g], a);
      count[g][int(a)] += 1;
      ref += std::log(p(g, int(a)));
    }
    joint[int(o.actions[std::size_t(i) * G]) * 4 + int(o.actions[std::size_t(i) * G + 4])] += 1;
    lanes[int(o.actions[std::size_t(i) * G]) * 2 + int(o.actions[std::size_t(i) * G + 1])] += 1;
    ASSERT_NEAR(o.logp[i], ref, 1e-5) << "env " << i;
  }
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < nvec[g]; ++j) {
      const double se = std::sqrt(p(g, j) * (1 - p(g, j)) / N);
      EXPECT_NEAR(count[g][j] / N, p(g, j), 5 * se + 1e-12) << "group " << g << " action " << j;
    }
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 4; ++b) {
      const double q = p(0, a) * p(4, b), se = std::sqrt(q * (1 - q) / N);
      EXPECT_NEAR(joint[a * 4 + b] / N, q, 5 * se) << "groups 0 and 4: " << a << ", " << b;
    }
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 2; ++b) {
      const double q = p(0, a) * p(1, b), se = std::sqrt(q * (1 - q) / N);
      EXPECT_NEAR(lanes[a * 2 + b] / N, q, 5 * se) << "groups 0 and 1: " << a << ", " << b;
    }
  Sampler d(4, int(logits.size()), G, logits);
  d.nvec = nvec;
  d.deterministic = true;
  const auto m = d.run(11, 77);
  const std::vector<float> mode = {2, 0, 1, 0, 0, 0};  // each group's largest logit
  for (int i = 0; i < 4; ++i)
    for (int g = 0; g < G; ++g) EXPECT_EQ(m.actions[std::size_t(i) * G + g], mode[g]) << "group " << g;
}

TEST(SampleActions, GaussianMomentsLogpAndClipping) {
  // Five dimensions: two Philox blocks of four normals each (the second only partly used).
  const std::vector<float> mean = {0.3f, -1.0f, 2.0f, 0.0f, 0.5f};
  const std::vector<float> log_std = {-0.5f, 0.0f, 0.3f, -1.0f, 0.2f};
  const std::vector<float> low(5, -1.0f), high(5, 1.0f);
  const int D = 5, N = 200000;
  const Sampler s(N, 0, D, mean, log_std, low, high);
  const auto o = s.run(11, 77);
  std::vector<double> sum(D, 0), sum2(D, 0), within1(D, 0), zs(std::size_t(N) * D);
  int clipped = 0;
  for (int i = 0; i < N; ++i) {
    double ref_logp = 0, zz = 0;
    for (int j = 0; j < D; ++j) {
      const std::size_t q = std::size_t(i) * D + j;
      const double a = o.actions[q];
      const double sd = std::exp(double(log_std[j]));
      const double z = (a - mean[j]) / sd;
      zs[q] = z;
      sum[j] += a;
      sum2[j] += (a - mean[j]) * (a - mean[j]);
      within1[j] += std::fabs(z) < 1;
      zz += z * z;
      ref_logp += -0.5 * z * z - std::log(sd) - 0.5 * kLog2Pi;
      const float want = std::min(std::max(o.actions[q], low[j]), high[j]);
      ASSERT_EQ(o.env_actions[q], want) << "env " << i << " dim " << j;
      clipped += o.env_actions[q] != o.actions[q];
    }
    // The action is rounded to float (relative 6e-8), so z carries ~1e-6 error at |a| ~ 10.
    ASSERT_NEAR(o.logp[i], ref_logp, 2e-5 * (1 + zz)) << "env " << i;
    ASSERT_EQ(o.values[i], s.critic[i]);
  }
  EXPECT_GT(clipped, N / 2);
  for (int j = 0; j < D; ++j) {
    SCOPED_TRACE(::testing::Message() << "dim " << j);
    const double sd = std::exp(double(log_std[j]));
    EXPECT_NEAR(sum[j] / N, mean[j], 5 * sd / std::sqrt(double(N)));
    // Standard deviation about the known mean: SE of the sample sd is sd / sqrt(2N).
    EXPECT_NEAR(std::sqrt(sum2[j] / N), sd, 5 * sd / std::sqrt(2.0 * N));
    // Shape, not only moments: P(|z| < 1) = 0.682689...
    const double p1 = 0.6826894921370859;
    EXPECT_NEAR(within1[j] / N, p1, 5 * std::sqrt(p1 * (1 - p1) / N));
  }
  // Dimensions are independent: every pair, i.e. within a Box-Muller pair (0,1), across pairs
  // of one Philox draw (0,2), across Philox blocks (3,4).  The SE of a sample correlation at 0
  // is 1/sqrt(N).
  for (int j = 0; j < D; ++j)
    for (int k = j + 1; k < D; ++k) {
      double c = 0, a2 = 0, b2 = 0;
      for (int i = 0; i < N; ++i) {
        const double x = zs[std::size_t(i) * D + j], y = zs[std::size_t(i) * D + k];
        c += x * y, a2 += x * x, b2 += y * y;
      }
      EXPECT_LT(std::fabs(c / std::sqrt(a2 * b2)), 5 / std::sqrt(double(N))) << "dims " << j << "," << k;
    }

  // Without clipping the env receives the action as sampled.
  const auto u = Sampler(1000, 0, D, mean, log_std, low, high).run(11, 77, 0, false);
  EXPECT_EQ(u.env_actions, u.actions);
}

TEST(SampleActions, DeterministicPerStepAndGlobalEnvIndex) {
  const std::vector<float> logits = {0.1f, 0.2f, -0.3f};
  const std::vector<float> mean = {0.0f, 1.0f, -1.0f}, ls = {0.0f, -0.5f, 0.5f};
  const std::vector<float> lo(3, -2.0f), hi(3, 2.0f);
  const Sampler cat(2000, 3, 1, logits), gau(2000, 0, 3, mean, ls, lo, hi);
  for (const Sampler* s : {&cat, &gau}) {
    SCOPED_TRACE(s->num_actions > 0 ? "categorical" : "gaussian");
    const auto a = s->run(5, 10), b = s->run(5, 10);
    EXPECT_EQ(a.actions, b.actions);
    EXPECT_EQ(a.logp, b.logp);
    auto frac_diff = [](const std::vector<float>& x, const std::vector<float>& y) {
      std::size_t d = 0;
      for (std::size_t i = 0; i < x.size(); ++i) d += x[i] != y[i];
      return double(d) / double(x.size());
    };
    // Another step or seed: fresh draws (categorical over 3 actions: ~2/3 differ).
    const double expect = s->num_actions > 0 ? 0.5 : 0.999;
    EXPECT_GT(frac_diff(a.actions, s->run(5, 11).actions), expect);
    EXPECT_GT(frac_diff(a.actions, s->run(6, 10).actions), expect);
    // Rank layout: envs [1000, 2000) sampled as a second rank with env_offset 1000 draw what
    // they draw as part of one rank.
    Sampler half = *s;
    half.N = 1000;
    half.actor_out.resize(half.actor_out.size() / 2);
    half.critic.assign(s->critic.begin() + 1000, s->critic.end());
    const auto h = half.run(5, 10, 1000);
    const std::size_t per = s->num_actions > 0 ? 1 : 3;
    EXPECT_TRUE(std::equal(h.actions.begin(), h.actions.end(), a.actions.begin() + 1000 * per));
    EXPECT_TRUE(std::equal(h.logp.begin(), h.logp.end(), a.logp.begin() + 1000));
  }
}

}  // namespace
}  // namespace gmi::rl
