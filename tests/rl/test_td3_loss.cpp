// TD3's kernels (kernels/rl/td3_loss.hpp) against an independent host implementation of CleanRL's
// td3_continuous_action.py, written from its code:
//   actor(s) = tanh(fc_mu(x)) * action_scale + action_bias
//   acting: actions = actor(s) + N(0, action_scale * exploration_noise), clipped to [low, high]
//   target: clipped_noise = (randn * policy_noise).clamp(-noise_clip, noise_clip) * action_scale
//           a' = (target_actor(s') + clipped_noise).clamp(low, high)
//   qf_loss = mse(qf1(s, a), y) + mse(qf2(s, a), y), y = r + (1 - d) gamma min(qf1_t, qf2_t)(s', a')
//   actor_loss = -qf1(s, actor(s)).mean()
// The actor loss's gradient with respect to mu (through a Q network linear in the action here) and
// the critic's are compared with central finite differences of the host losses in double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/rl/td3_loss.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

struct Rows {
  int B = 64, A = 3;
  std::vector<float> mu, scale = {1.0f, 2.0f, 0.5f}, bias = {0.0f, -1.0f, 0.25f}, low = {-1.0f, -3.0f, -0.25f},
                         high = {1.0f, 1.0f, 0.75f};
};

Rows make_rows(unsigned seed) {
  Rows r;
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int i = 0; i < r.B * r.A; ++i) r.mu.push_back(u(g));
  return r;
}

std::vector<float> run_actions(const Rows& r, float sigma, float clip, std::uint64_t counter) {
  auto mu = to_device(r.mu), scale = to_device(r.scale), bias = to_device(r.bias), low = to_device(r.low),
       high = to_device(r.high);
  View1<float> actions("actions", r.mu.size());
  Td3ActionArgs a;
  a.B = r.B;
  a.act_dim = r.A;
  a.sigma = sigma;
  a.clip = clip;
  a.seed = 7;
  a.counter = counter;
  a.index = 100;
  a.actor_out = mu.data();
  a.scale = scale.data();
  a.bias = bias.data();
  a.low = low.data();
  a.high = high.data();
  a.actions = actions.data();
  td3_actions(ExecSpace(), a);
  return to_host(actions);
}

TEST(Td3Loss, MeanActionIsTheScaledTanh) {
  const Rows r = make_rows(1);
  const auto a = run_actions(r, 0.0f, -1.0f, 0);
  for (int i = 0; i < r.B; ++i)
    for (int j = 0; j < r.A; ++j) {
      const double want = std::tanh(double(r.mu[i * r.A + j])) * r.scale[j] + r.bias[j];
      EXPECT_NEAR(a[i * r.A + j], want, 1e-6) << i << "," << j;
    }
}

TEST(Td3Loss, NoiseIsClippedScaledAndBounded) {
  const Rows r = make_rows(2);
  const auto mean = run_actions(r, 0.0f, -1.0f, 0);
  // target smoothing: noise clamp(z * 0.2, -0.5, 0.5) * scale, then the bounds
  const auto t = run_actions(r, 0.2f, 0.5f, 1 << 8);
  // exploration: z * 0.1 * scale unclipped, then the bounds
  const auto e = run_actions(r, 0.1f, -1.0f, 2 << 8);
  double moved = 0;
  for (int i = 0; i < r.B; ++i)
    for (int j = 0; j < r.A; ++j) {
      const int k = i * r.A + j;
      EXPECT_GE(t[k], r.low[j]);
      EXPECT_LE(t[k], r.high[j]);
      EXPECT_GE(e[k], r.low[j]);
      EXPECT_LE(e[k], r.high[j]);
      const double unclipped = std::tanh(double(r.mu[k])) * r.scale[j] + r.bias[j];
      // the clamped action lies within clip * scale of the mean action (clamping only moves it nearer)
      EXPECT_LE(std::fabs(t[k] - unclipped), 0.5 * r.scale[j] + 1e-6);
      moved += std::fabs(e[k] - mean[k]);
    }
  EXPECT_GT(moved, 0.0) << "exploration noise moved the actions";
  EXPECT_EQ(run_actions(r, 0.1f, -1.0f, 2 << 8), e) << "the same counter draws the same noise";
  EXPECT_NE(run_actions(r, 0.1f, -1.0f, 3 << 8), e) << "another counter draws other noise";
}

TEST(Td3Loss, ActorGradientMatchesFiniteDifferences) {
  // Q1(s, a) = c + sum_j w_ij a_j per row: the backward pass's dL/da is then w_ij times dL/dQ1 =
  // -1/B; the kernel turns it into dL/dmu.
  const Rows r = make_rows(3);
  const int B = r.B, A = r.A, od = 2, in = od + A;
  std::mt19937 g(9);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> w(std::size_t(B) * A);
  for (double& x : w) x = u(g);
  auto loss = [&](const std::vector<double>& mu) {
    double L = 0;
    for (int i = 0; i < B; ++i)
      for (int j = 0; j < A; ++j) L -= w[i * A + j] * (std::tanh(mu[i * A + j]) * r.scale[j] + r.bias[j]) / B;
    return L;
  };
  std::vector<float> dqin(std::size_t(B) * in, 0.0f);
  for (int i = 0; i < B; ++i)
    for (int j = 0; j < A; ++j) dqin[i * in + od + j] = float(-w[i * A + j] / B);
  auto mu = to_device(r.mu), scale = to_device(r.scale), dq = to_device(dqin);
  std::vector<float> q1h(B, 0.5f);
  auto q1 = to_device(q1h);
  View1<float> dq1("dq1", B), dout("dout", std::size_t(B) * A);
  View1<Sums4> stats("stats", 1);
  Td3ActorArgs s;
  s.B = B;
  s.act_dim = A;
  s.obs_dim = od;
  s.actor_out = mu.data();
  s.scale = scale.data();
  s.q1 = q1.data();
  s.d_q1 = dq1.data();
  s.d_qin = dq.data();
  s.d_actor_out = dout.data();
  td3_actor_q_grad(ExecSpace(), s, stats.data());
  td3_actor_out_grad(ExecSpace(), s);
  for (float v : to_host(dq1)) EXPECT_FLOAT_EQ(v, -1.0f / B);
  EXPECT_NEAR(to_host(stats)[0].v[0], -0.5 * B, 1e-9) << "sum of -Q1";
  const auto got = to_host(dout);
  std::vector<double> m(r.mu.begin(), r.mu.end());
  const double h = 1e-6;
  for (std::size_t k = 0; k < m.size(); ++k) {
    const double m0 = m[k];
    m[k] = m0 + h;
    const double lp = loss(m);
    m[k] = m0 - h;
    const double lm = loss(m);
    m[k] = m0;
    EXPECT_NEAR(got[k], (lp - lm) / (2 * h), 1e-6) << "dL/dmu[" << k << "]";
  }
}

TEST(Td3Loss, CriticTargetHasNoEntropyTerm) {
  // y = r + gamma (1 - d) min(Q1', Q2'); d/dQi of mse(Q1, y) + mse(Q2, y) = 2 (Qi - y) / B.
  const int B = 4;
  const std::vector<float> q1 = {1.0f, 2.0f, -1.0f, 0.5f}, q2 = {1.5f, 1.0f, -2.0f, 0.5f},
                           q1n = {0.5f, 3.0f, 1.0f, -1.0f}, q2n = {1.0f, 2.0f, 0.0f, -2.0f},
                           rew = {1.0f, 0.0f, -1.0f, 2.0f};
  const std::vector<std::uint8_t> term = {0, 1, 0, 0};
  auto Q1 = to_device(q1), Q2 = to_device(q2), N1 = to_device(q1n), N2 = to_device(q2n), R = to_device(rew);
  auto T = to_device(term);
  View1<float> d1("d1", B), d2("d2", B);
  View1<Sums4> stats("stats", 1);
  SacCriticArgs c;
  c.B = B;
  c.gamma = 0.9f;
  c.q1 = Q1.data();
  c.q2 = Q2.data();
  c.q1_next = N1.data();
  c.q2_next = N2.data();
  c.rewards = R.data();
  c.terminated = T.data();
  c.d_q1 = d1.data();
  c.d_q2 = d2.data();
  sac_critic_loss(ExecSpace(), c, stats.data());
  const auto g1 = to_host(d1), g2 = to_host(d2);
  for (int i = 0; i < B; ++i) {
    const double y = rew[i] + (term[i] ? 0.0 : 0.9 * std::min(q1n[i], q2n[i]));
    EXPECT_NEAR(g1[i], 2 * (q1[i] - y) / B, 1e-6);
    EXPECT_NEAR(g2[i], 2 * (q2[i] - y) / B, 1e-6);
  }
}

}  // namespace
}  // namespace gmi::rl
