// PPO on the multi-agent Tag games (src/algos/ppo/multi_agent.hpp): one policy per role, the game
// stepped once per step for all roles; determinism, exact save/restore of every role and the
// game, frozen roles, the metrics, and config errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "src/algos/ppo/multi_agent.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"
#include "tests/support/test_util.hpp"

namespace {

using gmi::algos::IterationMetrics;
using gmi::algos::MultiAgentPpoTrainer;

gmi::config::Config tag(const std::string& game, gmi::config::Overrides extra = {}) {
  gmi::config::Overrides ov = {{"env.name", game},           {"env.num_envs", "6"},
                               {"env.episode_length", "15"}, {"ppo.num_steps", "10"},
                               {"ppo.num_minibatches", "2"}, {"ppo.update_epochs", "2"},
                               {"policy.actor_hidden", "[16]"}, {"policy.critic_hidden", "[16]"},
                               {"train.total_env_steps", "6000"}};
  if (game == "TagContinuous-v0") {
    ov.emplace_back("env.num_runners", "5");
    ov.emplace_back("env.tagging_distance", "0.2");  // tags happen in a few steps
  } else {
    ov.emplace_back("env.num_taggers", "3");
  }
  ov.insert(ov.end(), extra.begin(), extra.end());
  return gmi::config::parse("{}", "test", ov);
}

using gmi::test::train;

TEST(MultiAgent, OnePolicyPerRoleDeterministicAndLearning) {
  for (const char* game : {"TagGridworld-v0", "TagContinuous-v0"}) {
    SCOPED_TRACE(game);
    const auto cfg = tag(game);
    std::vector<IterationMetrics> ms;
    const auto a = train(cfg, 3, &ms);
    EXPECT_EQ(a, train(cfg, 3));
    EXPECT_NE(a, train(cfg, 0)) << "updates moved the weights";
    auto other = cfg;
    other.train.seed = 9;
    EXPECT_NE(a, train(other, 3));
    auto t = gmi::algos::make_trainer(cfg, 0);
    const auto& names = t->loss_columns();
    ASSERT_EQ(names.size(), ms[0].losses.size());
    EXPECT_EQ(names.front(), "tagger_policy_loss");
    EXPECT_EQ(names[6], "runner_policy_loss");
    for (double v : ms.back().losses) EXPECT_TRUE(std::isfinite(v));
    // two roles, 2 epochs x 2 minibatches each
    EXPECT_EQ(ms.back().updates, 8);
    // episodes of 15 steps end during 10-step iterations; per-role returns and tags as terms
    double episodes = 0;
    for (const auto& m : ms) episodes += m.episodes;
    EXPECT_GT(episodes, 0);
    EXPECT_EQ(t->env_spec().reward_terms,
              (std::vector<std::string>{"tagger_return", "runner_return", "runners_tagged", "tag_rate"}));
  }
}

TEST(MultiAgent, TwoRolesStartFromDifferentWeights) {
  // Tag's roles have the same shapes; each role's initial weights come from its own seed.
  auto t = gmi::algos::make_trainer(tag("TagContinuous-v0"), 0);
  auto& ma = dynamic_cast<MultiAgentPpoTrainer&>(*t);
  EXPECT_NE(ma.role(0).params_host(), ma.role(1).params_host());
}

TEST(MultiAgent, FrozenRoleKeepsItsWeights) {
  auto t = gmi::algos::make_trainer(tag("TagGridworld-v0", {{"ppo.frozen_roles", "[runner]"}}), 0);
  auto& ma = dynamic_cast<MultiAgentPpoTrainer&>(*t);
  const auto runner = ma.role(1).params_host(), tagger = ma.role(0).params_host();
  const IterationMetrics m = t->iterate();
  EXPECT_EQ(ma.role(1).params_host(), runner);
  EXPECT_NE(ma.role(0).params_host(), tagger);
  EXPECT_EQ(m.updates, 4);
  EXPECT_TRUE(std::isnan(m.losses[6])) << "a frozen role has no losses";
}

TEST(MultiAgent, SaveAndLoadResumeExactly) {
  for (const char* game : {"TagGridworld-v0", "TagContinuous-v0"}) {
    SCOPED_TRACE(game);
    // One kernel path for all three runs: under auto two fresh runs (straight, first) time the
    // paths apart and may keep different ones where they are close (AutoKeepsEachRolesKernelsOnResume
    // checks auto's resume).
    const auto cfg = tag(game, {{"ppo.normalize_obs", "true"},
                                {"ppo.normalize_reward", "true"},
                                {"device.fused_kernels", "off"}});
    auto straight = gmi::algos::make_trainer(cfg, 0);
    std::vector<IterationMetrics> a, b;
    for (int i = 0; i < 4; ++i) a.push_back(straight->iterate());
    auto first = gmi::algos::make_trainer(cfg, 0);
    for (int i = 0; i < 2; ++i) first->iterate();
    const auto mid = first->save_state();
    auto resumed = gmi::algos::make_trainer(cfg, 0);
    resumed->load_state(mid);
    for (int i = 0; i < 2; ++i) b.push_back(resumed->iterate());
    const auto x = straight->save_state(), y = resumed->save_state();
    EXPECT_EQ(x.params, y.params);
    EXPECT_EQ(x.adam_m, y.adam_m);
    EXPECT_EQ(x.obs, y.obs);
    EXPECT_EQ(x.tensors64, y.tensors64);
    EXPECT_EQ(x.counters, y.counters);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(a[2 + i].losses, b[i].losses);
      EXPECT_EQ(a[2 + i].episode_term_sums, b[i].episode_term_sums);
    }
  }
}

// WarpDrive's action space for continuous Tag: an acceleration and a turn index per agent, a
// softmax head for each (the layered kernels even under fused_kernels on: the fused ones take
// one head).  The initial policies are near uniform over each index (entropy 2 ln 11), the run is
// deterministic and resumes exactly.
TEST(MultiAgent, MultiDiscreteHeadsTrainAndResumeExactly) {
  const auto cfg = tag("TagContinuous-v0", {{"env.multi_discrete_actions", "true"}, {"device.fused_kernels", "on"}});
  auto straight = gmi::algos::make_trainer(cfg, 0);
  EXPECT_EQ(straight->env_spec().action_nvec, (std::vector<int>{11, 11}));
  EXPECT_EQ(straight->kernels().rfind("layered", 0), 0u) << straight->kernels();
  std::vector<IterationMetrics> a, b;
  for (int i = 0; i < 4; ++i) a.push_back(straight->iterate());
  const auto& names = straight->loss_columns();
  for (std::size_t k = 0; k < names.size(); ++k) {
    EXPECT_TRUE(std::isfinite(a[0].losses[k])) << names[k];
    if (names[k].find("entropy") != std::string::npos) {
      EXPECT_NEAR(a[0].losses[k], 2 * std::log(11.0), 0.05) << names[k];
    }
  }
  auto first = gmi::algos::make_trainer(cfg, 0);
  for (int i = 0; i < 2; ++i) first->iterate();
  auto resumed = gmi::algos::make_trainer(cfg, 0);
  resumed->load_state(first->save_state());
  for (int i = 0; i < 2; ++i) b.push_back(resumed->iterate());
  EXPECT_EQ(straight->params_host(), resumed->params_host());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(a[2 + i].losses, b[i].losses);
  // A policy of the joint action space does not load into this one.
  auto joint = gmi::algos::make_trainer(tag("TagContinuous-v0"), 0);
  EXPECT_THROW(resumed->load_state(joint->save_state()), gmi::Error);
}

// Each role keeps its own kernels across a restart with device.fused_kernels: auto (the role's
// `kernel_paths` counter, under the role's name in the game's state); host builds record none.
TEST(MultiAgent, AutoKeepsEachRolesKernelsOnResume) {
  const auto cfg = tag("TagContinuous-v0", {{"device.fused_kernels", "auto"}});
  auto first = gmi::algos::make_trainer(cfg, 0);
  first->iterate();
  const auto mid = first->save_state();
  std::vector<std::string> names;
  for (const auto& c : mid.counters)
    if (c.first.find("kernel_paths") != std::string::npos) names.push_back(c.first);
  if (gmi::device_is_host()) {
    EXPECT_TRUE(names.empty());
    return;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"tagger_kernel_paths", "runner_kernel_paths"}));
  auto resumed = gmi::algos::make_trainer(cfg, 0);
  resumed->load_state(mid);
  EXPECT_EQ(resumed->kernels(), first->kernels());
  first->iterate();
  resumed->iterate();
  EXPECT_EQ(resumed->params_host(), first->params_host());
}

TEST(MultiAgent, ConfigErrorsNameTheKey) {
  const auto error = gmi::test::config_error;
  EXPECT_EQ(error({{"env.name", "TagContinuous-v0"}, {"algo", "sac"}}),
            "config c.yaml: algo: TagContinuous-v0 is a multi-agent environment: it trains with ppo (one policy per role)");
  EXPECT_EQ(error({{"env.name", "TagGridworld-v0"}, {"env.max_speed", "2"}}),
            "config c.yaml: env.max_speed: TagGridworld-v0 does not take this parameter (TagContinuous-v0 only)");
  EXPECT_EQ(error({{"env.name", "CartPole-v1"}, {"env.num_taggers", "3"}}),
            "config c.yaml: env.num_taggers: CartPole-v1 does not take this parameter (TagGridworld-v0 and "
            "TagContinuous-v0 only)");
  EXPECT_EQ(error({{"env.name", "TagGridworld-v0"}, {"ppo.frozen_roles", "[chaser]"}}),
            "config c.yaml: ppo.frozen_roles: 'chaser' is not a role of TagGridworld-v0 (its roles: tagger runner)");
  EXPECT_EQ(error({{"env.name", "TagGridworld-v0"}, {"env.max_episode_steps", "50"}}),
            "config c.yaml: env.max_episode_steps: TagGridworld-v0 ends its episodes at env.episode_length; leave this 0");
  EXPECT_EQ(error({{"env.name", "TagContinuous-v0"}, {"env.num_other_agents_observed", "0"}}),
            "config c.yaml: env.num_other_agents_observed: expected an integer in [1, 11], got 0");
  EXPECT_EQ(error({{"env.name", "TagGridworld-v0"}, {"env.num_taggers", "1000"}, {"env.num_envs", "100000"},
                   {"ppo.num_steps", "128"}}),
            "config c.yaml: env.num_envs: env.num_envs * agents of a role (1000) * ppo.num_steps = 12800000000 "
            "exceeds 2147483647 samples per GMI");
}

}  // namespace
