// PpoTrainer as a whole: determinism under a seed, every option combination runs and stays
// finite, and updates change the weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "src/algos/ppo/ppo.hpp"
#include "src/config/config.hpp"
#include "src/algos/ppo/section.hpp"
#include "tests/support/test_util.hpp"

namespace {

gmi::config::Config small(const std::string& env, gmi::config::Overrides extra = {}) {
  gmi::config::Overrides ov = {{"env.name", env},          {"env.num_envs", "4"},
                               {"ppo.num_steps", "32"},    {"ppo.num_minibatches", "2"},
                               {"ppo.update_epochs", "2"}, {"train.total_env_steps", "1024"},
                               {"policy.actor_hidden", "[16, 16]"},
                               {"policy.critic_hidden", "[16]"}};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return gmi::config::parse("{}", "test", ov);
}

using gmi::test::train;

}  // namespace

TEST(PpoTrainer, SameSeedSameWeightsDifferentSeedDifferentWeights) {
  const auto a = train(small("CartPole-v1"), 3);
  const auto b = train(small("CartPole-v1"), 3);
  const auto c = train(small("CartPole-v1", {{"train.seed", "2"}}), 3);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);  // bitwise on one build
  EXPECT_NE(a, c);
}

TEST(PpoTrainer, UpdatesChangeWeightsAndMetricsAreFinite) {
  const auto cfg = small("CartPole-v1");
  gmi::algos::PpoTrainer t(cfg, 0);
  const auto before = t.params_host();
  const auto m = t.iterate();
  const auto after = t.params_host();
  EXPECT_NE(before, after);
  EXPECT_EQ(m.updates, 4);
  EXPECT_EQ(m.iteration, 1);
  // losses: policy_loss, value_loss, entropy, approx_kl, clip_frac, explained_variance
  ASSERT_EQ(t.loss_columns().size(), m.losses.size());
  EXPECT_EQ(t.loss_columns()[2], "entropy");
  for (std::size_t k = 0; k < 5; ++k) EXPECT_TRUE(std::isfinite(m.losses[k])) << t.loss_columns()[k];
  EXPECT_TRUE(std::isfinite(m.grad_norm));
  EXPECT_NEAR(m.losses[2], std::log(2.0), 0.01);  // near-uniform initial policy (gain 0.01)
  EXPECT_GE(m.losses[3], 0.0);
}

TEST(PpoTrainer, EveryEnvironmentAndOptionRuns) {
  for (const char* env : {"CartPole-v1", "Acrobot-v1", "Pendulum-v1", "MountainCarContinuous-v0"}) {
    for (const char* norm : {"false", "true"}) {
      SCOPED_TRACE(std::string(env) + " normalize=" + norm);
      std::vector<gmi::algos::IterationMetrics> ms;
      const auto p = train(small(env, {{"ppo.normalize_obs", norm},
                                       {"ppo.normalize_reward", norm},
                                       {"ppo.clip_vloss", norm},
                                       {"ppo.bootstrap_truncated", norm},
                                       {"env.max_episode_steps", "20"},
                                       {"device.fused_kernels", std::string(norm) == "true" ? "on" : "off"},
                                       {"policy.activation", std::string(norm) == "true" ? "elu" : "relu"}}),
                           2, &ms);
      for (float x : p) ASSERT_TRUE(std::isfinite(x));
      for (const auto& m : ms) {
        EXPECT_TRUE(std::isfinite(m.losses[1]));  // value_loss
        EXPECT_GT(m.episodes, 0);  // 20-step time limit: episodes end in every iteration
      }
    }
  }
}

TEST(PpoTrainer, TargetKlStopsEpochsEarly) {
  std::vector<gmi::algos::IterationMetrics> ms;
  train(small("CartPole-v1", {{"ppo.target_kl", "1e-12"}, {"ppo.update_epochs", "5"}}), 1, &ms);
  EXPECT_EQ(ms[0].updates, 2);  // the first epoch's 2 minibatches, then stop
}

TEST(PpoTrainer, LearningRateAnnealsLinearly) {
  std::vector<gmi::algos::IterationMetrics> ms;
  const auto cfg = small("CartPole-v1");  // 1024 steps / 128 per iteration = 8 iterations
  train(cfg, 3, &ms);
  EXPECT_DOUBLE_EQ(ms[0].learning_rate, cfg.section<gmi::algos::PpoConfig>().learning_rate);
  EXPECT_DOUBLE_EQ(ms[2].learning_rate, cfg.section<gmi::algos::PpoConfig>().learning_rate * (1.0 - 2.0 / 8.0));
}

TEST(PpoTrainer, FusedKernelsMatchLayeredPath) {
  for (const char* env : {"CartPole-v1", "Pendulum-v1"}) {
    SCOPED_TRACE(env);
    const auto extra = [](const char* mode) {
      return gmi::config::Overrides{{"device.fused_kernels", mode}, {"ppo.normalize_obs", "true"}};
    };
    // Same samples (same weights and random counters during the first rollout), same update up to
    // float summation order: weights after one iteration agree to a few ulps of the step size.
    const auto on = train(small(env, extra("on")), 1);
    const auto off = train(small(env, extra("off")), 1);
    ASSERT_EQ(on.size(), off.size());
    double worst = 0;
    for (std::size_t i = 0; i < on.size(); ++i) worst = std::max(worst, double(std::fabs(on[i] - off[i])));
    EXPECT_LT(worst, 1e-5) << "largest weight difference";
    EXPECT_NE(on, train(small(env, extra("off")), 0));  // and the update did move the weights
  }
}

// device.graphs replays the captured rollout with the step base read on the device, and each
// captured epoch of the update with the iteration's permutation keys, annealed learning rate and
// Adam step count read there: the same actions, episodes, losses and weights as launching every
// kernel (bitwise; fused and layered kernels, discrete and continuous, KL early stopping, APPO's
// V-trace minibatches, shared hidden layers, a game's roles).  On host builds both runs launch directly.
TEST(PpoTrainer, GraphsGiveTheSameRunAsDirectLaunches) {
  struct Case {
    std::string name;
    gmi::config::Config cfg;
  };
  std::vector<Case> cases;
  for (const char* env : {"CartPole-v1", "Pendulum-v1"})
    for (const char* fused : {"on", "off"})
      cases.push_back({std::string(env) + " fused " + fused,
                       small(env, {{"device.fused_kernels", fused}, {"ppo.normalize_obs", "true"}})});
  // the kernels fixed: auto could time its way to other ones in each run
  cases.push_back({"target_kl", small("Pendulum-v1", {{"ppo.target_kl", "3e-7"}, {"ppo.update_epochs", "4"},
                                                      {"device.fused_kernels", "off"}})});
  cases.push_back({"appo", small("CartPole-v1", {{"algo", "appo"}, {"device.fused_kernels", "off"}})});
  cases.push_back({"shared hidden layers", small("Pendulum-v1", {{"policy.shared_hidden", "true"},
                                                                 {"policy.critic_hidden", "[16, 16]"}})});
  cases.push_back({"TagGridworld-v0", small("TagGridworld-v0", {{"env.num_taggers", "3"},
                                                                {"env.episode_length", "15"},
                                                                {"ppo.num_steps", "10"},
                                                                {"device.fused_kernels", "off"}})});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto run = [&](const char* graphs, std::vector<gmi::algos::IterationMetrics>& ms) {
      gmi::config::Config cfg = c.cfg;
      cfg.device.graphs = graphs;
      auto t = gmi::algos::make_trainer(cfg, 0);
      for (int i = 0; i < 4; ++i) ms.push_back(t->iterate());  // captured in the second, replayed in two more
      // auto replays the update only where it runs the layered kernels
      if (const auto* p = dynamic_cast<const gmi::algos::PpoTrainer*>(t.get()); p && gmi::graphs_available()) {
        EXPECT_EQ(p->update_graphs_captured() > 0,
                  std::string(graphs) == "on" || (std::string(graphs) == "auto" && !p->fused_update()))
            << "graphs " << graphs;
      }
      return t->params_host();
    };
    std::vector<gmi::algos::IterationMetrics> mg, md, ma;
    const auto g = run("on", mg);
    const auto d = run("off", md);
    EXPECT_EQ(g, d);
    EXPECT_EQ(run("auto", ma), d) << "graphs auto";
    ASSERT_EQ(mg.size(), md.size());
    for (std::size_t i = 0; i < mg.size(); ++i) {
      EXPECT_EQ(mg[i].episode_return_sum, md[i].episode_return_sum) << "iteration " << i;
      EXPECT_EQ(mg[i].episodes, md[i].episodes) << "iteration " << i;
      EXPECT_EQ(mg[i].updates, md[i].updates) << "iteration " << i;
      EXPECT_EQ(mg[i].learning_rate, md[i].learning_rate) << "iteration " << i;
      EXPECT_EQ(mg[i].grad_norm, md[i].grad_norm) << "iteration " << i;
      for (std::size_t l = 0; l + 1 < mg[i].losses.size(); ++l)
        EXPECT_EQ(mg[i].losses[l], md[i].losses[l]) << "iteration " << i << " loss " << l;
    }
    if (c.name == "target_kl") {  // the epochs stopped at different ones (2, 6, 4, 4 minibatches on the CPU)
      std::vector<int> updates;
      for (const auto& m : md) updates.push_back(m.updates);
      EXPECT_NE(*std::min_element(updates.begin(), updates.end()), *std::max_element(updates.begin(), updates.end()))
          << "every iteration ran " << updates[0] << " minibatches";
    }
  }
}

// device.fused_kernels: auto chooses its kernels once per run (timing them on GPUs) and a resume
// keeps the checkpointed run's choice (counter `kernel_paths`), so that it is exact whichever path
// the timing would pick now.  Host builds run the layered kernels under auto and record nothing.
TEST(PpoTrainer, AutoKeepsTheKernelsOfTheCheckpointedRun) {
  auto has_counter = [](const gmi::algos::TrainerState& s) {
    for (const auto& c : s.counters)
      if (c.first == "kernel_paths") return true;
    return false;
  };
  for (const char* env : {"CartPole-v1", "Pendulum-v1"}) {
    SCOPED_TRACE(env);
    const auto cfg = small(env, {{"device.fused_kernels", "auto"}, {"ppo.normalize_obs", "true"}});
    gmi::algos::PpoTrainer first(cfg, 0);
    first.iterate();
    first.iterate();
    gmi::algos::TrainerState saved = first.save_state();
    if (gmi::device_is_host()) {
      EXPECT_FALSE(has_counter(saved));  // nothing chosen: layered
      EXPECT_FALSE(has_counter(gmi::algos::PpoTrainer(small(env, {{"device.fused_kernels", "on"}}), 0).save_state()));
      continue;
    }
    ASSERT_TRUE(has_counter(saved));
    gmi::algos::PpoTrainer resumed(cfg, 0);
    resumed.load_state(saved);
    EXPECT_EQ(resumed.kernels(), first.kernels());
    first.iterate();
    resumed.iterate();
    EXPECT_EQ(resumed.params_host(), first.params_host());  // bitwise: the same kernels
    // A checkpoint naming other kernels than timing would pick: the resume takes the checkpoint's.
    for (const std::int64_t paths : {0, 3}) {
      for (auto& c : saved.counters)
        if (c.first == "kernel_paths") c.second = paths;
      gmi::algos::PpoTrainer other(cfg, 0);
      other.load_state(saved);
      other.iterate();
      EXPECT_EQ(other.fused_update(), paths == 3) << other.kernels();
      EXPECT_EQ(other.kernels().rfind(paths == 3 ? "fused" : "layered", 0), 0u) << other.kernels();
      EXPECT_EQ(other.kernel_trials().rfind("none: the checkpoint's", 0), 0u) << other.kernel_trials();
    }
  }
}

// Without a checkpoint, auto runs the layered kernels on host builds (nothing timed) and, on GPUs,
// times both paths of each phase on the first iteration, says what each took, and keeps the faster.
TEST(PpoTrainer, AutoTimesTheKernelPathsOnGpus) {
  gmi::algos::PpoTrainer t(small("Pendulum-v1", {{"device.fused_kernels", "auto"}}), 0);
  const auto m = t.iterate();
  EXPECT_TRUE(std::isfinite(m.losses[1]));
  if (gmi::device_is_host()) {
    EXPECT_EQ(t.kernels(), "layered");
    EXPECT_EQ(t.kernel_trials(), "");
    return;
  }
  EXPECT_EQ(t.kernels().find("auto"), std::string::npos) << t.kernels();  // chosen
  EXPECT_NE(t.kernel_trials().find("gradients fused"), std::string::npos) << t.kernel_trials();
  EXPECT_NE(t.kernel_trials().find("policy steps fused"), std::string::npos) << t.kernel_trials();
  // the next iterations run on the chosen kernels, without timing again
  const std::string trials = t.kernel_trials();
  t.iterate();
  EXPECT_EQ(t.kernel_trials(), trials);
}

// ---- APPO (algo: appo): the PPO trainer with V-trace targets per minibatch of whole trajectories ----

TEST(Appo, ClippedImportanceWeightsScaleThePolicyGradient) {
  // V-trace's advantages carry the clipped weight rho_t = min(rho-bar, pi/mu): with rho-bar near 0
  // they vanish and the actor (a network of its own; no entropy bonus, no advantage normalisation)
  // stays where it started, while at rho-bar 1 it moves as far as PPO's does.
  const gmi::config::Overrides keys = {{"algo", "appo"}, {"ppo.norm_adv", "false"}, {"ppo.ent_coef", "0"}};
  auto actor_move = [](const gmi::config::Config& cfg) {
    gmi::algos::PpoTrainer t(cfg, 0);
    const auto before = t.params_host();
    t.iterate();
    const auto after = t.params_host();
    const auto& a = t.layout().actor;
    double most = 0;
    for (std::size_t i = a.offset; i < a.offset + a.num_params; ++i)
      most = std::max(most, double(std::fabs(after[i] - before[i])));
    return most;
  };
  auto with = [&](const char* rho) {
    gmi::config::Overrides ov = keys;
    ov.push_back({"appo.vtrace_rho", rho});
    return small("CartPole-v1", ov);
  };
  const double tiny = actor_move(with("1e-9")), full = actor_move(with("1"));
  gmi::config::Overrides ppo_keys = {{"ppo.norm_adv", "false"}, {"ppo.ent_coef", "0"}};
  const double ppo = actor_move(small("CartPole-v1", ppo_keys));
  EXPECT_LT(tiny, 1e-6);
  EXPECT_GT(full, 1e-4);
  EXPECT_GT(ppo, 1e-4);
}

TEST(Appo, TrainsEveryActionKindAndResumesItsRunDeterministically) {
  for (const char* env : {"CartPole-v1", "Pendulum-v1"}) {
    SCOPED_TRACE(env);
    const auto cfg = small(env, {{"algo", "appo"}, {"ppo.normalize_obs", "true"}, {"appo.vtrace_c", "0.5"}});
    std::vector<gmi::algos::IterationMetrics> ms;
    const auto a = train(cfg, 3, &ms);
    EXPECT_EQ(a, train(cfg, 3));
    for (const auto& m : ms) {
      EXPECT_EQ(m.updates, 4);
      for (std::size_t k = 0; k < 5; ++k) EXPECT_TRUE(std::isfinite(m.losses[k])) << k;
    }
    EXPECT_NE(a, train(small(env, {{"ppo.normalize_obs", "true"}}), 3));  // not PPO's run
  }
}

TEST(Appo, MinibatchesMustBeWholeTrajectories) {
  EXPECT_EQ(gmi::test::config_error({{"algo", "appo"}, {"env.num_envs", "6"}, {"ppo.num_minibatches", "4"}}),
            "config c.yaml: ppo.num_minibatches: 4 does not divide env.num_envs = 6 (appo's minibatches are whole "
            "trajectories: env.num_envs / ppo.num_minibatches envs x ppo.num_steps steps each)");
  EXPECT_EQ(gmi::test::config_error({{"algo", "appo"}, {"appo.vtrace_rho", "0"}}),
            "config c.yaml: appo.vtrace_rho: expected a number > 0, got '0'");
  EXPECT_EQ(gmi::test::config_error({{"algo", "appo"}, {"env.name", "TagGridworld-v0"}}),
            "config c.yaml: algo: TagGridworld-v0 is a multi-agent environment: it trains with ppo (one policy per role)");
}

// policy.shared_hidden: one trunk of actor_hidden under a linear head each (WarpDrive's and
// CleanRL's Atari networks), fewer parameters, the layered kernels even under fused_kernels on;
// PPO and APPO train deterministically, stay finite and resume exactly (the gradients themselves:
// test_actor_critic's finite differences).
TEST(PpoTrainer, SharedHiddenLayersTrainAndResume) {
  for (const char* algo : {"ppo", "appo"})
    for (const char* env : {"CartPole-v1", "Pendulum-v1"}) {
      SCOPED_TRACE(std::string(algo) + " " + env);
      const auto cfg = small(env, {{"algo", algo}, {"policy.shared_hidden", "true"}, {"policy.critic_hidden", "[16, 16]"},
                                   {"device.fused_kernels", "on"}, {"ppo.normalize_obs", "true"}});
      gmi::algos::PpoTrainer t(cfg, 0);
      EXPECT_TRUE(t.layout().shared());
      EXPECT_LT(t.layout().num_params, gmi::algos::PpoTrainer(small(env, {{"policy.critic_hidden", "[16, 16]"}}), 0)
                                           .layout()
                                           .num_params);
      EXPECT_EQ(t.kernels().rfind("layered", 0), 0u) << t.kernels();
      std::vector<gmi::algos::IterationMetrics> ms;
      const auto a = train(cfg, 4, &ms);
      EXPECT_EQ(a, train(cfg, 4));
      for (const auto& m : ms)
        for (std::size_t k = 0; k < 5; ++k) EXPECT_TRUE(std::isfinite(m.losses[k])) << k;
      gmi::algos::PpoTrainer first(cfg, 0);
      for (int i = 0; i < 2; ++i) first.iterate();
      gmi::algos::PpoTrainer resumed(cfg, 0);
      resumed.load_state(first.save_state());
      for (int i = 0; i < 2; ++i) resumed.iterate();
      EXPECT_EQ(resumed.params_host(), a);
    }
}

TEST(PpoTrainer, SharedHiddenLayersNeedOneWidthList) {
  EXPECT_EQ(gmi::test::config_error({{"policy.shared_hidden", "true"}, {"policy.actor_hidden", "[32, 32]"}}),
            "config c.yaml: policy.critic_hidden: expected [32, 32] (policy.actor_hidden: policy.shared_hidden makes "
            "them one trunk), got [64, 64]");
  EXPECT_EQ(gmi::test::config_error({{"policy.shared_hidden", "true"}, {"policy.actor_hidden", "[]"},
                                     {"policy.critic_hidden", "[]"}}),
            "config c.yaml: policy.shared_hidden: true needs at least one hidden layer in policy.actor_hidden");
  EXPECT_EQ(gmi::test::config_error({{"algo", "dqn"}, {"policy.shared_hidden", "true"}}),
            "config c.yaml: policy.shared_hidden: true is for actor-critic policies (ppo, appo); dqn trains separate "
            "networks (policy.q_hidden)");
}
