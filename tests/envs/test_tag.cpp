// The Tag games through MultiAgentVecEnvBase: spec shapes, determinism and layout independence of
// the counter-based resets, exact save/load, the two ways an episode ends (every runner tagged,
// the time limit), episode statistics, the parameter checks' error lines, and 1000 agents per
// environment.  The rules themselves are checked step by step against the NumPy reference by
// compare_tag.py (ctest env_tag_reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/multiagent/tag.hpp"
#include "kernels/envs/registry.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::envs {
namespace {

/// One step's results copied to the host, per role.
struct Step {
  std::vector<std::vector<float>> obs, final_obs, reward;
  std::vector<std::vector<std::uint8_t>> terminated, truncated;
};

/// An env with its per-role device buffers.
struct Harness {
  std::unique_ptr<MultiAgentVecEnvBase> env;
  std::vector<View1<float>> obs, fin, rew, act;
  std::vector<View1<std::uint8_t>> term, trunc;
  ExecSpace space;

  Harness(const std::string& name, int n, std::uint64_t seed, std::uint64_t offset, const TagParams& p)
      : env(make_tag_env(name, n, seed, offset, p)) {
    for (const RoleSpec& r : env->spec().roles) {
      const std::size_t rows = std::size_t(n) * r.agents;
      obs.emplace_back("obs", rows * r.obs_dim);
      fin.emplace_back("final_obs", rows * r.obs_dim);
      rew.emplace_back("reward", rows);
      act.emplace_back("actions", rows * r.act_dim());
      term.emplace_back("terminated", rows);
      trunc.emplace_back("truncated", rows);
    }
  }
  int roles() const { return int(env->spec().roles.size()); }
  std::vector<std::vector<float>> reset(std::uint64_t first_episode = 0) {
    std::vector<float*> p;
    for (auto& v : obs) p.push_back(v.data());
    env->reset_all(space, p.data(), first_episode);
    std::vector<std::vector<float>> out;
    for (auto& v : obs) out.push_back(test::to_host(v));
    return out;
  }
  Step step(const std::vector<std::vector<float>>& actions) {
    std::vector<const float*> a;
    std::vector<StepOutputs> o(roles());
    for (int r = 0; r < roles(); ++r) {
      Kokkos::deep_copy(act[r], test::to_device(actions[r]));
      a.push_back(act[r].data());
      o[r].next_obs = obs[r].data();
      o[r].final_obs = fin[r].data();
      o[r].reward = rew[r].data();
      o[r].terminated = term[r].data();
      o[r].truncated = trunc[r].data();
    }
    env->step(space, a.data(), o.data());
    Step s;
    for (int r = 0; r < roles(); ++r) {
      s.obs.push_back(test::to_host(obs[r]));
      s.final_obs.push_back(test::to_host(fin[r]));
      s.reward.push_back(test::to_host(rew[r]));
      s.terminated.push_back(test::to_host(term[r]));
      s.truncated.push_back(test::to_host(trunc[r]));
    }
    return s;
  }
};

/// Random actions for every role's rows of `n` envs, from `gen`.
std::vector<std::vector<float>> random_actions(const MultiAgentSpec& s, int n, std::mt19937& gen) {
  std::vector<std::vector<float>> a;
  for (const RoleSpec& r : s.roles) {
    std::uniform_int_distribution<int> pick(0, r.num_actions - 1);
    a.emplace_back(std::size_t(n) * r.agents);
    for (float& x : a.back()) x = float(pick(gen));
  }
  return a;
}

/// Rows of env e in a role's buffer of width w.
template <class T>
std::vector<T> env_rows(const std::vector<T>& v, int e, int agents, int w = 1) {
  return std::vector<T>(v.begin() + std::size_t(e) * agents * w, v.begin() + std::size_t(e + 1) * agents * w);
}

TagParams small_continuous() {
  TagParams p;
  p.num_taggers = 2;
  p.num_runners = 5;
  p.episode_length = 30;
  p.tagging_distance = 0.1;
  p.use_full_observation = false;
  p.num_other_agents_observed = 3;
  return p;
}

TEST(Tag, Names) {
  EXPECT_EQ(multi_agent_env_names(), (std::vector<std::string>{"TagGridworld-v0", "TagContinuous-v0"}));
}

TEST(Tag, SpecShapes) {
  MultiAgentSpec g = tag_spec(kTagGridworld, {});
  ASSERT_EQ(g.roles.size(), 2u);
  EXPECT_EQ(g.roles[0].name, "tagger");
  EXPECT_EQ(g.roles[0].agents, 10);
  EXPECT_EQ(g.roles[1].name, "runner");
  EXPECT_EQ(g.roles[1].agents, 1);
  EXPECT_EQ(g.roles[0].obs_dim, 4 * 11 + 1);
  EXPECT_EQ(g.roles[1].obs_dim, 4 * 11 + 1);
  EXPECT_EQ(g.roles[0].num_actions, 5);
  EXPECT_EQ(g.max_episode_steps, 100);
  EXPECT_EQ(g.num_agents(), 11);
  TagParams p;
  p.use_full_observation = false;
  EXPECT_EQ(tag_spec(kTagGridworld, p).roles[1].obs_dim, 6);

  MultiAgentSpec c = tag_spec(kTagContinuous, {});
  EXPECT_EQ(c.roles[0].agents, 1);
  EXPECT_EQ(c.roles[1].agents, 10);
  EXPECT_EQ(c.roles[0].obs_dim, 7 * 10 + 1);
  EXPECT_EQ(c.roles[1].num_actions, 11 * 11);
  EXPECT_EQ(c.stat_terms, (std::vector<std::string>{"runners_tagged", "tag_rate"}));
  EXPECT_EQ(c.stat_divisors, (std::vector<double>{1.0, 10.0}));  // tag_rate: tags per runner
  p.num_other_agents_observed = 4;
  p.num_acceleration_levels = 3;
  p.num_turn_levels = 0;
  c = tag_spec(kTagContinuous, p);
  EXPECT_EQ(c.roles[0].obs_dim, 7 * 4 + 1);
  EXPECT_EQ(c.roles[1].num_actions, 4);
}

// With multi_discrete_actions an action is the pair (acceleration index, turn index) that the
// joint index k = i * (num_turn_levels + 1) + j stands for: the same game step for step.
TEST(Tag, ContinuousMultiDiscreteActionsAreThePairs) {
  TagParams joint = small_continuous(), pairs = small_continuous();
  joint.num_acceleration_levels = 4;
  joint.num_turn_levels = 6;
  pairs.num_acceleration_levels = 4;
  pairs.num_turn_levels = 6;
  pairs.multi_discrete_actions = true;
  const MultiAgentSpec s = tag_spec(kTagContinuous, pairs);
  for (const RoleSpec& r : s.roles) {
    EXPECT_EQ(r.action_nvec, (std::vector<int>{5, 7}));
    EXPECT_EQ(r.num_actions, 12);
    EXPECT_EQ(r.act_dim(), 2);
  }
  EXPECT_TRUE(tag_spec(kTagContinuous, joint).roles[0].action_nvec.empty());
  const int n = 3;
  Harness a(kTagContinuous, n, 5, 0, joint), b(kTagContinuous, n, 5, 0, pairs);
  EXPECT_EQ(a.reset(), b.reset());
  std::mt19937 gen(3);
  for (int t = 0; t < 40; ++t) {
    const std::vector<std::vector<float>> k = random_actions(a.env->spec(), n, gen);
    std::vector<std::vector<float>> ij(k.size());
    for (std::size_t r = 0; r < k.size(); ++r)
      for (float x : k[r]) ij[r].insert(ij[r].end(), {float(int(x) / 7), float(int(x) % 7)});
    const Step x = a.step(k), y = b.step(ij);
    ASSERT_EQ(x.obs, y.obs) << "step " << t;
    ASSERT_EQ(x.reward, y.reward) << "step " << t;
    ASSERT_EQ(x.terminated, y.terminated) << "step " << t;
    ASSERT_EQ(x.truncated, y.truncated) << "step " << t;
  }
}

/// Runs `steps` random steps; returns every observation, reward and flag, and the final state.
std::vector<float> trajectory(const std::string& name, const TagParams& p, int n, std::uint64_t seed,
                              std::uint64_t offset, int steps, unsigned action_seed, int only_env = -1) {
  Harness h(name, n, seed, offset, p);
  const MultiAgentSpec& s = h.env->spec();
  std::vector<float> out;
  auto keep = [&](const std::vector<float>& v, int r, int w) {
    const std::vector<float> x = only_env < 0 ? v : env_rows(v, only_env, s.roles[r].agents, w);
    out.insert(out.end(), x.begin(), x.end());
  };
  auto o = h.reset();
  for (int r = 0; r < h.roles(); ++r) keep(o[r], r, s.roles[r].obs_dim);
  std::mt19937 gen(action_seed);
  for (int t = 0; t < steps; ++t) {
    // The same actions for env `only_env` whatever n: draw actions per env in a fixed order.
    std::vector<std::vector<float>> a(h.roles());
    for (int r = 0; r < h.roles(); ++r) a[r].resize(std::size_t(n) * s.roles[r].agents);
    for (int e = 0; e < n; ++e) {
      std::mt19937 ge(action_seed * 7919u + unsigned(t) * 104729u + unsigned(offset + e));
      for (int r = 0; r < h.roles(); ++r) {
        std::uniform_int_distribution<int> pick(0, s.roles[r].num_actions - 1);
        for (int k = 0; k < s.roles[r].agents; ++k) a[r][std::size_t(e) * s.roles[r].agents + k] = float(pick(ge));
      }
    }
    const Step st = h.step(a);
    for (int r = 0; r < h.roles(); ++r) {
      keep(st.obs[r], r, s.roles[r].obs_dim);
      keep(st.reward[r], r, 1);
      std::vector<float> flags;
      for (std::size_t k = 0; k < st.terminated[r].size(); ++k)
        flags.push_back(float(st.terminated[r][k] + 2 * st.truncated[r][k]));
      keep(flags, r, 1);
    }
  }
  return out;
}

TEST(Tag, DeterministicUnderSeed) {
  for (const std::string name : {kTagGridworld, kTagContinuous}) {
    TagParams p = name == kTagContinuous ? small_continuous() : TagParams{};
    if (name == kTagGridworld) {
      p.num_taggers = 3;
      p.grid_length = 4;
      p.episode_length = 12;
    }
    const auto a = trajectory(name, p, 3, 11, 0, 60, 5);
    const auto b = trajectory(name, p, 3, 11, 0, 60, 5);
    EXPECT_EQ(a, b) << name;
    const auto c = trajectory(name, p, 3, 12, 0, 60, 5);
    EXPECT_NE(a, c) << name << ": another seed should give other initial states";
  }
}

TEST(Tag, LayoutIndependent) {
  // Global env 5 alone (offset 5) and as the third of 4 envs starting at 3: the same episodes,
  // resets included (episode_length 12 and tags within 60 steps).
  for (const std::string name : {kTagGridworld, kTagContinuous}) {
    TagParams p = name == kTagContinuous ? small_continuous() : TagParams{};
    p.episode_length = 12;
    if (name == kTagGridworld) {
      p.num_taggers = 3;
      p.grid_length = 4;
    }
    const auto alone = trajectory(name, p, 1, 3, 5, 60, 9, 0);
    const auto among = trajectory(name, p, 4, 3, 3, 60, 9, 2);
    EXPECT_EQ(alone, among) << name;
  }
}

TEST(Tag, SaveLoadExact) {
  for (const std::string name : {kTagGridworld, kTagContinuous}) {
    TagParams p = name == kTagContinuous ? small_continuous() : TagParams{};
    if (name == kTagGridworld) {
      p.num_taggers = 3;
      p.grid_length = 5;
      p.episode_length = 9;
    }
    Harness a(name, 3, 21, 0, p);
    a.reset();
    std::mt19937 gen(3);
    for (int t = 0; t < 17; ++t) a.step(random_actions(a.env->spec(), 3, gen));
    const std::vector<StateArray> saved = a.env->save_state(a.space);
    // The names are the datasets of checkpoints already written: they must not change.
    std::vector<std::string> names;
    for (const StateArray& s : saved) names.push_back(s.name);
    const std::vector<std::string> counters = {"timestep",    "episode",     "ep_return",     "ep_tags",
                                               "done_return", "done_length", "done_episodes", "done_tags"};
    EXPECT_TRUE(std::equal(counters.begin(), counters.end(), names.end() - counters.size())) << name;
    const std::mt19937 gen_at_save = gen;
    std::vector<Step> straight;
    for (int t = 0; t < 25; ++t) straight.push_back(a.step(random_actions(a.env->spec(), 3, gen)));
    const auto stats_a = a.env->take_episode_stats(a.space);

    Harness b(name, 3, 21, 0, p);
    b.reset(1000);  // overwritten by load_state
    b.env->load_state(b.space, saved);
    gen = gen_at_save;
    for (int t = 0; t < 25; ++t) {
      const Step s = b.step(random_actions(b.env->spec(), 3, gen));
      for (int r = 0; r < b.roles(); ++r) {
        EXPECT_EQ(s.obs[r], straight[t].obs[r]) << name << " step " << t;
        EXPECT_EQ(s.reward[r], straight[t].reward[r]) << name << " step " << t;
        EXPECT_EQ(s.terminated[r], straight[t].terminated[r]);
        EXPECT_EQ(s.truncated[r], straight[t].truncated[r]);
      }
    }
    const auto stats_b = b.env->take_episode_stats(b.space);
    for (int r = 0; r < b.roles(); ++r) {
      EXPECT_EQ(stats_a[r].return_sum, stats_b[r].return_sum);
      EXPECT_EQ(stats_a[r].count, stats_b[r].count);
      EXPECT_GT(stats_a[r].count, 0.0) << name << ": episodes should end within 42 steps";
    }
    // A missing array is named.
    std::vector<StateArray> partial(saved.begin() + 1, saved.end());
    try {
      b.env->load_state(b.space, partial);
      ADD_FAILURE() << "load_state accepted a state without " << saved[0].name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + saved[0].name + "'"), std::string::npos) << e.what();
    }
  }
}

std::vector<StateArray> state_named(const std::vector<StateArray>& s, const std::string& name) {
  std::vector<StateArray> out;
  for (const StateArray& a : s)
    if (a.name == name) out.push_back(a);
  return out;
}

TEST(Tag, ContinuousEndsWhenEveryRunnerIsTagged) {
  // Everyone within tagging distance of the tagger (agent 0): every runner is tagged in step 1.
  TagParams p;
  p.num_taggers = 1;
  p.num_runners = 3;
  p.grid_length = 10;
  p.tagging_distance = 0.5;
  p.starting_location_x = {5, 5.5, 4.5, 5};
  p.starting_location_y = {5, 5, 5, 6};
  p.step_reward_for_runner = 0.25;
  Harness h(kTagContinuous, 2, 1, 0, p);
  h.reset();
  const Step s = h.step({{0, 0}, std::vector<float>(6, 0.0f)});  // no acceleration, no turn
  for (int r = 0; r < 2; ++r)
    for (std::size_t k = 0; k < s.terminated[r].size(); ++k) {
      EXPECT_EQ(s.terminated[r][k], 1);
      EXPECT_EQ(s.truncated[r][k], 0);
    }
  EXPECT_EQ(s.reward[0][0], 3 * 1.0f);            // the tagger: once per runner
  EXPECT_EQ(s.reward[1][0], 0.25f - 1.0f);         // step reward, then the tag penalty
  // The final observation still shows the runners in the game (WarpDrive's order); after the
  // reset everyone is back in the game at the start.
  const int od = h.env->spec().roles[0].obs_dim, m = (od - 1) / 7;
  for (int slot = 0; slot < m; ++slot) EXPECT_EQ(s.final_obs[0][6 * m + slot], 1.0f);
  const auto st = state_named(h.env->full_state(h.space), "still_in_game");
  ASSERT_EQ(st.size(), 1u);
  for (int v : std::get<std::vector<int>>(st[0].values)) EXPECT_EQ(v, 1);
  const auto stats = h.env->take_episode_stats(h.space);
  EXPECT_EQ(stats[0].count, 2.0);   // 2 envs x 1 tagger
  EXPECT_EQ(stats[1].count, 6.0);   // 2 envs x 3 runners
  EXPECT_EQ(stats[0].term_sums[0] / stats[0].count, 3.0);  // 3 runners tagged per episode
  EXPECT_EQ(stats[0].length_sum / stats[0].count, 1.0);
  EXPECT_FLOAT_EQ(stats[1].return_sum, 6 * (0.25f - 1.0f));
}

TEST(Tag, ContinuousRunnerLeavesTheGame) {
  // One of two runners next to the tagger: it is tagged, keeps its row with reward 0 and a zero
  // observation from the next step on, and the game goes on.
  TagParams p;
  p.num_taggers = 1;
  p.num_runners = 2;
  p.tagging_distance = 0.05;
  p.starting_location_x = {5, 5.2, 0.5};
  p.starting_location_y = {5, 5, 9};
  Harness h(kTagContinuous, 1, 1, 0, p);
  h.reset();
  const std::vector<std::vector<float>> still_actions{{0}, {0, 0}};
  Step s = h.step(still_actions);
  EXPECT_EQ(s.reward[1][0], -1.0f);
  EXPECT_EQ(s.reward[1][1], 0.0f);
  EXPECT_EQ(s.terminated[1][0], 0);
  s = h.step({{0}, {17, 17}});
  EXPECT_EQ(s.reward[1][0], 0.0f);
  // Full observation (the default) of an agent out of the game: zeros but the others' type and
  // in_game flags, and time 0.
  const int od = h.env->spec().roles[1].obs_dim;
  ASSERT_EQ(od, 7 * 2 + 1);
  const std::vector<float> seen(s.obs[1].begin(), s.obs[1].begin() + od);
  EXPECT_EQ(seen, (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0}));
  const auto st = h.env->full_state(h.space);
  const auto still = std::get<std::vector<int>>(state_named(st, "still_in_game")[0].values);
  EXPECT_EQ(still, (std::vector<int>{1, 0, 1}));
  const auto x = std::get<std::vector<float>>(state_named(st, "loc_x")[0].values);
  EXPECT_EQ(x[1], 5.2f);  // its actions are ignored
}

TEST(Tag, GridworldEndsWhenTheRunnerIsTagged) {
  TagParams p;
  p.num_taggers = 2;
  p.grid_length = 4;
  p.starting_location_x = {1, 3, 2};
  p.starting_location_y = {0, 3, 0};
  Harness h(kTagGridworld, 1, 1, 0, p);
  h.reset();
  const Step s = h.step({{1, 0}, {0}});  // tagger 0 steps onto the runner; tagger 1 stays
  EXPECT_EQ(s.terminated[0], (std::vector<std::uint8_t>{1, 1}));
  EXPECT_EQ(s.terminated[1], (std::vector<std::uint8_t>{1}));
  EXPECT_EQ(s.reward[0], (std::vector<float>{10.0f, 10.0f}));
  EXPECT_EQ(s.reward[1][0], -2.0f);
  // Next episode starts from the given locations again.
  const auto st = h.env->full_state(h.space);
  EXPECT_EQ(std::get<std::vector<int>>(state_named(st, "loc_x")[0].values), (std::vector<int>{1, 3, 2}));
  // A wall hit costs wall_hit_penalty on top of the step cost (tagger 1 moves to (4, 3): no hit).
  const Step w = h.step({{4, 1}, {4}});
  EXPECT_EQ(w.reward[0][0], -0.1f - 0.01f);
  EXPECT_EQ(w.reward[0][1], -0.01f);
  EXPECT_EQ(w.reward[1][0], -0.1f + 0.01f);
}

TEST(Tag, TimeLimit) {
  for (const std::string name : {kTagGridworld, kTagContinuous}) {
    TagParams p;
    p.episode_length = 7;
    if (name == kTagContinuous) {
      p.tagging_distance = 0.0;  // never tagged
      p.num_runners = 2;
    } else {
      p.num_taggers = 1;
      p.starting_location_x = {4, 0};  // a tagger that stays never reaches the runner
      p.starting_location_y = {4, 0};
    }
    Harness h(name, 2, 4, 0, p);
    h.reset();
    const MultiAgentSpec& s = h.env->spec();
    for (int t = 1; t <= 7; ++t) {
      std::vector<std::vector<float>> a;
      for (const RoleSpec& r : s.roles) a.emplace_back(std::size_t(2) * r.agents, 0.0f);
      const Step st = h.step(a);
      for (int r = 0; r < 2; ++r) {
        const int od = s.roles[r].obs_dim;
        for (std::size_t k = 0; k < st.truncated[r].size(); ++k) {
          EXPECT_EQ(st.truncated[r][k], t == 7) << name << " t " << t;
          EXPECT_EQ(st.terminated[r][k], 0) << name << " t " << t;
          // the time feature is the last: t / episode_length, 0 again after the reset
          EXPECT_FLOAT_EQ(st.obs[r][(k + 1) * od - 1], t == 7 ? 0.0f : float(t) / 7.0f);
          if (t == 7) {
            EXPECT_FLOAT_EQ(st.final_obs[r][(k + 1) * od - 1], 1.0f);
          }
        }
      }
      if (name == kTagContinuous && t == 7) {
        EXPECT_EQ(st.reward[1][0], 1.0f);  // end-of-game reward for runners still in the game
      }
    }
    const auto stats = h.env->take_episode_stats(h.space);
    EXPECT_EQ(stats[0].length_sum / stats[0].count, 7.0) << name;
    EXPECT_EQ(stats[1].term_sums[0], 0.0) << name;
  }
}

std::string error_of(const std::string& name, const TagParams& p) {
  try {
    check_tag_params(name, p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Tag, InvalidParameters) {
  TagParams p;
  p.num_taggers = 0;
  EXPECT_EQ(error_of(kTagContinuous, p), "env.num_taggers: expected an integer in [1, 1048575], got 0");
  p = {};
  p.num_runners = 2;
  EXPECT_EQ(error_of(kTagGridworld, p), "env.num_runners: expected 1 or null (TagGridworld-v0 has one runner), got 2");
  p = {};
  p.grid_length = 2.5;
  EXPECT_EQ(error_of(kTagGridworld, p), "env.grid_length: expected a whole number in [1, 10000] for TagGridworld-v0, got 2.5");
  p = {};
  p.tag_penalty_for_runner = 1.0;
  EXPECT_EQ(error_of(kTagContinuous, p), "env.tag_penalty_for_runner: expected <= 0, got 1");
  EXPECT_EQ(error_of(kTagGridworld, p), "");  // the gridworld subtracts it
  p = {};
  p.wall_hit_penalty = 0.5;
  EXPECT_EQ(error_of(kTagContinuous, p),
            "env.wall_hit_penalty: TagContinuous-v0 does not take this parameter (TagGridworld-v0 only)");
  p = {};
  p.runner_exits_game_after_tagged = false;
  EXPECT_EQ(error_of(kTagGridworld, p),
            "env.runner_exits_game_after_tagged: TagGridworld-v0 does not take this parameter (TagContinuous-v0 only)");
  p = {};
  p.starting_location_x = {1, 2};
  p.starting_location_y = {1, 2};
  EXPECT_EQ(error_of(kTagContinuous, p),
            "env.starting_location_x: expected 11 values (one per agent: num_taggers + num_runners, taggers "
            "first) or [], got 2 values");
  p.starting_location_y = {};
  EXPECT_EQ(error_of(kTagContinuous, p),
            "env.starting_location_y: expected a list given together with the other starting_location (both or "
            "neither), got []");
  p = {};
  p.num_other_agents_observed = 12;
  EXPECT_EQ(error_of(kTagContinuous, p), "env.num_other_agents_observed: expected an integer in [1, 11], got 12");
  p = {};
  p.tagging_distance = 1.5;
  EXPECT_EQ(error_of(kTagContinuous, p), "env.tagging_distance: expected <= 1, got 1.5");
  p = {};
  p.min_turn = 2.0;
  EXPECT_EQ(error_of(kTagContinuous, p), "env.min_turn: expected <= 1.570796327, got 2");
  p = {};
  p.edge_hit_penalty = 0.1;
  EXPECT_EQ(error_of(kTagContinuous, p), "env.edge_hit_penalty: expected <= 0, got 0.1");
  p = {};
  p.episode_length = 0;
  EXPECT_EQ(error_of(kTagGridworld, p), "env.episode_length: expected an integer in [1, 1073741824], got 0");
  p = {};
  p.starting_location_x = std::vector<double>(11, 3.5);
  p.starting_location_y = std::vector<double>(11, 3.0);
  EXPECT_EQ(error_of(kTagGridworld, p), "env.starting_location_x: expected whole numbers in [0, 10], got 3.5");
  EXPECT_EQ(error_of("Tag-v0", {}), "unknown environment 'Tag-v0': expected one of TagGridworld-v0 TagContinuous-v0");
  EXPECT_THROW(make_tag_env(kTagGridworld, 2, 0, 0, p), InputError);
}

TEST(Tag, ThousandAgentsPerEnv) {
  // 100 taggers and 900 runners per env, the 10 nearest observed: the observation lists other
  // agents in the game nearest first.
  TagParams p;
  p.num_taggers = 100;
  p.num_runners = 900;
  p.grid_length = 40;
  p.use_full_observation = false;
  p.num_other_agents_observed = 10;
  p.episode_length = 50;
  Harness h(kTagContinuous, 2, 8, 0, p);
  h.reset();
  std::mt19937 gen(1);
  Step s;
  for (int t = 0; t < 5; ++t) s = h.step(random_actions(h.env->spec(), 2, gen));
  const int od = h.env->spec().roles[1].obs_dim, m = 10;
  const auto still = std::get<std::vector<int>>(state_named(h.env->full_state(h.space), "still_in_game")[0].values);
  int left = 0;
  for (int v : still) left += v;
  EXPECT_LT(left, 2000) << "some runners should have been tagged in 5 steps";
  for (int r = 0; r < 2; ++r)
    for (std::size_t k = 0; k < s.reward[r].size(); ++k) {
      const float* o = s.obs[r].data() + k * od;
      for (int j = 0; j < od; ++j) ASSERT_TRUE(std::isfinite(o[j]));
      if (o[7 * m] == 0.0f) continue;  // out of the game
      float prev = 0.0f;
      for (int slot = 0; slot < m; ++slot) {
        const float d = std::hypot(o[slot], o[m + slot]);
        EXPECT_GE(d, prev - 1e-6f);
        EXPECT_EQ(o[6 * m + slot], 1.0f);
        prev = d;
      }
    }
  // Full observation of 1000 agents runs too.
  p.use_full_observation = true;
  Harness f(kTagGridworld, 2, 8, 0, [] {
    TagParams g;
    g.num_taggers = 999;
    g.grid_length = 30;
    return g;
  }());
  f.reset();
  const Step g = f.step(random_actions(f.env->spec(), 2, gen));
  EXPECT_EQ(g.obs[0].size(), std::size_t(2) * 999 * (4 * 1000 + 1));
}

}  // namespace
}  // namespace gmi::envs
