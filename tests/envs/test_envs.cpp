// Every registered device environment (iterated from the registry, no names spelled here),
// through VecEnvBase as the algorithms see it: a consistent spec, determinism and layout
// independence of the counter-based resets, observation bounds, TimeLimit truncation kept apart
// from termination, same-step automatic reset with final_obs, and episode statistics.  What only
// a reference knows (Gymnasium's spaces and time limits, initial-state distribution, dynamics,
// rewards, termination) is checked by compare_gymnasium.py (label gymnasium), whose reference
// entry every registered device environment must have.
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

class EnvTest : public ::testing::TestWithParam<std::string> {
 protected:
  int obs_dim() const { return env_spec(GetParam()).obs_dim; }
};

/// The environments VecEnv<Env> steps on the device: hand-written ones and the MuJoCo models on the
/// device pipeline this build runs (the host MuJoCo ones have their own tests: test_mujoco,
/// compare_mujoco.py).
std::vector<std::string> device_env_names() {
  std::vector<std::string> out;
  for (const EnvInfo& e : registered_envs())
    if (e.kind == EnvKind::device || (e.kind == EnvKind::physics && e.unavailable.empty())) out.push_back(e.name);
  return out;
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
    const bool runs = (e.kind != EnvKind::mujoco && e.kind != EnvKind::physics) || mujoco::available();
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
    } else if (e.kind == EnvKind::device || e.kind == EnvKind::physics) {
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

TEST_P(EnvTest, SpecIsConsistent) {
  const EnvSpec s = env_spec(GetParam());
  EXPECT_EQ(s.name, GetParam());
  EXPECT_GT(s.obs_dim, 0);
  EXPECT_GT(s.act_dim, 0);
  EXPECT_GE(s.num_actions, 0);
  if (s.discrete()) {
    EXPECT_EQ(s.act_dim, 1);
  }
  EXPECT_GT(s.max_episode_steps, 0);
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
  const int n = 8, steps = 120, od = obs_dim();
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

/// Truncation exactly at the time limit (whatever terminated says) and the automatic reset: a fresh
/// episode, not a repeat of the first.  (Whether terminated agrees with the MDP and the reset with
/// the initial-state distribution is compare_gymnasium.py's business.)
void check_episodes(const Trace& tr, int limit, int* n_term, int* n_trunc) {
  for (int i = 0; i < tr.n; ++i) {
    int elapsed = 0;
    for (int t = 0; t < tr.steps; ++t) {
      ++elapsed;
      const bool term = tr.term(t, i), trunc = tr.trunc(t, i);
      ASSERT_EQ(trunc, elapsed == limit) << "step " << t << " env " << i << " elapsed " << elapsed;
      if (term || trunc) {
        ASSERT_FALSE(same_bits(tr.next(t, i), tr.init(i), tr.spec.obs_dim))
            << "reset repeated the first episode's initial state: step " << t << " env " << i;
        *n_term += term;
        *n_trunc += trunc;
        elapsed = 0;
      }
    }
  }
}

TEST_P(EnvTest, TruncationAtTimeLimitAndAutoReset) {
  const int default_limit = env_spec(GetParam()).max_episode_steps;
  for (int limit : {7, 50, default_limit}) {
    SCOPED_TRACE("max_episode_steps " + std::to_string(limit));
    const Trace tr = rollout(GetParam(), 12, std::max(3 * limit + 5, 400), 3, limit == default_limit ? 0 : limit);
    ASSERT_EQ(tr.spec.max_episode_steps, limit);
    int n_term = 0, n_trunc = 0;
    ASSERT_NO_FATAL_FAILURE(check_episodes(tr, limit, &n_term, &n_trunc));
    // Short limits are reached whatever the policy; the default ones by compare_gymnasium's cases.
    if (limit < default_limit) {
      EXPECT_GT(n_trunc, 0) << "no episode reached the time limit";
    }
  }
}

TEST_P(EnvTest, FinalObsIsTheTrueNextObservation) {
  // Same seed and actions, one run with a time limit and one without: up to the first done of
  // the limited run both are the same episode, so its final_obs is the unlimited run's next_obs.
  const int n = 12, limit = 25, steps = 60, od = obs_dim();
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

/// Steps `env` `steps` times with actions from act() (generator g) and returns the host copies of
/// every output, in order.
std::vector<float> run_steps(VecEnvBase& env, int steps, std::mt19937& g) {
  const EnvSpec& s = env.spec();
  const int n = env.num_envs(), od = s.obs_dim, ad = s.act_dim;
  ExecSpace space;
  View1<float> obs("test::obs", std::size_t(n) * od), fin("test::final_obs", std::size_t(n) * od);
  View1<float> rew("test::reward", n), act_d("test::action", std::size_t(n) * ad);
  View1<std::uint8_t> term("test::terminated", n), trunc("test::truncated", n);
  std::vector<float> out, cur(std::size_t(n) * od, 0.0f), a(std::size_t(n) * ad);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i) act(s, i, &cur[std::size_t(i) * od], g, &a[std::size_t(i) * ad]);
    upload(a, act_d);
    env.step(space, act_d.data(), {obs.data(), fin.data(), rew.data(), term.data(), trunc.data()});
    space.fence();
    cur = test::to_host(obs);
    for (const auto& v : {cur, test::to_host(rew)}) out.insert(out.end(), v.begin(), v.end());
    for (const auto& v : {test::to_host(term), test::to_host(trunc)}) out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST_P(EnvTest, SaveLoadResumesExactly) {
  const int n = 6;
  EnvOverrides ov;
  ov.max_episode_steps = 20;
  auto a = make_vec_env(GetParam(), n, 5, 0, ov);
  ExecSpace space;
  View1<float> obs("test::obs", std::size_t(n) * obs_dim());
  a->reset_all(space, obs.data());
  std::mt19937 g(1);
  run_steps(*a, 33, g);  // mid-episode, after resets
  const std::vector<StateArray> saved = a->save_state(space);
  const EpisodeStats before = a->take_episode_stats(space);
  a->load_state(space, saved);  // the statistics too
  std::mt19937 g1 = g, g2 = g;
  const std::vector<float> straight = run_steps(*a, 40, g1);
  auto b = make_vec_env(GetParam(), n, 5, 0, ov);  // the run's seed is config, not state
  b->reset_all(space, obs.data(), 1000);           // other episodes: load_state overwrites them
  b->load_state(space, saved);
  const EpisodeStats restored = b->take_episode_stats(space);
  EXPECT_EQ(restored.count, before.count);
  EXPECT_EQ(restored.return_sum, before.return_sum);
  const std::vector<float> resumed = run_steps(*b, 40, g2);
  ASSERT_EQ(straight.size(), resumed.size());
  EXPECT_TRUE(same_bits(straight.data(), resumed.data(), int(straight.size())));
  // A missing array is named.
  std::vector<StateArray> partial(saved.begin() + 1, saved.end());
  try {
    b->load_state(space, partial);
    ADD_FAILURE() << "load_state accepted a state without " << saved[0].name;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(saved[0].name), std::string::npos) << e.what();
  }
}

// The state arrays' names are the datasets of checkpoints already written: they must not change.
// (A new environment needs no line here.)
TEST(EnvState, CheckpointNamesStay) {
  const std::map<std::string, std::vector<std::string>> names = {
      {"CartPole-v1", {"x", "x_dot", "theta", "theta_dot"}},
      {"Acrobot-v1", {"theta1", "theta2", "dtheta1", "dtheta2"}},
      {"Pendulum-v1", {"theta", "theta_dot"}},
      {"MountainCarContinuous-v0", {"position", "velocity"}},
      {"SyntheticHumanoid-v0", {"key"}},
  };
  const std::vector<std::string> vec_env = {"elapsed",     "episode",     "ep_return", "ep_length",
                                            "done_return", "done_length", "done_count"};
  ExecSpace space;
  for (const auto& [env_name, own] : names) {
    std::vector<std::string> want = own, got;
    want.insert(want.end(), vec_env.begin(), vec_env.end());
    for (const StateArray& a : make_vec_env(env_name, 2, 0, 0)->save_state(space)) got.push_back(a.name);
    EXPECT_EQ(got, want) << env_name;
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
