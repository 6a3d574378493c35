// vtrace() against the paper's definition (Espeholt et al. 2018, eq. 1: the n-step sum, not the
// recursion the kernel runs), evaluated on the host in double with episode ends cutting the sum;
// on-policy against gae() (an independent kernel, itself tested against CleanRL's loop); and
// action_logp() against host log-softmax and Gaussian densities.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/rl/gae.hpp"
#include "kernels/rl/vtrace.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

struct Trajectories {
  int T, N;
  std::vector<float> rewards, values, bootstrap, logp, behaviour_logp;
  std::vector<std::uint8_t> done;
};

Trajectories make(int T, int N, double p_done, double log_ratio_spread, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::bernoulli_distribution d(p_done);
  Trajectories r{T, N, {}, {}, {}, {}, {}, {}};
  for (int k = 0; k < T * N; ++k) {
    r.rewards.push_back(u(g));
    r.values.push_back(2 * u(g));
    r.done.push_back(d(g));
    const float mu = -1.0f + 0.5f * u(g);
    r.behaviour_logp.push_back(mu);
    r.logp.push_back(mu + float(log_ratio_spread) * u(g));
  }
  for (int e = 0; e < N; ++e) r.bootstrap.push_back(2 * u(g));
  return r;
}

struct Params {
  double gamma, lambda, rho_bar, c_bar;
};

/// Eq. 1 of the paper with n reaching the end of the trajectory, in double:
///   v_s = V(x_s) + sum_{t=s}^{T-1} gamma^{t-s} (prod_{i=s}^{t-1} c_i) delta_t,
///   delta_t = rho_t (r_t + gamma V(x_{t+1}) - V(x_t)),  V(x_T) = bootstrap,
/// where an episode end at i < t removes every later term (its product holds 1 - done_i, and
/// delta_t's bootstrap holds 1 - done_t); then A_s = rho_s (r_s + gamma v_{s+1} - V(x_s)).
void reference(const Trajectories& r, const Params& p, std::vector<double>& vs, std::vector<double>& adv) {
  const int T = r.T, N = r.N;
  vs.assign(std::size_t(T) * N, 0.0);
  adv.assign(std::size_t(T) * N, 0.0);
  for (int e = 0; e < N; ++e) {
    auto at = [&](int t) { return std::size_t(t) * N + e; };
    auto ratio = [&](int t) { return std::exp(double(r.logp[at(t)]) - double(r.behaviour_logp[at(t)])); };
    auto live = [&](int t) { return r.done[at(t)] ? 0.0 : 1.0; };
    auto value = [&](int t) { return t == T ? double(r.bootstrap[e]) : double(r.values[at(t)]); };
    auto v_target = [&](int s) {
      if (s == T) return double(r.bootstrap[e]);
      double sum = value(s), weight = 1.0;  // weight = gamma^{t-s} prod_{i<t} c_i live_i
      for (int t = s; t < T; ++t) {
        const double rho = std::min(p.rho_bar, ratio(t));
        const double delta = rho * (r.rewards[at(t)] + p.gamma * live(t) * value(t + 1) - value(t));
        sum += weight * delta;
        weight *= p.gamma * live(t) * p.lambda * std::min(p.c_bar, ratio(t));
      }
      return sum;
    };
    for (int s = 0; s < T; ++s) {
      vs[at(s)] = v_target(s);
      const double rho = std::min(p.rho_bar, ratio(s));
      adv[at(s)] = rho * (r.rewards[at(s)] + p.gamma * live(s) * v_target(s + 1) - value(s));
    }
  }
}

void run(const Trajectories& r, const Params& p, std::vector<float>& vs, std::vector<float>& adv) {
  auto rw = to_device(r.rewards), v = to_device(r.values), b = to_device(r.bootstrap);
  auto lp = to_device(r.logp), mu = to_device(r.behaviour_logp);
  auto d = to_device(r.done);
  View1<float> out_vs("vs", r.rewards.size()), out_adv("adv", r.rewards.size());
  VtraceArgs<float> a;
  a.T = r.T, a.N = r.N;
  a.gamma = float(p.gamma), a.lambda = float(p.lambda), a.rho_bar = float(p.rho_bar), a.c_bar = float(p.c_bar);
  a.rewards = rw.data(), a.done = d.data(), a.values = v.data(), a.bootstrap = b.data();
  a.logp = lp.data(), a.behaviour_logp = mu.data();
  a.vs = out_vs.data(), a.pg_adv = out_adv.data();
  ExecSpace space;
  vtrace(space, a);
  space.fence();
  vs = to_host(out_vs);
  adv = to_host(out_adv);
}

void check(const Trajectories& r, const Params& p) {
  SCOPED_TRACE(::testing::Message() << "gamma " << p.gamma << " lambda " << p.lambda << " rho_bar " << p.rho_bar
                                    << " c_bar " << p.c_bar);
  std::vector<float> vs, adv;
  run(r, p, vs, adv);
  std::vector<double> rvs, radv;
  reference(r, p, rvs, radv);
  for (std::size_t k = 0; k < vs.size(); ++k) {
    EXPECT_NEAR(vs[k], rvs[k], 2e-5 * std::max(1.0, std::fabs(rvs[k]))) << "v t=" << k / r.N << " env=" << k % r.N;
    EXPECT_NEAR(adv[k], radv[k], 2e-5 * std::max(1.0, std::fabs(radv[k]))) << "A t=" << k / r.N << " env=" << k % r.N;
  }
}

TEST(Vtrace, MatchesThePapersSum) {
  // Ratios pi/mu from e^-1.5 to e^1.5, so both clips act; episode ends inside the trajectories.
  const auto r = make(9, 6, 0.15, 1.5, 41);
  int ends = 0, clipped = 0;
  for (std::size_t k = 0; k < r.done.size(); ++k) {
    ends += r.done[k];
    clipped += r.logp[k] > r.behaviour_logp[k];
  }
  ASSERT_GT(ends, 2);
  ASSERT_GT(clipped, 10);
  for (const Params& p : {Params{0.99, 1.0, 1.0, 1.0}, Params{0.9, 0.95, 1.0, 1.0}, Params{0.97, 1.0, 2.0, 0.5},
                          Params{1.0, 0.5, 0.8, 1.5}})
    check(r, p);
}

TEST(Vtrace, EpisodeEndsAtFirstAndLastStep) {
  // The bootstrap value is never read where the last transition ended an episode.
  auto r = make(6, 4, 0.0, 1.0, 43);
  for (int e = 0; e < r.N; ++e) r.done[e] = 1, r.done[std::size_t(r.T - 1) * r.N + e] = 1;
  check(r, {0.99, 1.0, 1.0, 1.0});
  std::vector<float> vs1, adv1, vs2, adv2;
  run(r, {0.99, 1.0, 1.0, 1.0}, vs1, adv1);
  for (auto& b : r.bootstrap) b += 10.0f;
  run(r, {0.99, 1.0, 1.0, 1.0}, vs2, adv2);
  EXPECT_EQ(vs1, vs2);
  EXPECT_EQ(adv1, adv2);
}

TEST(Vtrace, OnPolicyTargetsAreGaeReturns) {
  // pi = mu with rho_bar, c_bar >= 1: v_t is GAE(lambda)'s return and A_t the one-step TD error
  // towards v_{t+1}.
  auto r = make(8, 5, 0.2, 0.0, 47);
  const float gamma = 0.99f, lambda = 0.95f;
  std::vector<float> vs, adv;
  run(r, {gamma, lambda, 1.0, 1.0}, vs, adv);
  std::vector<std::uint8_t> none(r.done.size(), 0);
  auto rw = to_device(r.rewards), v = to_device(r.values), lv = to_device(r.bootstrap);
  auto te = to_device(r.done), tr = to_device(none);
  View1<float> a("adv", r.rewards.size()), R("ret", r.rewards.size());
  ExecSpace space;
  gae<float>(space, r.T, r.N, rw.data(), te.data(), tr.data(), v.data(), lv.data(), gamma, lambda, a.data(), R.data());
  space.fence();
  const std::vector<float> ret = to_host(R);
  for (std::size_t k = 0; k < vs.size(); ++k) {
    EXPECT_NEAR(vs[k], ret[k], 1e-5 * std::max(1.0f, std::fabs(ret[k]))) << "k=" << k;
    const std::size_t next = k + std::size_t(r.N);
    const double v_next = next < vs.size() ? vs[next] : r.bootstrap[k % std::size_t(r.N)];
    const double td = r.rewards[k] + (r.done[k] ? 0.0 : double(gamma)) * v_next - r.values[k];
    EXPECT_NEAR(adv[k], td, 1e-5 * std::max(1.0, std::fabs(td))) << "k=" << k;
  }
}

TEST(Vtrace, ActionLogProbabilities) {
  std::mt19937_64 g(53);
  std::normal_distribution<float> n01(0, 1);
  const int B = 37;
  ExecSpace space;
  {  // categorical, 5 actions
    const int A = 5;
    std::vector<float> logits(std::size_t(B) * A), actions(B);
    for (auto& x : logits) x = 2 * n01(g);
    for (int i = 0; i < B; ++i) actions[i] = float(i % A);
    auto y = to_device(logits), a = to_device(actions);
    View1<float> out("logp", B);
    action_logp<float>(space, B, A, 1, y.data(), nullptr, a.data(), out.data());
    space.fence();
    const auto got = to_host(out);
    for (int i = 0; i < B; ++i) {
      double z = 0;
      for (int j = 0; j < A; ++j) z += std::exp(double(logits[std::size_t(i) * A + j]));
      const double want = logits[std::size_t(i) * A + i % A] - std::log(z);
      EXPECT_NEAR(got[i], want, 1e-5) << "sample " << i;
    }
  }
  {  // Gaussian, 3 dimensions
    const int D = 3;
    std::vector<float> mean(std::size_t(B) * D), actions(std::size_t(B) * D), log_std = {-0.5f, 0.0f, 0.7f};
    for (auto& x : mean) x = n01(g);
    for (auto& x : actions) x = n01(g);
    auto m = to_device(mean), a = to_device(actions), ls = to_device(log_std);
    View1<float> out("logp", B);
    action_logp<float>(space, B, 0, D, m.data(), ls.data(), a.data(), out.data());
    space.fence();
    const auto got = to_host(out);
    for (int i = 0; i < B; ++i) {
      double want = 0;
      for (int j = 0; j < D; ++j) {
        const double s = std::exp(double(log_std[j]));
        const double x = actions[std::size_t(i) * D + j], mu = mean[std::size_t(i) * D + j];
        want += -0.5 * (x - mu) * (x - mu) / (s * s) - std::log(s * std::sqrt(2 * M_PI));
      }
      EXPECT_NEAR(got[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << "sample " << i;
    }
  }
  {  // MultiDiscrete(4, 1, 3): the sum of each group's log-softmax
    const std::vector<int> nvec = {4, 1, 3};
    const int A = 8, G = 3;
    std::vector<float> logits(std::size_t(B) * A), actions(std::size_t(B) * G);
    for (auto& x : logits) x = 2 * n01(g);
    for (int i = 0; i < B; ++i)
      for (int k = 0; k < G; ++k) actions[std::size_t(i) * G + k] = float((i + k) % nvec[k]);
    auto y = to_device(logits), a = to_device(actions);
    View1<float> out("logp", B);
    action_logp<float>(space, B, A, G, y.data(), nullptr, a.data(), out.data(), categories(nvec, "test"));
    space.fence();
    const auto got = to_host(out);
    for (int i = 0; i < B; ++i) {
      double want = 0;
      for (int k = 0, at = 0; k < G; at += nvec[k], ++k) {
        double z = 0;
        for (int j = 0; j < nvec[k]; ++j) z += std::exp(double(logits[std::size_t(i) * A + at + j]));
        want += logits[std::size_t(i) * A + at + (i + k) % nvec[k]] - std::log(z);
      }
      EXPECT_NEAR(got[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << "sample " << i;
    }
  }
}

}  // namespace
}  // namespace gmi::rl
