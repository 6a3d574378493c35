// Every registered environment, through VecEnvBase as the algorithms see it: spec against
// Gymnasium's, determinism and layout independence of the counter-based resets, observation
// bounds, the initial-state distribution, TimeLimit truncation kept apart from termination,
// same-step automatic reset with final_obs, and episode statistics.  Gymnasium's dynamics
// themselves are checked by compare_gymnasium.py (label gymnasium).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/envs.hpp"
#include "kernels/envs/registry.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::envs {
namespace {

/// What the tests know of each environment independently of its header (from Gymnasium 1.x).
struct Known {
  int obs_dim, act_dim, num_actions, max_episode_steps;
  bool can_terminate;
  /// Gymnasium's initial-state distribution: state(obs) ~ U(lo, hi) per component.
  std::function<std::vector<double>(const float*)> state;
  std::vector<double> init_lo, init_hi;
  /// > 0: terminal, < 0: not terminal; |value| is the distance to the threshold.
  std::function<double(const float*)> terminal_margin;
};

const std::map<std::string, Known>& known() {
  // clang-format off
  static const std::map<std::string, Known> k = {
      {"CartPole-v1",
       {4, 1, 2, 500, true,
        [](const float* o) { return std::vector<double>(o, o + 4); },
        {-0.05, -0.05, -0.05, -0.05},
        {0.05, 0.05, 0.05, 0.05},
        [](const float* o) {
          const double theta_max = 12.0 * 2.0 * M_PI / 360.0;
          return std::max(std::fabs(o[0]) - 2.4, std::fabs(o[2]) - theta_max);
        }}},
      {"Acrobot-v1",
       {6, 1, 3, 500, true,
        [](const float* o) {
          return std::vector<double>{std::atan2(o[1], o[0]), std::atan2(o[3], o[2]), o[4], o[5]};
        },
        {-0.1, -0.1, -0.1, -0.1},
        {0.1, 0.1, 0.1, 0.1},
        [](const float* o) {
          // -cos(s0) - cos(s0 + s1) > 1, with cos(s0 + s1) = cos s0 cos s1 - sin s0 sin s1.
          return -double(o[0]) - (double(o[0]) * o[2] - double(o[1]) * o[3]) - 1.0;
        }}},
      {"Pendulum-v1",
       {3, 1, 0, 200, false,
        [](const float* o) { return std::vector<double>{std::atan2(o[1], o[0]), o[2]}; },
        {-M_PI, -1.0},
        {M_PI, 1.0},
        [](const float*) { return -std::numeric_limits<double>::infinity(); }}},
      {"MountainCarContinuous-v0",
       {2, 1, 0, 999, true,
        [](const float* o) { return std::vector<double>{o[0], o[1]}; },
        {-0.6, 0.0},
        {-0.4, 0.0},
        [](const float* o) { return std::min(o[0] - 0.45, double(o[1])); }}},
      // Not a Gymnasium environment: Humanoid-v5's sizes, every observation component ~ U(-1, 1).
      {"SyntheticHumanoid-v0",
       {376, 17, 0, 1000, false,
        [](const float* o) { return std::vector<double>{o[0], o[1], o[375]}; },
        {-1.0, -1.0, -1.0},
        {1.0, 1.0, 1.0},
        [](const float*) { return -std::numeric_limits<double>::infinity(); }}},
  };
  // clang-format on
  return k;
}

/// Actions for env i from its observation.  Even envs mostly follow a heuristic that keeps
/// CartPole up (time limit reached) or swings Acrobot and MountainCar up (goal reached), odd envs
/// act at random, so that both ways an episode ends are exercised at the default time limits.
void act(const EnvSpec& s, int i, const float* obs, std::mt19937& g, float* a) {
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  const bool heuristic = i % 2 == 0 && u01(g) < 0.9f;
  if (s.name == "CartPole-v1" && heuristic) {
    a[0] = obs[2] + 0.5f * obs[3] + 0.05f * obs[0] + 0.1f * obs[1] > 0.0f ? 1.0f : 0.0f;
  } else if (s.name == "Acrobot-v1" && heuristic) {
    a[0] = obs[5] > 0.0f ? 2.0f : 0.0f;  // torque along dtheta2 pumps energy in
  } else if (s.name == "MountainCarContinuous-v0" && heuristic) {
    a[0] = obs[1] >= 0.0f ? 1.0f : -1.0f;  // push along the velocity
  } else if (s.discrete()) {
    a[0] = float(std::uniform_int_distribution<int>(0, s.num_actions - 1)(g));
  } else {
    for (int k = 0; k < s.act_dim; ++k) {
      // Up to 25% beyond the bounds: the env clips as Gymnasium does.
      const float lo = s.act_low[k], hi = s.act_high[k], w = 0.25f * (hi - lo);
      a[k] = lo - w + (hi - lo + 2.0f * w) * u01(g);
    }
  }
}

/// Copy host values into an existing device view of the same length.
void upload(const std::vector<float>& h, const View1<float>& d) {
  Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(h.data(),
                                                                                   h.size());
  Kokkos::deep_copy(d, v);
}

/// Host copy of a rollout; rows are [step][env][component].
struct Trace {
  EnvSpec spec;
  int n = 0, steps = 0;
  std::vector<float> obs0, next_obs, final_obs, reward, action;
  std::vector<std::uint8_t> terminated, truncated;
  EpisodeStats stats;

  const float* next(int t, int i) const {
    return &next_obs[(std::size_t(t) * n + i) * spec.obs_dim];
  }
  const float* fin(int t, int i) const {
    return &final_obs[(std::size_t(t) * n + i) * spec.obs_dim];
  }
  const float* init(int i) const { return &obs0[std::size_t(i) * spec.obs_dim]; }
  bool term(int t, int i) const { return terminated[std::size_t(t) * n + i] != 0; }
  bool trunc(int t, int i) const { return truncated[std::size_t(t) * n + i] != 0; }
  float rew(int t, int i) const { return reward[std::size_t(t) * n + i]; }
};

Trace rollout(const std::string& name, int n, int steps, std::uint64_t seed, int max_steps = 0,
              std::uint64_t offset = 0, std::uint32_t policy_seed = 7) {
  EnvOverrides ov;
  ov.max_episode_steps = max_steps;
  auto env = make_vec_env(name, n, seed, offset, ov);
  Trace tr;
  tr.spec = env->spec();
  tr.n = n;
  tr.steps = steps;
  const int od = tr.spec.obs_dim, ad = tr.spec.act_dim;
  ExecSpace space;
  View1<float> obs("test::obs", std::size_t(n) * od), fin("test::final_obs", std::size_t(n) * od);
  View1<float> rew("test::reward", n), act_d("test::action", std::size_t(n) * ad);
  View1<std::uint8_t> term("test::terminated", n), trunc("test::truncated", n);
  env->reset_all(space, obs.data());
  space.fence();
  tr.obs0 = test::to_host(obs);
  std::vector<float> cur = tr.obs0, a(std::size_t(n) * ad);
  // One policy stream per global env, so that a trajectory does not depend on the layout.
  std::vector<std::mt19937> g(n);
  for (int i = 0; i < n; ++i) g[i].seed(policy_seed * 1000003u + std::uint32_t(offset + i));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i)
      act(tr.spec, int(offset) + i, &cur[std::size_t(i) * od], g[i], &a[std::size_t(i) * ad]);
    upload(a, act_d);
    Kokkos::deep_copy(fin, nan);  // final_obs is written only where an episode ended
    StepOutputs out{obs.data(), fin.data(), rew.data(), term.data(), trunc.data()};
    env->step(space, act_d.data(), out);
    space.fence();
    cur = test::to_host(obs);
    auto append = [](auto& dst, const auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
    append(tr.next_obs, cur);
    append(tr.final_obs, test::to_host(fin));
    append(tr.reward, test::to_host(rew));
    append(tr.terminated, test::to_host(term));
    append(tr.truncated, test::to_host(trunc));
    append(tr.action, a);
  }
  tr.stats = env->take_episode_stats(space);
  return tr;
}

bool same_bits(const float* a, const float* b, int n) {
  return std::equal(a, a + n, b,
                    [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
}

/// Initial observation within Gymnasium's initial-state ranges (float32 slack).
::testing::AssertionResult is_initial(const Known& k, const float* obs) {
  const auto s = k.state(obs);
  for (std::size_t c = 0; c < s.size(); ++c)
    if (!(s[c] >= k.init_lo[c] - 1e-6 && s[c] <= k.init_hi[c] + 1e-6))
      return ::testing::AssertionFailure()
             << "state component " << c << " = " << s[c] << " outside the initial range ["
             << k.init_lo[c] << ", " << k.init_hi[c] << "]";
  return ::testing::AssertionSuccess();
}

class EnvTest : public ::testing::TestWithParam<std::string> {
 protected:
  const Known& k() const { return known().at(GetParam()); }
};

/// The device environments (the MuJoCo ones have their own tests: test_mujoco, compare_mujoco.py).
std::vector<std::string> device_env_names() {
  std::vector<std::string> out;
  for (const auto& n : env_names())
    if (!mujoco::is_mujoco(n)) out.push_back(n);
  return out;
}

TEST(EnvRegistry, EveryEnvIsKnownToTheTests) {
  const auto names = device_env_names();
  EXPECT_EQ(names.size(), known().size());
  for (const auto& n : names) EXPECT_EQ(known().count(n), 1u) << n << ": add it to known()";
}

// The benchmark env's reward, recomputed on the host from the trace: -mean_j (clip(a_j) - 0.4 o_j)^2
// over the first 17 components of the observation the action answered.
TEST(SyntheticHumanoid, RewardIsTheDistanceOfTheActionToTheScaledObservation) {
  const int n = 4, steps = 30;
  const Trace tr = rollout("SyntheticHumanoid-v0", n, steps, 3);
  for (int t = 0; t < steps; ++t)
    for (int i = 0; i < n; ++i) {
      const float* o = t == 0 ? tr.init(i) : tr.next(t - 1, i);
      const float* a = &tr.action[(std::size_t(t) * n + i) * 17];
      double cost = 0;
      for (int j = 0; j < 17; ++j) {
        const double d = std::clamp(double(a[j]), -0.4, 0.4) - 0.4 * double(o[j]);
        cost += d * d;
      }
      ASSERT_NEAR(tr.rew(t, i), -cost / 17, 1e-5) << "step " << t << " env " << i;
      ASSERT_FALSE(tr.term(t, i) || tr.trunc(t, i));
    }
}

TEST(EnvRegistry, OneLinePerEnvironmentWithItsKindAndWhyItCannotRun) {
  std::set<std::string> seen;
  std::vector<std::string> single, multi;
  for (const EnvInfo& e : registered_envs()) {
    SCOPED_TRACE(e.name + " (" + kind_name(e.kind) + ")");
    EXPECT_TRUE(seen.insert(e.name).second) << "registered twice";
    EXPECT_EQ(is_multi_agent(e.name), e.kind == EnvKind::multi_agent);
    EXPECT_EQ(mujoco::is_mujoco(e.name), e.kind == EnvKind::mujoco);
    EXPECT_NO_THROW(check_env_name(e.name));
    (e.kind == EnvKind::multi_agent ? multi : single).push_back(e.name);
    // Only a backend this build lacks (MuJoCo) makes an environment unavailable; its name stays
    // known and using it says why.
    const bool runs = e.kind != EnvKind::mujoco || mujoco::available();
    EXPECT_EQ(e.unavailable.empty(), runs) << e.unavailable;
    if (!runs) {
      EXPECT_NE(e.unavailable.find("built without MuJoCo"), std::string::npos) << e.unavailable;
      try {
        env_spec(e.name);
        ADD_FAILURE() << "expected InputError";
      } catch (const InputError& x) {
        EXPECT_EQ(std::string(x.what()), e.unavailable);
      }
      EXPECT_THROW(make_vec_env(e.name, 1, 0, 0), InputError);
    } else if (e.kind == EnvKind::device) {
      EXPECT_EQ(env_spec(e.name).name, e.name);
    } else if (e.kind == EnvKind::multi_agent) {
      EXPECT_EQ(multi_agent_spec(e.name, {}).name, e.name);
      EXPECT_THROW(env_spec(e.name), InputError);  // not a single-agent environment
    }
  }
  EXPECT_EQ(env_names(), single);
  EXPECT_EQ(multi_agent_env_names(), multi);
  std::vector<std::string> all = single;
  all.insert(all.end(), multi.begin(), multi.end());
  EXPECT_EQ(all_env_names(), all);
  EXPECT_THROW(make_multi_agent_env(single.front(), 1, 0, 0, {}), InputError);
  EXPECT_THROW(check_env_name("NoSuchEnv-v0"), InputError);
}

TEST(EnvRegistry, UnknownNameNamesTheChoices) {
  try {
    env_spec("NoSuchEnv-v0");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NoSuchEnv-v0"), std::string::npos) << msg;
    for (const auto& n : env_names()) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
}

TEST_P(EnvTest, SpecMatchesGymnasium) {
  const EnvSpec s = env_spec(GetParam());
  EXPECT_EQ(s.name, GetParam());
  EXPECT_EQ(s.obs_dim, k().obs_dim);
  EXPECT_EQ(s.act_dim, k().act_dim);
  EXPECT_EQ(s.num_actions, k().num_actions);
  EXPECT_EQ(s.max_episode_steps, k().max_episode_steps);
  ASSERT_EQ(s.obs_low.size(), std::size_t(s.obs_dim));
  ASSERT_EQ(s.obs_high.size(), std::size_t(s.obs_dim));
  for (int c = 0; c < s.obs_dim; ++c) EXPECT_LT(s.obs_low[c], s.obs_high[c]);
  if (s.discrete()) {
    EXPECT_TRUE(s.act_low.empty() && s.act_high.empty());
  } else {
    ASSERT_EQ(s.act_low.size(), std::size_t(s.act_dim));
    ASSERT_EQ(s.act_high.size(), std::size_t(s.act_dim));
    for (int c = 0; c < s.act_dim; ++c) EXPECT_LT(s.act_low[c], s.act_high[c]);
  }
  EnvOverrides ov;
  ov.max_episode_steps = 17;
  EXPECT_EQ(env_spec(GetParam(), ov).max_episode_steps, 17);
}

TEST_P(EnvTest, DeterministicPerSeedAndIndependentOfLayout) {
  const int n = 8, steps = 120, od = k().obs_dim;
  const Trace a = rollout(GetParam(), n, steps, 42, 40);
  const Trace b = rollout(GetParam(), n, steps, 42, 40);
  EXPECT_TRUE(same_bits(a.obs0.data(), b.obs0.data(), int(a.obs0.size())));
  EXPECT_TRUE(same_bits(a.next_obs.data(), b.next_obs.data(), int(a.next_obs.size())));
  EXPECT_TRUE(same_bits(a.final_obs.data(), b.final_obs.data(), int(a.final_obs.size())));
  EXPECT_TRUE(same_bits(a.reward.data(), b.reward.data(), int(a.reward.size())));
  EXPECT_EQ(a.terminated, b.terminated);
  EXPECT_EQ(a.truncated, b.truncated);

  const Trace c = rollout(GetParam(), n, 1, 43);
  for (int i = 0; i < n; ++i)
    EXPECT_FALSE(same_bits(a.init(i), c.init(i), od))
        << "seeds 42 and 43 give env " << i << " the same initial state";
  for (int i = 1; i < n; ++i)
    EXPECT_FALSE(same_bits(a.init(0), a.init(i), od)) << "envs 0 and " << i << " start alike";

  // Global env g's episodes depend on (seed, g) only: envs [4, 8) on a "second rank" with
  // offset 4 replay envs 4..7 of the single-rank run, resets included.
  const Trace d = rollout(GetParam(), 4, steps, 42, 40, 4);
  int dones = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(same_bits(d.init(i), a.init(i + 4), od)) << "global env " << i + 4;
    for (int t = 0; t < steps; ++t) {
      ASSERT_TRUE(same_bits(d.next(t, i), a.next(t, i + 4), od))
          << "step " << t << " env " << i + 4;
      ASSERT_EQ(d.rew(t, i), a.rew(t, i + 4));
      ASSERT_EQ(d.term(t, i), a.term(t, i + 4));
      ASSERT_EQ(d.trunc(t, i), a.trunc(t, i + 4));
      dones += d.term(t, i) || d.trunc(t, i);
    }
  }
  EXPECT_GE(dones, 4);  // resets were part of the comparison
}

TEST_P(EnvTest, ObservationsWithinSpecBounds) {
  const Trace tr = rollout(GetParam(), 16, 600, 5, 0);
  const EnvSpec& s = tr.spec;
  auto check = [&](const float* o, const char* what, int t, int i) {
    for (int c = 0; c < s.obs_dim; ++c)
      ASSERT_TRUE(std::isfinite(o[c]) && o[c] >= s.obs_low[c] && o[c] <= s.obs_high[c])
          << what << " step " << t << " env " << i << " component " << c << " = " << o[c]
          << " outside [" << s.obs_low[c] << ", " << s.obs_high[c] << "]";
  };
  for (int i = 0; i < tr.n; ++i) check(tr.init(i), "initial obs", -1, i);
  for (int t = 0; t < tr.steps; ++t)
    for (int i = 0; i < tr.n; ++i) {
      check(tr.next(t, i), "next_obs", t, i);
      if (tr.term(t, i) || tr.trunc(t, i)) check(tr.fin(t, i), "final_obs", t, i);
      ASSERT_TRUE(std::isfinite(tr.rew(t, i))) << "reward step " << t << " env " << i;
    }
}

TEST_P(EnvTest, InitialStatesFollowGymnasiumsDistribution) {
  const int n = 4096;
  const Trace tr = rollout(GetParam(), n, 0, 11);
  const Known& kn = k();
  const std::size_t dims = kn.init_lo.size();
  std::vector<double> lo(dims, INFINITY), hi(dims, -INFINITY), sum(dims, 0.0);
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(is_initial(kn, tr.init(i))) << "env " << i;
    const auto s = kn.state(tr.init(i));
    for (std::size_t c = 0; c < dims; ++c) {
      lo[c] = std::min(lo[c], s[c]);
      hi[c] = std::max(hi[c], s[c]);
      sum[c] += s[c];
    }
  }
  for (std::size_t c = 0; c < dims; ++c) {
    const double w = kn.init_hi[c] - kn.init_lo[c];
    if (w == 0.0) {
      EXPECT_EQ(lo[c], kn.init_lo[c]);
      EXPECT_EQ(hi[c], kn.init_hi[c]);
      continue;
    }
    // 4096 uniform draws: the gaps at the ends are about w / 4096; the mean's standard error
    // is w / sqrt(12 * 4096) ~ 0.0045 w.
    EXPECT_LT(lo[c] - kn.init_lo[c], 0.01 * w) << "component " << c << " min " << lo[c];
    EXPECT_LT(kn.init_hi[c] - hi[c], 0.01 * w) << "component " << c << " max " << hi[c];
    EXPECT_NEAR(sum[c] / n, 0.5 * (kn.init_lo[c] + kn.init_hi[c]), 0.03 * w) << "component " << c;
  }
}

/// Truncation exactly at the time limit (whatever terminated says), termination only in terminal
/// states, and the automatic reset: next_obs fresh, final_obs the true next observation.
void check_episodes(const Trace& tr, const Known& kn, int limit, int* n_term, int* n_trunc) {
  for (int i = 0; i < tr.n; ++i) {
    int elapsed = 0;
    for (int t = 0; t < tr.steps; ++t) {
      ++elapsed;
      const bool term = tr.term(t, i), trunc = tr.trunc(t, i);
      ASSERT_EQ(trunc, elapsed == limit) << "step " << t << " env " << i << " elapsed " << elapsed;
      if (term || trunc) {
        // Terminated is the MDP's verdict on the true next state (skip float32 borderline).
        const double m = kn.terminal_margin(tr.fin(t, i));
        if (std::fabs(m) > 1e-5) {
          ASSERT_EQ(term, m > 0) << "step " << t << " env " << i << " terminal margin " << m;
        }
        ASSERT_TRUE(is_initial(kn, tr.next(t, i))) << "after done: step " << t << " env " << i;
        ASSERT_FALSE(same_bits(tr.next(t, i), tr.init(i), tr.spec.obs_dim))
            << "reset repeated the first episode's initial state: step " << t << " env " << i;
        *n_term += term;
        *n_trunc += trunc;
        elapsed = 0;
      } else {
        ASSERT_LT(kn.terminal_margin(tr.next(t, i)), 1e-5) << "step " << t << " env " << i;
      }
    }
  }
}

TEST_P(EnvTest, TruncationAtTimeLimitAndAutoReset) {
  const Known& kn = k();
  for (int limit : {7, 50, kn.max_episode_steps}) {
    SCOPED_TRACE("max_episode_steps " + std::to_string(limit));
    const Trace tr = rollout(GetParam(), 12, std::max(3 * limit + 5, 400), 3,
                             limit == kn.max_episode_steps ? 0 : limit);
    ASSERT_EQ(tr.spec.max_episode_steps, limit);
    int n_term = 0, n_trunc = 0;
    ASSERT_NO_FATAL_FAILURE(check_episodes(tr, kn, limit, &n_term, &n_trunc));
    EXPECT_GT(n_trunc, 0) << "no episode reached the time limit";
    if (!kn.can_terminate) {
      EXPECT_EQ(n_term, 0);
    }
    if (limit == kn.max_episode_steps && kn.can_terminate) {
      EXPECT_GT(n_term, 0) << "no episode terminated: termination not exercised";
    }
  }
}

TEST_P(EnvTest, FinalObsIsTheTrueNextObservation) {
  // Same seed and actions, one run with a time limit and one without: up to the first done of
  // the limited run both are the same episode, so its final_obs is the unlimited run's next_obs.
  const int n = 12, limit = 25, steps = 60, od = k().obs_dim;
  const Trace a = rollout(GetParam(), n, steps, 9, limit);
  const Trace b = rollout(GetParam(), n, steps, 9, 100000);
  int checked = 0;
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < steps; ++t) {
      ASSERT_EQ(a.term(t, i), b.term(t, i)) << "step " << t << " env " << i;
      ASSERT_FALSE(b.trunc(t, i));
      if (!(a.term(t, i) || a.trunc(t, i))) {
        ASSERT_TRUE(same_bits(a.next(t, i), b.next(t, i), od)) << "step " << t << " env " << i;
        continue;
      }
      if (a.term(t, i)) {
        ASSERT_TRUE(same_bits(a.fin(t, i), b.fin(t, i), od)) << "step " << t << " env " << i;
      } else {
        // Truncated only: the unlimited run carries on from the state the limited run reset.
        ASSERT_TRUE(same_bits(a.fin(t, i), b.next(t, i), od)) << "step " << t << " env " << i;
        ASSERT_FALSE(same_bits(a.next(t, i), b.next(t, i), od)) << "no reset: step " << t;
        ++checked;
      }
      break;  // the runs differ from here on
    }
  // Policies act on observations, so the two runs stay aligned only up to the first done.
  EXPECT_GT(checked, 0);
}

TEST_P(EnvTest, EpisodeStatisticsMatchRewardsAndDones) {
  const int n = 10, limit = 30;
  EnvOverrides ov;
  ov.max_episode_steps = limit;
  auto env = make_vec_env(GetParam(), n, 21, 0, ov);
  const EnvSpec s = env->spec();
  const int od = s.obs_dim, ad = s.act_dim;
  ExecSpace space;
  View1<float> obs("test::obs", n * od), fin("test::final_obs", n * od), rew("test::reward", n);
  View1<float> act_d("test::action", n * ad);
  View1<std::uint8_t> term("test::terminated", n), trunc("test::truncated", n);
  std::vector<float> ep_ret(n, 0.0f), a(n * ad);
  std::vector<int> ep_len(n, 0);
  std::mt19937 g(3);
  for (int round = 0; round < 3; ++round) {
    env->reset_all(space, obs.data());
    std::fill(ep_ret.begin(), ep_ret.end(), 0.0f);
    std::fill(ep_len.begin(), ep_len.end(), 0);
    for (int interval = 0; interval < 3; ++interval) {
      double want_ret = 0.0, want_len = 0.0, want_count = 0.0;
      for (int t = 0; t < 45; ++t) {
        const auto cur = test::to_host(obs);
        for (int i = 0; i < n; ++i) act(s, i, &cur[i * od], g, &a[i * ad]);
        upload(a, act_d);
        env->step(space, act_d.data(),
                  {obs.data(), fin.data(), rew.data(), term.data(), trunc.data()});
        const auto r = test::to_host(rew);
        const auto te = test::to_host(term), tu = test::to_host(trunc);
        for (int i = 0; i < n; ++i) {
          ep_ret[i] += r[i];  // float, as the episode accumulator is
          ep_len[i] += 1;
          if (te[i] || tu[i]) {
            want_ret += ep_ret[i];
            want_len += ep_len[i];
            want_count += 1.0;
            ep_ret[i] = 0.0f;
            ep_len[i] = 0;
          }
        }
      }
      const EpisodeStats got = env->take_episode_stats(space);
      SCOPED_TRACE("round " + std::to_string(round) + " interval " + std::to_string(interval));
      EXPECT_EQ(got.count, want_count);
      EXPECT_EQ(got.length_sum, want_len);
      EXPECT_NEAR(got.return_sum, want_ret, 1e-9 * (1.0 + std::fabs(want_ret)));
      EXPECT_GT(want_count, 0.0);
    }
    const EpisodeStats again = env->take_episode_stats(space);
    EXPECT_EQ(again.count, 0.0);
    EXPECT_EQ(again.return_sum, 0.0);
    EXPECT_EQ(again.length_sum, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, EnvTest, ::testing::ValuesIn(device_env_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace gmi::envs
