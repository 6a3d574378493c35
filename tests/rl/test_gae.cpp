// gae() against CleanRL's loop (ppo.py), transcribed with its own conventions and translated at
// the boundary.  CleanRL stores dones[t] = "obs[t] is the first observation of a new episode",
// i.e. the transition t-1 ended an episode, and next_done for the transition T-1.  gmi_drl's
// terminated[t] / truncated[t] say that transition t itself ended the episode.  So
//   cleanrl_dones[t] = done[t-1]  (t >= 1),   next_done = done[T-1],   done = terminated | truncated.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "kernels/rl/gae.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

struct Rollout {
  int T, N;
  std::vector<float> rewards, values, last_values;
  std::vector<std::uint8_t> terminated, truncated;
};

Rollout make_rollout(int T, int N, double p_term, double p_trunc, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::bernoulli_distribution term(p_term), trunc(p_trunc);
  Rollout r{T, N, {}, {}, {}, {}, {}};
  for (int k = 0; k < T * N; ++k) {
    r.rewards.push_back(u(g));
    r.values.push_back(2 * u(g));
    r.terminated.push_back(term(g));
    r.truncated.push_back(trunc(g));
  }
  for (int e = 0; e < N; ++e) r.last_values.push_back(2 * u(g));
  return r;
}

/// CleanRL ppo.py, one env column at a time, in double:
///   for t in reversed(range(num_steps)):
///       if t == num_steps - 1: nextnonterminal = 1 - next_done; nextvalues = next_value
///       else:                  nextnonterminal = 1 - dones[t + 1]; nextvalues = values[t + 1]
///       delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
///       advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
///   returns = advantages + values
void cleanrl_gae(const Rollout& r, double gamma, double lambda, std::vector<double>& adv,
                 std::vector<double>& ret) {
  const int T = r.T, N = r.N;
  adv.assign(std::size_t(T) * N, 0.0);
  ret.assign(std::size_t(T) * N, 0.0);
  for (int e = 0; e < N; ++e) {
    auto at = [&](int t) { return std::size_t(t) * N + e; };
    auto done = [&](int t) { return r.terminated[at(t)] || r.truncated[at(t)] ? 1.0 : 0.0; };
    std::vector<double> dones(T, 0.0);  // CleanRL convention; dones[0] is never read
    for (int t = 1; t < T; ++t) dones[t] = done(t - 1);
    const double next_done = done(T - 1);
    const double next_value = r.last_values[e];
    double lastgaelam = 0;
    for (int t = T - 1; t >= 0; --t) {
      double nextnonterminal, nextvalues;
      if (t == T - 1) {
        nextnonterminal = 1.0 - next_done;
        nextvalues = next_value;
      } else {
        nextnonterminal = 1.0 - dones[t + 1];
        nextvalues = r.values[at(t + 1)];
      }
      const double delta = r.rewards[at(t)] + gamma * nextvalues * nextnonterminal - r.values[at(t)];
      lastgaelam = delta + gamma * lambda * nextnonterminal * lastgaelam;
      adv[at(t)] = lastgaelam;
    }
    for (int t = 0; t < T; ++t) ret[at(t)] = adv[at(t)] + r.values[at(t)];
  }
}

void run_gae(const Rollout& r, float gamma, float lambda, std::vector<float>& adv,
             std::vector<float>& ret) {
  auto rw = to_device(r.rewards), v = to_device(r.values), lv = to_device(r.last_values);
  auto te = to_device(r.terminated), tr = to_device(r.truncated);
  View1<float> a("adv", r.rewards.size()), R("ret", r.rewards.size());
  ExecSpace space;
  gae<float>(space, r.T, r.N, rw.data(), te.data(), tr.data(), v.data(), lv.data(), gamma, lambda,
             a.data(), R.data());
  space.fence();
  adv = to_host(a);
  ret = to_host(R);
}

void check(const Rollout& r, float gamma, float lambda) {
  SCOPED_TRACE(::testing::Message() << "gamma " << gamma << " lambda " << lambda);
  std::vector<float> adv, ret;
  run_gae(r, gamma, lambda, adv, ret);
  std::vector<double> radv, rret;
  cleanrl_gae(r, gamma, lambda, radv, rret);
  // float accumulation over at most T = 7 steps of O(1) terms: ~1e-6; 1e-5 per unit magnitude.
  for (std::size_t k = 0; k < adv.size(); ++k) {
    EXPECT_NEAR(adv[k], radv[k], 1e-5 * std::max(1.0, std::fabs(radv[k])))
        << "advantage t=" << k / r.N << " env=" << k % r.N;
    EXPECT_NEAR(ret[k], rret[k], 1e-5 * std::max(1.0, std::fabs(rret[k])))
        << "return t=" << k / r.N << " env=" << k % r.N;
  }
}

TEST(Gae, MatchesCleanRlLoop) {
  const auto r = make_rollout(7, 5, 0.2, 0.15, 17);
  int ends = 0;
  for (std::size_t k = 0; k < r.terminated.size(); ++k) ends += r.terminated[k] || r.truncated[k];
  ASSERT_GT(ends, 3);
  ASSERT_LT(ends, 30);
  const std::vector<std::pair<float, float>> gl_cases = {{0.99f, 0.95f}, {0.9f, 0.0f}, {1.0f, 1.0f}, {0.97f, 0.5f}};
  for (const auto& gl : gl_cases)
    check(r, gl.first, gl.second);
}

TEST(Gae, EpisodeEndsAtFirstAndLastStep) {
  // Every env ends an episode at t = 0 and at t = T-1 (so last_values must be ignored), through
  // terminated in some envs and truncated in others.
  auto r = make_rollout(7, 5, 0.1, 0.1, 29);
  for (int e = 0; e < r.N; ++e) {
    (e % 2 ? r.terminated : r.truncated)[e] = 1;
    (e % 2 ? r.truncated : r.terminated)[std::size_t(r.T - 1) * r.N + e] = 1;
  }
  check(r, 0.99f, 0.95f);
  // Bootstrapping from last_values is off for all envs: changing them changes nothing.
  std::vector<float> a1, r1, a2, r2;
  run_gae(r, 0.99f, 0.95f, a1, r1);
  for (auto& v : r.last_values) v += 10.0f;
  run_gae(r, 0.99f, 0.95f, a2, r2);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(r1, r2);
}

TEST(Gae, NoEpisodeEndsIsDiscountedSum) {
  // lambda = 1 without episode ends: R_t = sum_{s>=t} gamma^(s-t) r_s + gamma^(T-t) V_last.
  auto r = make_rollout(7, 5, 0.0, 0.0, 31);
  std::vector<float> adv, ret;
  const float gamma = 0.9f;
  run_gae(r, gamma, 1.0f, adv, ret);
  for (int e = 0; e < r.N; ++e)
    for (int t = 0; t < r.T; ++t) {
      double g = 0, disc = 1;
      for (int s = t; s < r.T; ++s, disc *= gamma) g += disc * r.rewards[std::size_t(s) * r.N + e];
      g += disc * r.last_values[e];
      EXPECT_NEAR(ret[std::size_t(t) * r.N + e], g, 1e-5 * std::max(1.0, std::fabs(g)));
    }
}

}  // namespace
}  // namespace gmi::rl
