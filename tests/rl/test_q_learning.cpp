// DQN's kernels (kernels/rl/q_learning.hpp) against an independent host implementation of
// CleanRL's dqn.py loss, written from its code:
//   target_max = target_network(next_obs).max(dim=1)         (double DQN: the target network's
//                                                              value at the online argmax)
//   td_target  = rewards + gamma * target_max * (1 - dones)
//   old_val    = q_network(obs).gather(1, actions)
//   loss       = F.mse_loss(td_target, old_val)
// with the dueling head's Q = V + A - mean(A) (Wang et al. 2016, Eq. 9).  The kernel's gradient
// with respect to the network outputs is compared with central finite differences of the host
// loss in double precision; epsilon-greedy actions are checked for their mode and frequencies.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/rl/q_learning.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

struct Case {
  int B = 7, n = 3;
  bool dueling = false, double_q = false;
  double gamma = 0.9;
  std::vector<float> q, next_target, next_online, actions, rewards;
  std::vector<std::uint8_t> terminated;
};

Case make_case(bool dueling, bool double_q, unsigned seed) {
  Case c;
  c.dueling = dueling;
  c.double_q = double_q;
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const int out = dueling ? c.n + 1 : c.n;
  for (int i = 0; i < c.B * out; ++i) {
    c.q.push_back(u(g));
    c.next_target.push_back(u(g));
    c.next_online.push_back(u(g));
  }
  for (int i = 0; i < c.B; ++i) {
    c.actions.push_back(float(i % c.n));
    c.rewards.push_back(u(g));
    c.terminated.push_back(i % 3 == 0);
  }
  return c;
}

/// Q(s, a) from a row as the dueling paper defines it (or the row itself).
double host_q(const Case& c, const double* y, int a) {
  if (!c.dueling) return y[a];
  double mean = 0;
  for (int k = 0; k < c.n; ++k) mean += y[1 + k];
  return y[0] + y[1 + a] - mean / c.n;
}

int host_argmax(const Case& c, const double* y) {
  int best = 0;
  for (int a = 1; a < c.n; ++a)
    if (host_q(c, y, a) > host_q(c, y, best)) best = a;
  return best;
}

/// CleanRL's loss as a function of the online outputs q (the targets carry no gradient).
double host_loss(const Case& c, const std::vector<double>& q, double* q_sum = nullptr) {
  const int out = c.dueling ? c.n + 1 : c.n;
  double loss = 0, qs = 0;
  for (int i = 0; i < c.B; ++i) {
    std::vector<double> nt(c.next_target.begin() + i * out, c.next_target.begin() + (i + 1) * out);
    std::vector<double> no(c.next_online.begin() + i * out, c.next_online.begin() + (i + 1) * out);
    const int a_star = host_argmax(c, c.double_q ? no.data() : nt.data());
    const double y = c.rewards[i] + c.gamma * host_q(c, nt.data(), a_star) * (1 - c.terminated[i]);
    const double old = host_q(c, q.data() + i * out, int(c.actions[i]));
    loss += (y - old) * (y - old) / c.B;
    qs += old;
  }
  if (q_sum) *q_sum = qs;
  return loss;
}

void check_gradient(const Case& c) {
  const int out = c.dueling ? c.n + 1 : c.n;
  auto q = to_device(c.q), nt = to_device(c.next_target), no = to_device(c.next_online), act = to_device(c.actions),
       rew = to_device(c.rewards);
  auto term = to_device(c.terminated);
  View1<float> d("d", c.q.size());
  View1<Sums4> stats("stats", 1);
  DqnLossArgs a;
  a.B = c.B;
  a.num_actions = c.n;
  a.dueling = c.dueling;
  a.double_q = c.double_q;
  a.gamma = float(c.gamma);
  a.q_out = q.data();
  a.next_target = nt.data();
  a.next_online = no.data();
  a.actions = act.data();
  a.rewards = rew.data();
  a.terminated = term.data();
  a.d_out = d.data();
  dqn_loss(ExecSpace(), a, stats.data());
  const auto grad = to_host(d);
  const Sums4 s = to_host(stats)[0];
  std::vector<double> qd(c.q.begin(), c.q.end());
  double q_sum = 0;
  const double loss = host_loss(c, qd, &q_sum);
  EXPECT_NEAR(s.v[0] / c.B, loss, 1e-4 * (1 + loss)) << "mean squared TD error";
  EXPECT_NEAR(s.v[1], q_sum, 1e-4 * (1 + std::fabs(q_sum))) << "sum of Q(s, a)";
  for (int k = 0; k < c.B * out; ++k) {
    const double h = 1e-4;
    std::vector<double> p = qd, m = qd;
    p[k] += h;
    m[k] -= h;
    const double fd = (host_loss(c, p) - host_loss(c, m)) / (2 * h);
    EXPECT_NEAR(grad[k], fd, 1e-4 + 1e-3 * std::fabs(fd)) << "output " << k;
  }
}

TEST(DqnLoss, GradientMatchesFiniteDifferences) {
  for (bool dueling : {false, true})
    for (bool double_q : {false, true}) {
      SCOPED_TRACE(std::string("dueling ") + (dueling ? "on" : "off") + ", double " + (double_q ? "on" : "off"));
      check_gradient(make_case(dueling, double_q, 3 + 2 * dueling + double_q));
    }
}

TEST(DqnLoss, DoubleDqnValuesTheOnlineArgmaxWithTheTarget) {
  // One sample: the target network prefers action 0, the online one action 1.
  Case c;
  c.B = 1;
  c.n = 2;
  c.gamma = 0.5;
  c.q = {0.0f, 0.0f};
  c.next_target = {10.0f, 4.0f};
  c.next_online = {1.0f, 3.0f};
  c.actions = {0.0f};
  c.rewards = {1.0f};
  c.terminated = {0};
  for (bool double_q : {false, true}) {
    c.double_q = double_q;
    auto q = to_device(c.q), nt = to_device(c.next_target), no = to_device(c.next_online),
         act = to_device(c.actions), rew = to_device(c.rewards);
    auto term = to_device(c.terminated);
    View1<float> d("d", 2);
    View1<Sums4> stats("stats", 1);
    DqnLossArgs a;
    a.B = 1;
    a.num_actions = 2;
    a.double_q = double_q;
    a.gamma = 0.5f;
    a.q_out = q.data();
    a.next_target = nt.data();
    a.next_online = no.data();
    a.actions = act.data();
    a.rewards = rew.data();
    a.terminated = term.data();
    a.d_out = d.data();
    dqn_loss(ExecSpace(), a, stats.data());
    // y = 1 + 0.5 * (DQN: max target 10 | double: target at online argmax 1 = 4)
    EXPECT_FLOAT_EQ(float(to_host(stats)[0].v[2]), double_q ? 3.0f : 6.0f);
  }
}

TEST(EpsilonGreedy, GreedyAtZeroUniformAtOneAndReproducible) {
  const int N = 20000, n = 4;
  std::vector<float> q(std::size_t(N) * n, 0.0f);
  for (int i = 0; i < N; ++i) q[std::size_t(i) * n + (i % n)] = 1.0f;  // greedy action i % n
  auto qd = to_device(q);
  View1<float> acts("acts", N);
  EpsilonGreedyArgs a;
  a.N = N;
  a.num_actions = n;
  a.seed = 7;
  a.step = 3;
  a.q_out = qd.data();
  a.actions = acts.data();
  a.epsilon = 0.0f;
  epsilon_greedy(ExecSpace(), a);
  auto h = to_host(acts);
  for (int i = 0; i < N; ++i) ASSERT_EQ(int(h[i]), i % n);
  a.epsilon = 1.0f;
  epsilon_greedy(ExecSpace(), a);
  h = to_host(acts);
  std::vector<int> count(n, 0);
  for (float x : h) {
    ASSERT_TRUE(x >= 0 && x < n && x == std::floor(x));
    ++count[int(x)];
  }
  for (int k = 0; k < n; ++k) EXPECT_NEAR(count[k], N / n, 5 * std::sqrt(N / n)) << "action " << k;
  epsilon_greedy(ExecSpace(), a);
  EXPECT_EQ(to_host(acts), h) << "same seed and step, same actions";
  a.epsilon = 0.25f;
  epsilon_greedy(ExecSpace(), a);
  h = to_host(acts);
  int greedy = 0;
  for (int i = 0; i < N; ++i) greedy += int(h[i]) == i % n;
  // greedy with probability 1 - eps + eps / n
  EXPECT_NEAR(greedy / double(N), 0.75 + 0.25 / n, 0.02);
}

TEST(EpsilonGreedy, DuelingArgmaxIgnoresTheValue) {
  // rows [V, A0, A1, A2]: the argmax of Q is the argmax of A whatever V is
  std::vector<float> q = {100.0f, 0.1f, 0.3f, 0.2f, -100.0f, 0.5f, 0.1f, 0.0f};
  auto qd = to_device(q);
  View1<float> acts("acts", 2);
  EpsilonGreedyArgs a;
  a.N = 2;
  a.num_actions = 3;
  a.dueling = true;
  a.q_out = qd.data();
  a.actions = acts.data();
  epsilon_greedy(ExecSpace(), a);
  const auto h = to_host(acts);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], 0.0f);
}

}  // namespace
}  // namespace gmi::rl
