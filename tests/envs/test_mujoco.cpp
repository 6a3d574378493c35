// The MuJoCo environments behind VecEnvBase (their dynamics against Gymnasium are in
// compare_mujoco.py): spaces, determinism whatever the threads and the layout of envs over GMIs,
// the reset-noise distribution, episode statistics and reward terms, exact save/load, the time
// limit, the block a step's results travel in, errors for bad keyword arguments and model paths, and models found in a Gymnasium
// installed after the build was configured.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/envs/mujoco/mujoco_vec_env.hpp"
#include "kernels/envs/registry.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::envs {
namespace {

struct Trace {
  std::vector<float> obs, final_obs, reward;
  std::vector<std::uint8_t> term, trunc;
  EpisodeStats stats;
};

EnvOverrides with_threads(int threads) {
  EnvOverrides o;
  o.mujoco.threads = threads;
  return o;
}

/// `steps` steps of `n` envs [offset, offset + n) with random actions from `action_seed` (the
/// same for a global env index whatever the layout), from a fresh reset or from `state`.
Trace rollout(const std::string& name, int n, int steps, std::uint64_t offset, const EnvOverrides& o,
              const std::vector<StateArray>* state = nullptr, std::vector<StateArray>* saved = nullptr,
              int save_after = -1) {
  auto env = make_vec_env(name, n, 7, offset, o);
  const EnvSpec& s = env->spec();
  const int od = s.obs_dim, ad = s.act_dim;
  ExecSpace space;
  View1<float> obs("obs", std::size_t(n) * od), fin("fin", std::size_t(n) * od), rew("rew", n), act("act", std::size_t(n) * ad);
  View1<std::uint8_t> term("term", n), trunc("trunc", n);
  env->reset_all(space, obs.data());
  if (state) env->load_state(space, *state);
  Trace tr;
  for (int t = 0; t < steps; ++t) {
    if (saved && t == save_after) *saved = env->save_state(space);
    std::vector<float> a(std::size_t(n) * ad);
    for (int i = 0; i < n; ++i) {
      std::mt19937_64 g((offset + i) * 1000003ull + std::uint64_t(t) * 7919ull);
      std::uniform_real_distribution<float> u(0, 1);
      for (int k = 0; k < ad; ++k) a[std::size_t(i) * ad + k] = s.act_low[k] + (s.act_high[k] - s.act_low[k]) * u(g);
    }
    Kokkos::deep_copy(act, Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(a.data(), a.size()));
    env->step(space, act.data(), StepOutputs{obs.data(), fin.data(), rew.data(), term.data(), trunc.data()});
    space.fence();
    const auto o1 = test::to_host(obs.data(), obs.extent(0));
    const auto r1 = test::to_host(rew.data(), rew.extent(0));
    auto te = Kokkos::create_mirror_view_and_copy(HostSpace(), term);
    auto tr1 = Kokkos::create_mirror_view_and_copy(HostSpace(), trunc);
    const auto f1 = test::to_host(fin.data(), fin.extent(0));
    tr.obs.insert(tr.obs.end(), o1.begin(), o1.end());
    tr.reward.insert(tr.reward.end(), r1.begin(), r1.end());
    for (int i = 0; i < n; ++i) {
      tr.term.push_back(te(i));
      tr.trunc.push_back(tr1(i));
      if (te(i) || tr1(i)) tr.final_obs.insert(tr.final_obs.end(), f1.begin() + std::size_t(i) * od, f1.begin() + std::size_t(i + 1) * od);
    }
  }
  tr.stats = env->take_episode_stats(space);
  return tr;
}

double qstat(const std::vector<StateArray>& sim, const char* name, int width, int k, bool var, double mean0 = 0) {
  for (const auto& a : sim)
    if (a.name == name) {
      const auto& v = std::get<std::vector<double>>(a.values);
      const std::size_t n = v.size() / width;
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double x = v[i * width + k] - mean0;
        s += var ? x * x : x;
      }
      return s / double(n);
    }
  ADD_FAILURE() << "no simulator array " << name;
  return 0;
}

TEST(Mujoco, SpacesAreGymnasiums) {
  struct Want {
    const char* name;
    int obs, act;
    float act_high;
    std::vector<std::string> terms;
  };
  const std::vector<Want> want = {
      {"Hopper-v5", 11, 3, 1.0f, {"reward_forward", "reward_ctrl", "reward_survive"}},
      {"HalfCheetah-v5", 17, 6, 1.0f, {"reward_forward", "reward_ctrl"}},
      {"Walker2d-v5", 17, 6, 1.0f, {"reward_forward", "reward_ctrl", "reward_survive"}},
      {"Ant-v5", 105, 8, 1.0f, {"reward_forward", "reward_ctrl", "reward_contact", "reward_survive"}},
      {"Humanoid-v5", 348, 17, 0.4f, {"reward_forward", "reward_ctrl", "reward_contact", "reward_survive"}},
      {"InvertedPendulum-v5", 4, 1, 3.0f, {"reward_survive"}},
      {"Swimmer-v5", 8, 2, 1.0f, {"reward_forward", "reward_ctrl"}}};
  for (const Want& w : want) {
    const EnvSpec s = env_spec(w.name);
    EXPECT_EQ(s.obs_dim, w.obs) << w.name;
    EXPECT_EQ(s.act_dim, w.act) << w.name;
    EXPECT_EQ(s.num_actions, 0) << w.name;
    EXPECT_EQ(s.max_episode_steps, 1000) << w.name;
    ASSERT_EQ(int(s.act_high.size()), w.act) << w.name;
    EXPECT_FLOAT_EQ(s.act_high[0], w.act_high) << w.name;
    EXPECT_FLOAT_EQ(s.act_low[0], -w.act_high) << w.name;
    EXPECT_EQ(s.reward_terms, w.terms) << w.name;
  }
  EnvOverrides o;
  o.mujoco.kwargs.include_cfrc_ext_in_observation = false;
  EXPECT_EQ(env_spec("Ant-v5", o).obs_dim, 27);
  o = EnvOverrides{};
  o.mujoco.kwargs.exclude_current_positions_from_observation = false;
  EXPECT_EQ(env_spec("Hopper-v5", o).obs_dim, 12);
}

TEST(Mujoco, SameTrajectoriesWhateverTheThreadsAndTheLayout) {
  for (const char* name : {"Hopper-v5", "Ant-v5"}) {
    const Trace one = rollout(name, 6, 60, 0, with_threads(1));
    const Trace three = rollout(name, 6, 60, 0, with_threads(3));
    EXPECT_EQ(one.obs, three.obs) << name;
    EXPECT_EQ(one.reward, three.reward) << name;
    EXPECT_EQ(one.term, three.term) << name;
    // Envs 3..5 alone (another GMI's share) follow the same trajectories as in the group of six.
    const Trace part = rollout(name, 3, 60, 3, with_threads(2));
    const std::size_t od = env_spec(name).obs_dim;
    for (int t = 0; t < 60; ++t)
      for (int i = 0; i < 3; ++i) {
        for (std::size_t k = 0; k < od; ++k)
          ASSERT_EQ(part.obs[(std::size_t(t) * 3 + i) * od + k], one.obs[(std::size_t(t) * 6 + 3 + i) * od + k])
              << name << " t " << t << " env " << i;
        ASSERT_EQ(part.reward[std::size_t(t) * 3 + i], one.reward[std::size_t(t) * 6 + 3 + i]);
      }
  }
}

TEST(Mujoco, ResetNoiseFollowsGymnasium) {
  // Hopper: qpos0 + U(-s, s) and U(-s, s) (variance s^2 / 3); HalfCheetah: qvel ~ s N(0, 1).
  const int n = 4000;
  ExecSpace space;
  for (auto [name, s, normal_qvel] : std::vector<std::tuple<const char*, double, bool>>{
           {"Hopper-v5", 5e-3, false}, {"HalfCheetah-v5", 0.1, true}}) {
    auto env = make_vec_env(name, n, 3, 0, with_threads(2));
    View1<float> obs("obs", std::size_t(n) * env->spec().obs_dim);
    env->reset_all(space, obs.data());
    const auto sim = env->simulator_state();
    const int nq = sim[0].width, nv = sim[1].width;
    const double uvar = s * s / 3, qvel_var = normal_qvel ? s * s : uvar;
    // qpos0 of these models: the initial qpos of env 0 minus its noise is not known, so the mean
    // is checked on qvel (qvel0 = 0) and the variance of qpos around its mean.
    for (int k = 0; k < nv; ++k) {
      EXPECT_NEAR(qstat(sim, "qvel", nv, k, false), 0.0, 5 * std::sqrt(qvel_var / n)) << name << " qvel " << k;
      EXPECT_NEAR(qstat(sim, "qvel", nv, k, true), qvel_var, 0.1 * qvel_var) << name << " qvel " << k;
    }
    for (int k = 0; k < nq; ++k) {
      const double mean = qstat(sim, "qpos", nq, k, false);
      EXPECT_NEAR(qstat(sim, "qpos", nq, k, true, mean), uvar, 0.1 * uvar) << name << " qpos " << k;
    }
  }
}

TEST(Mujoco, EpisodeStatisticsAndRewardTermsAddUp) {
  const int n = 4, steps = 400;
  const Trace tr = rollout("Hopper-v5", n, steps, 0, with_threads(2));
  // Every step's reward enters the return of its episode; finished episodes are counted.
  double finished_return = 0, open[4] = {0, 0, 0, 0};
  int episodes = 0;
  for (int t = 0; t < steps; ++t)
    for (int i = 0; i < n; ++i) {
      open[i] += tr.reward[std::size_t(t) * n + i];
      if (tr.term[std::size_t(t) * n + i] || tr.trunc[std::size_t(t) * n + i]) {
        finished_return += open[i];
        open[i] = 0;
        ++episodes;
      }
    }
  ASSERT_GT(episodes, 4);
  EXPECT_EQ(tr.stats.count, episodes);
  EXPECT_NEAR(tr.stats.return_sum, finished_return, 1e-3 * std::fabs(finished_return));
  ASSERT_EQ(tr.stats.term_sums.size(), 3u);
  double terms = 0;
  for (double v : tr.stats.term_sums) terms += v;
  EXPECT_NEAR(terms, tr.stats.return_sum, 1e-9 * std::fabs(tr.stats.return_sum));
  EXPECT_GT(tr.stats.term_sums[2], 0.0);  // survive
  EXPECT_LT(tr.stats.term_sums[1], 0.0);  // control cost
}

TEST(Mujoco, SaveAndLoadAreExact) {
  for (const char* name : {"Ant-v5", "Humanoid-v5", "Hopper-v5"}) {
    std::vector<StateArray> saved;
    const Trace straight = rollout(name, 3, 50, 0, with_threads(1), nullptr, &saved, 20);
    ASSERT_FALSE(saved.empty());
    // Another env object, another thread count: loading the state at step 20 and replaying steps
    // 20..49 gives the same bits (actions depend on (env, t), so rerun with t offset by 20).
    auto env = make_vec_env(name, 3, 7, 0, with_threads(2));
    const EnvSpec& s = env->spec();
    const int od = s.obs_dim, ad = s.act_dim, n = 3;
    ExecSpace space;
    View1<float> obs("obs", std::size_t(n) * od), fin("fin", std::size_t(n) * od), rew("rew", n), act("act", std::size_t(n) * ad);
    View1<std::uint8_t> term("term", n), trunc("trunc", n);
    env->reset_all(space, obs.data());
    env->load_state(space, saved);
    for (int t = 20; t < 50; ++t) {
      std::vector<float> a(std::size_t(n) * ad);
      for (int i = 0; i < n; ++i) {
        std::mt19937_64 g(std::uint64_t(i) * 1000003ull + std::uint64_t(t) * 7919ull);
        std::uniform_real_distribution<float> u(0, 1);
        for (int k = 0; k < ad; ++k) a[std::size_t(i) * ad + k] = s.act_low[k] + (s.act_high[k] - s.act_low[k]) * u(g);
      }
      Kokkos::deep_copy(act, Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(a.data(), a.size()));
      env->step(space, act.data(), StepOutputs{obs.data(), fin.data(), rew.data(), term.data(), trunc.data()});
      space.fence();
      const auto o = test::to_host(obs.data(), obs.extent(0));
      const auto r = test::to_host(rew.data(), rew.extent(0));
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(r[i], straight.reward[std::size_t(t) * n + i]) << name << " t " << t << " env " << i;
        for (int k = 0; k < od; ++k)
          ASSERT_EQ(o[std::size_t(i) * od + k], straight.obs[(std::size_t(t) * n + i) * od + k]) << name << " t " << t;
      }
    }
  }
}

TEST(Mujoco, GroupsSteppedAsynchronouslyEqualOneStep) {
  // One batch; two halves waited for one by one; three groups queued together (the threads step
  // them in turn while the caller goes on), their actions overwritten as soon as each is queued.
  // (Episodes of 7 steps: truncations, final observations and resets in the 80 steps.)
  const int n = 6;
  ExecSpace space;
  auto limited = [](int threads) {
    EnvOverrides o = with_threads(threads);
    o.max_episode_steps = 7;
    return o;
  };
  auto whole = make_vec_env("Ant-v5", n, 5, 0, limited(2));
  auto halves = make_vec_env("Ant-v5", n, 5, 0, limited(2));
  auto groups = make_vec_env("Ant-v5", n, 5, 0, limited(3));
  ASSERT_TRUE(halves->can_step_async());
  const int od = whole->spec().obs_dim, ad = whole->spec().act_dim;
  View1<float> act("act", std::size_t(n) * ad), scratch("scratch", std::size_t(n) * ad);
  struct Out {
    View1<float> obs, fin, rew;
    View1<std::uint8_t> term, trunc;
    explicit Out(int n, int od)
        : obs("obs", std::size_t(n) * od), fin("fin", std::size_t(n) * od), rew("rew", n), term("term", n), trunc("trunc", n) {}
    StepOutputs out() const { return {obs.data(), fin.data(), rew.data(), term.data(), trunc.data()}; }
  } a(n, od), b(n, od), c(n, od);
  whole->reset_all(space, a.obs.data());
  halves->reset_all(space, b.obs.data());
  groups->reset_all(space, c.obs.data());
  std::mt19937 g(3);
  auto host = [](const View1<float>& v) { return test::to_host(v.data(), v.extent(0)); };
  for (int t = 0; t < 80; ++t) {
    std::vector<float> h(std::size_t(n) * ad);
    for (float& x : h) x = std::uniform_real_distribution<float>(-1, 1)(g);
    Kokkos::deep_copy(act, Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()));
    whole->step(space, act.data(), a.out());
    halves->step_async(space, act.data(), b.out(), 0, 2);
    halves->step_wait(space);
    halves->step_async(space, act.data(), b.out(), 2, n);
    halves->step_wait(space);
    for (int k = 0; k < 3; ++k) {
      Kokkos::deep_copy(scratch, act);
      groups->step_async(space, scratch.data(), c.out(), 2 * k, 2 * k + 2);
      Kokkos::deep_copy(scratch, 0.5f);  // read before step_async returned: no effect
    }
    if (t == 0) {
      EXPECT_THROW(groups->step_async(space, act.data(), c.out(), 1, 3), Error);  // overlaps queued groups
    }
    for (int k = 0; k < 3; ++k) groups->step_wait(space);
    space.fence();
    ASSERT_EQ(host(a.obs), host(b.obs)) << "t " << t;
    ASSERT_EQ(host(a.rew), host(b.rew)) << "t " << t;
    ASSERT_EQ(host(a.obs), host(c.obs)) << "t " << t;
    ASSERT_EQ(host(a.rew), host(c.rew)) << "t " << t;
    // (a whole batch travels in one block, groups and halves one array at a time)
    auto flags = [](const View1<std::uint8_t>& v) {
      auto m = Kokkos::create_mirror_view_and_copy(HostSpace(), v);
      return std::vector<std::uint8_t>(m.data(), m.data() + m.extent(0));
    };
    for (const Out* other : {&b, &c}) {
      ASSERT_EQ(flags(a.term), flags(other->term)) << "t " << t;
      ASSERT_EQ(flags(a.trunc), flags(other->trunc)) << "t " << t;
      for (int i = 0; i < n; ++i)
        if (flags(a.term)[std::size_t(i)] || flags(a.trunc)[std::size_t(i)])
          for (int k = 0; k < od; ++k)
            ASSERT_EQ(host(a.fin)[std::size_t(i * od + k)], host(other->fin)[std::size_t(i * od + k)]) << "t " << t;
    }
    if ((t + 1) % 7 == 0) ASSERT_EQ(flags(a.trunc), std::vector<std::uint8_t>(n, 1)) << "t " << t;  // the limit came
  }
}

TEST(Mujoco, TimeLimitTruncatesAtGymnasiumsStepAndResets) {
  const Trace tr = rollout("HalfCheetah-v5", 2, 1001, 0, with_threads(1));
  for (int t = 0; t < 1001; ++t)
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(tr.term[std::size_t(t) * 2 + i], 0);
      EXPECT_EQ(tr.trunc[std::size_t(t) * 2 + i], t == 999 ? 1 : 0) << "t " << t;
    }
  EXPECT_EQ(tr.stats.count, 2);
  EXPECT_EQ(tr.stats.length_sum, 2000);
}

// A step of every env travels in one block (one copy), which one kernel spreads into the caller's
// arrays: every value of every array lands where it belongs.
TEST(Mujoco, ResultBlockSpreadsIntoEveryArray) {
  const int n = 3, od = 5;
  const mujoco::ResultBlock block{n, od};
  std::vector<unsigned char> host(block.bytes());
  const StepOutputs h = block.at(host.data());
  for (int k = 0; k < n * od; ++k) {
    h.next_obs[k] = 1.0f + float(k);
    h.final_obs[k] = -100.0f - float(k);
  }
  for (int i = 0; i < n; ++i) {
    h.reward[i] = 0.25f * float(i + 1);
    h.terminated[i] = std::uint8_t(i == 1);
    h.truncated[i] = std::uint8_t(i == 2);
  }
  View1<unsigned char> mirror("mirror", block.bytes());
  Kokkos::deep_copy(mirror, Kokkos::View<const unsigned char*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(), host.size()));
  View1<float> obs("obs", n * od), fin("fin", n * od), rew("rew", n);
  View1<std::uint8_t> term("term", n), trunc("trunc", n);
  ExecSpace space;
  mujoco::spread_results(space, block, mirror.data(), StepOutputs{obs.data(), fin.data(), rew.data(), term.data(), trunc.data()});
  space.fence();
  const auto o = test::to_host(obs.data(), obs.extent(0)), f = test::to_host(fin.data(), fin.extent(0));
  const auto r = test::to_host(rew.data(), rew.extent(0));
  auto te = Kokkos::create_mirror_view_and_copy(HostSpace(), term);
  auto tr = Kokkos::create_mirror_view_and_copy(HostSpace(), trunc);
  for (int k = 0; k < n * od; ++k) {
    EXPECT_EQ(o[std::size_t(k)], h.next_obs[k]) << k;
    EXPECT_EQ(f[std::size_t(k)], h.final_obs[k]) << k;
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(r[std::size_t(i)], h.reward[i]) << i;
    EXPECT_EQ(te(i), h.terminated[i]) << i;
    EXPECT_EQ(tr(i), h.truncated[i]) << i;
  }
}

TEST(Mujoco, BadSettingsAreNamed) {
  EnvOverrides o;
  o.mujoco.kwargs.contact_cost_weight = 1.0;
  try {
    env_spec("Hopper-v5", o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("env.contact_cost_weight: Hopper-v5 has no such setting"), std::string::npos)
        << e.what();
  }
  o = EnvOverrides{};
  o.mujoco.model_path = "/nonexistent/dir";
  try {
    make_vec_env("Ant-v5", 1, 0, 0, o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("env.model_path: /nonexistent/dir is not a model file"), std::string::npos)
        << e.what();
  }
}

// A Gymnasium installed after CMake ran (a virtual environment here) holds the models: found at
// run time, in the order the header gives, and loaded; a model nowhere is one line saying what to do.
TEST(Mujoco, ModelsAreFoundInAGymnasiumInstalledLater) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("gmi_venv_" + std::to_string(::getpid()));
  const fs::path venv = root / "venv", extra = root / "pythonpath";
  const fs::path assets = venv / "lib/python3.99/site-packages/gymnasium/envs/mujoco/assets";
  fs::create_directories(assets);
  fs::create_directories(extra / "gymnasium/envs/mujoco/assets");
  std::ofstream(assets / "gmi_test_box.xml")
      << "<mujoco><worldbody><body><freejoint/><geom type='box' size='.1 .1 .1'/></body></worldbody></mujoco>\n";
  const auto restore = [](const char* name, const char* old) {
    if (old) ::setenv(name, old, 1);
    else ::unsetenv(name);
  };
  const char* old_venv = std::getenv("VIRTUAL_ENV");
  const char* old_path = std::getenv("PYTHONPATH");
  const std::string saved_venv = old_venv ? old_venv : "", saved_path = old_path ? old_path : "";
  ::setenv("VIRTUAL_ENV", venv.c_str(), 1);
  ::setenv("PYTHONPATH", (extra.string() + ":/nonexistent").c_str(), 1);
  const auto found = mujoco::installed_gymnasium_assets();
  ASSERT_GE(found.size(), 2u);
  EXPECT_EQ(found[0], (extra / "gymnasium/envs/mujoco/assets").string());  // $PYTHONPATH first
  EXPECT_EQ(found[1], assets.string());
  const auto model = mujoco::load_model("gmi_test_box.xml", "");
  EXPECT_EQ(model->nbody, 2);
  try {
    mujoco::load_model("gmi_no_such_model.xml", "");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("env.model_path: cannot find gmi_no_such_model.xml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("install Gymnasium"), std::string::npos) << e.what();
  }
  restore("VIRTUAL_ENV", old_venv ? saved_venv.c_str() : nullptr);
  restore("PYTHONPATH", old_path ? saved_path.c_str() : nullptr);
  fs::remove_all(root);
}

}  // namespace
}  // namespace gmi::envs
