// DQN and SAC trainers as wholes (src/algos/offpolicy.hpp): determinism under a seed, CleanRL's
// update schedule generalised to many envs, exact save/restore with the replay buffer, host and
// device replay storage giving the same training, the true final observation stored at time
// limits, skipped non-finite updates, and config errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "src/algos/dqn/dqn.hpp"
#include "src/algos/sac/sac.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"
#include "src/algos/replay_section.hpp"
#include "tests/support/test_util.hpp"

namespace {

using gmi::algos::IterationMetrics;
using gmi::algos::Trainer;
using gmi::algos::TrainerState;

gmi::config::Config dqn(gmi::config::Overrides extra = {}) {
  gmi::config::Overrides ov = {{"algo", "dqn"},
                               {"env.name", "CartPole-v1"},
                               {"env.num_envs", "2"},
                               {"policy.q_hidden", "[16, 16]"},
                               {"policy.activation", "relu"},
                               {"replay.capacity", "300"},
                               {"dqn.num_steps", "25"},
                               {"dqn.learning_starts", "20"},
                               {"dqn.train_frequency", "2"},
                               {"dqn.target_network_frequency", "10"},
                               {"dqn.batch_size", "8"},
                               {"train.total_env_steps", "1000"}};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return gmi::config::parse("{}", "test", ov);
}

gmi::config::Config sac(gmi::config::Overrides extra = {}) {
  gmi::config::Overrides ov = {{"algo", "sac"},
                               {"env.name", "Pendulum-v1"},
                               {"env.num_envs", "2"},
                               {"policy.actor_hidden", "[16, 16]"},
                               {"policy.q_hidden", "[16, 16]"},
                               {"policy.activation", "relu"},
                               {"replay.capacity", "300"},
                               {"sac.num_steps", "10"},
                               {"sac.learning_starts", "15"},
                               {"sac.batch_size", "8"},
                               {"train.total_env_steps", "1000"}};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return gmi::config::parse("{}", "test", ov);
}

gmi::config::Config td3(gmi::config::Overrides extra = {}) {
  gmi::config::Overrides ov = {{"algo", "td3"},
                               {"env.name", "Pendulum-v1"},
                               {"env.num_envs", "2"},
                               {"policy.actor_hidden", "[16, 16]"},
                               {"policy.q_hidden", "[16, 16]"},
                               {"policy.activation", "relu"},
                               {"replay.capacity", "300"},
                               {"td3.num_steps", "10"},
                               {"td3.learning_starts", "15"},
                               {"td3.batch_size", "8"},
                               {"train.total_env_steps", "1000"}};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return gmi::config::parse("{}", "test", ov);
}

using gmi::test::train;

/// Updates CleanRL's loop makes during env steps [g0, g1) (one env: g is global_step).
int cleanrl_updates(std::int64_t g0, std::int64_t g1, std::int64_t learning_starts, std::int64_t frequency) {
  int n = 0;
  for (std::int64_t g = g0; g < g1; ++g)
    if (g > learning_starts && g % frequency == 0) ++n;
  return n;
}

TEST(OffPolicy, SameSeedSameWeightsDifferentSeedDifferentWeights) {
  for (const auto& cfg : {dqn(), sac(), td3()}) {
    SCOPED_TRACE(cfg.algo);
    const auto a = train(cfg, 3), b = train(cfg, 3);
    EXPECT_EQ(a, b);
    auto other = cfg;
    other.train.seed = 2;
    EXPECT_NE(a, train(other, 3));
    EXPECT_NE(a, train(cfg, 0)) << "updates moved the weights";
    for (float x : a) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(OffPolicy, UpdateScheduleIsCleanRlsPerEnvStep) {
  // One env: CleanRL's loop exactly; four envs: the same updates per env step.
  for (int envs : {1, 4}) {
    SCOPED_TRACE(envs);
    auto cfg = dqn({{"env.num_envs", std::to_string(envs)}});
    std::vector<IterationMetrics> ms;
    train(cfg, 4, &ms);
    const std::int64_t per = std::int64_t(envs) * cfg.num_steps;
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(ms[i].updates, cleanrl_updates(i * per, (i + 1) * per, 20, 2)) << "iteration " << i;
  }
  // updates_per_step: U after every vector step whose last env step is past learning_starts.
  auto cfg = dqn({{"dqn.updates_per_step", "3"}});
  auto t = gmi::algos::make_trainer(cfg, 0);
  std::vector<IterationMetrics> ms = {t->iterate(), t->iterate()};
  EXPECT_EQ(ms[0].updates, 3 * 15);  // vector steps 10..24 of the first 25 (g = 2k+1 > 20)
  EXPECT_EQ(ms[1].updates, 3 * 25);
  // target updates: still one per multiple of target_network_frequency (10) among g = 21..99
  EXPECT_EQ(t->save_state().counter("target_updates"), cleanrl_updates(0, 100, 20, 10));
  // SAC: an update every env step past learning_starts.
  std::vector<IterationMetrics> ss;
  train(sac(), 2, &ss);
  EXPECT_EQ(ss[0].updates, cleanrl_updates(0, 20, 15, 1));
  EXPECT_EQ(ss[1].updates, 20);
}

// With updates_per_step, SAC moves its targets within its updates: every
// target_network_frequency-th Q update, one Polyak step of tau (not one merged step per vector
// step, which with many envs is nearly a copy).  With learning rates too small to move the
// weights, targets started at zero end at P (1 - (1 - tau)^n) after n target updates.
// Targets started at zero, weights held still by tiny learning rates: after `iterations`, the
// targets are P (1 - 0.9^moves) (tau 0.1), and the checkpoint counts `moves` target updates.
void expect_sac_target_moves(const gmi::config::Config& cfg, int iterations, int updates, int moves) {
  auto t = gmi::algos::make_trainer(cfg, 0);
  TrainerState s = t->save_state();
  for (auto& [name, v] : s.tensors)
    if (name == "target_q") std::fill(v.begin(), v.end(), 0.0f);
  t->load_state(s);
  std::int64_t done = 0;
  for (int i = 0; i < iterations; ++i) done += t->iterate().updates;
  ASSERT_EQ(done, updates);
  const TrainerState after = t->save_state();
  const auto& nets = dynamic_cast<gmi::algos::SacTrainer&>(*t).layout();
  const std::vector<float>& target = *after.tensor("target_q");
  ASSERT_EQ(target.size(), nets.q_size);
  const double kept = std::pow(0.9, moves);
  for (std::size_t i = 0; i < target.size(); ++i)
    ASSERT_NEAR(target[i], after.params[nets.q_begin + i] * (1 - kept), 1e-5 + 1e-4 * std::fabs(target[i])) << i;
  EXPECT_EQ(after.counter("target_updates"), moves);
}

TEST(OffPolicy, SacTargetsFollowTheirQUpdatesWithUpdatesPerStep) {
  // 10 vector steps of 2 envs, 3 Q updates each; Q updates 0, 3, ..., 27 move the targets.
  expect_sac_target_moves(sac({{"sac.updates_per_step", "3"}, {"sac.target_network_frequency", "3"}, {"sac.tau", "0.1"},
                               {"sac.learning_starts", "0"}, {"sac.q_lr", "1e-12"}, {"sac.policy_lr", "1e-12"}}),
                          1, 10 * 3, 10);
}

// Without updates_per_step (CleanRL's loop), the targets move once at every env step past
// learning_starts that is a multiple of target_network_frequency, after that step's update (within
// its event): over two iterations (g = 0..39), updates at g = 1..39, targets at g = 2, 4, ..., 38.
TEST(OffPolicy, SacTargetsMoveAtCleanRlsStepsWithoutUpdatesPerStep) {
  expect_sac_target_moves(sac({{"sac.target_network_frequency", "2"}, {"sac.tau", "0.1"}, {"sac.learning_starts", "0"},
                               {"sac.q_lr", "1e-12"}, {"sac.policy_lr", "1e-12"}}),
                          2, 39, 19);
}

TEST(OffPolicy, DqnOptionsRunAndStayFinite) {
  for (const char* d : {"false", "true"})
    for (const char* dd : {"false", "true"}) {
      SCOPED_TRACE(std::string("dueling ") + d + " double " + dd);
      std::vector<IterationMetrics> ms;
      const auto p = train(dqn({{"dqn.dueling", d}, {"dqn.double", dd}, {"dqn.tau", "0.5"}}), 3, &ms);
      for (float x : p) ASSERT_TRUE(std::isfinite(x));
      for (double v : ms.back().losses) EXPECT_TRUE(std::isfinite(v));
      EXPECT_GT(ms.back().losses[2], 0.0) << "epsilon";
      EXPECT_LT(ms.back().losses[2], ms.front().losses[2]) << "epsilon decays";
    }
}

TEST(OffPolicy, SacMetricsAndFixedAlpha) {
  std::vector<IterationMetrics> ms;
  train(sac(), 3, &ms);
  const auto& m = ms.back();
  for (double v : m.losses) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NE(m.losses[6], 1.0) << "alpha was tuned away from its start, 1";
  ms.clear();
  train(sac({{"sac.autotune", "false"}, {"sac.alpha", "0.2"}}), 3, &ms);
  EXPECT_NEAR(ms.back().losses[6], 0.2, 1e-6) << "a fixed alpha stays";
  EXPECT_TRUE(std::isnan(ms.back().losses[7])) << "no alpha loss without tuning";
}

void expect_same_state(const TrainerState& a, const TrainerState& b) {
  EXPECT_EQ(a.iteration, b.iteration);
  EXPECT_EQ(a.adam_step, b.adam_step);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.adam_m, b.adam_m);
  EXPECT_EQ(a.adam_v, b.adam_v);
  EXPECT_EQ(a.counters, b.counters);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) EXPECT_EQ(a.tensors[i], b.tensors[i]);
  EXPECT_EQ(a.obs, b.obs);
  ASSERT_TRUE(a.replay && b.replay);
  EXPECT_EQ(a.replay->size, b.replay->size);
  EXPECT_EQ(a.replay->cursor, b.replay->cursor);
  EXPECT_EQ(a.replay->obs, b.replay->obs);
  EXPECT_EQ(a.replay->actions, b.replay->actions);
  EXPECT_EQ(a.replay->rewards, b.replay->rewards);
  EXPECT_EQ(a.replay->next_obs, b.replay->next_obs);
  EXPECT_EQ(a.replay->terminated, b.replay->terminated);
}

TEST(OffPolicy, SaveAndLoadResumeExactly) {
  // The ring wraps (capacity 30 < the transitions of 6 iterations) and the target network is
  // soft, so every piece of state matters.
  for (const auto& cfg : {dqn({{"replay.capacity", "30"}, {"dqn.tau", "0.3"}, {"dqn.double", "true"}}),
                          dqn({{"replay.storage", "host"}, {"dqn.dueling", "true"}}), sac({{"replay.capacity", "30"}}),
                          sac({{"replay.storage", "host"}, {"sac.policy_frequency", "3"}}),
                          td3({{"replay.capacity", "30"}}), td3({{"td3.updates_per_step", "2"}})}) {
    SCOPED_TRACE(cfg.algo + " " + cfg.section<gmi::algos::ReplayConfig>().storage);
    auto straight = gmi::algos::make_trainer(cfg, 0);
    std::vector<IterationMetrics> a, b;
    for (int i = 0; i < 6; ++i) a.push_back(straight->iterate());
    auto first = gmi::algos::make_trainer(cfg, 0);
    for (int i = 0; i < 3; ++i) first->iterate();
    const TrainerState mid = first->save_state();
    auto resumed = gmi::algos::make_trainer(cfg, 0);
    resumed->load_state(mid);
    for (int i = 0; i < 3; ++i) b.push_back(resumed->iterate());
    expect_same_state(straight->save_state(), resumed->save_state());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(a[3 + i].losses, b[i].losses) << "iteration " << 4 + i;
      EXPECT_EQ(a[3 + i].episode_return_sum, b[i].episode_return_sum);
      EXPECT_EQ(a[3 + i].updates, b[i].updates);
    }
  }
}

// device.graphs captures each kind of update event once and replays it, with the event count,
// the replay's fill level and the Adam step counts read on the device: the same weights, losses
// and counts as launching every kernel (bitwise).  SAC has up to four kinds of event (with and
// without its delayed actor updates, with and without its target step: policy_frequency 2 and
// target_network_frequency 3 reach all four); U > 0 numbers them by the update count, U = 0 by
// the env step.  Host builds launch directly both times.
TEST(OffPolicy, CapturedUpdatesGiveTheSameRunAsDirectLaunches) {
  for (const auto& cfg : {dqn({{"dqn.double", "true"}, {"dqn.tau", "0.5"}}), dqn({{"dqn.updates_per_step", "3"}}),
                          sac({{"sac.policy_frequency", "2"}}),
                          sac({{"sac.policy_frequency", "2"}, {"sac.target_network_frequency", "3"}}),
                          sac({{"sac.updates_per_step", "3"}}),
                          sac({{"sac.updates_per_step", "3"}, {"sac.target_network_frequency", "3"}}), td3(),
                          td3({{"td3.updates_per_step", "3"}})}) {
    SCOPED_TRACE(cfg.algo);
    auto with = [&](const char* graphs) {
      auto c = cfg;
      c.device.graphs = graphs;
      return c;
    };
    std::vector<IterationMetrics> mg, md;
    const auto g = train(with("on"), 5, &mg);
    const auto d = train(with("off"), 5, &md);
    EXPECT_EQ(g, d);
    ASSERT_EQ(mg.size(), md.size());
    for (std::size_t i = 0; i < mg.size(); ++i) {
      EXPECT_EQ(mg[i].losses, md[i].losses) << "iteration " << i;
      EXPECT_EQ(mg[i].grad_norm, md[i].grad_norm) << "iteration " << i;
      EXPECT_EQ(mg[i].updates, md[i].updates) << "iteration " << i;
      EXPECT_EQ(mg[i].episode_return_sum, md[i].episode_return_sum) << "iteration " << i;
    }
    EXPECT_GT(mg.back().updates, 0);
  }
}

// Host-simulated envs: where a vector step's updates leave the actor alone (SAC's steps without
// actor updates), the next step's actions and physics start before those updates run.  The
// same work in the same stream order: the same run as without the overlap, bit for bit.
// With replay.act_ahead every step's physics overlaps the updates (one vector step of policy lag),
// and the physics threads and stepping in line give the same run too.
TEST(OffPolicy, OverlappedPhysicsGivesTheSameRun) {
  for (const std::string algo : {"sac", "td3"})
  for (const char* upd : {"0", "1"})  // one env: every other step updates the actor
  for (const char* ahead : {"false", "true"}) {
    SCOPED_TRACE(algo + " updates_per_step " + upd + " act_ahead " + ahead);
    std::unique_ptr<Trainer> on, off;
    try {
      const gmi::config::Overrides ov = {{"env.name", "InvertedPendulum-v5"},
                                         {"env.num_envs", "1"},
                                         {algo + ".updates_per_step", upd},
                                         {"replay.act_ahead", ahead}};
      const auto cfg = algo == "sac" ? sac(ov) : td3(ov);
      on = gmi::algos::make_trainer(cfg, 0);
      off = gmi::algos::make_trainer(cfg, 0);
    } catch (const gmi::Error& e) {
      GTEST_SKIP() << "no MuJoCo in this build: " << e.what();
    }
    dynamic_cast<gmi::algos::OffPolicyTrainer&>(*off).set_overlap(false);
    for (int i = 0; i < 4; ++i) {
      const auto a = on->iterate(), b = off->iterate();
      // bit for bit (an iteration without updates has NaN statistics)
      ASSERT_EQ(a.losses.size(), b.losses.size());
      EXPECT_EQ(std::memcmp(a.losses.data(), b.losses.data(), a.losses.size() * sizeof(double)), 0) << "iteration " << i;
      EXPECT_EQ(a.episode_return_sum, b.episode_return_sum) << "iteration " << i;
      EXPECT_EQ(a.updates, b.updates);
    }
    EXPECT_EQ(on->params_host(), off->params_host());
  }
}

// replay.act_ahead changes the run once updates start (the actions of the step after an update
// come from the network before it), and only then; with the acting network frozen it changes
// nothing (the steps see the same observations and act alike); it stays deterministic and resumes
// exactly.
gmi::config::Config acting_ahead(gmi::config::Config cfg) {
  cfg.section<gmi::algos::ReplayConfig>().act_ahead = true;
  return cfg;
}

TEST(OffPolicy, ActingAheadLagsThePolicyByOneVectorStep) {
  // The first iteration (SAC, TD3: 20 env steps; DQN: 50) without updates; DQN greedy from the start, with a
  // learning rate that changes its choices soon.
  for (const auto& base : {sac({{"sac.learning_starts", "25"}}), td3({{"td3.learning_starts", "25"}}),
                           dqn({{"dqn.start_e", "0"}, {"dqn.end_e", "0"}, {"dqn.learning_rate", "0.05"},
                                {"dqn.learning_starts", "49"}})}) {
    SCOPED_TRACE(base.algo);
    const auto ahead = acting_ahead(base);
    auto a = gmi::algos::make_trainer(base, 0), b = gmi::algos::make_trainer(ahead, 0);
    bool differed = false;
    for (int i = 0; i < 6; ++i) {
      const auto ma = a->iterate(), mb = b->iterate();
      if (i == 0) {
        ASSERT_EQ(ma.updates, 0);
        EXPECT_EQ(ma.episode_return_sum, mb.episode_return_sum) << "no update yet, no lag";
        EXPECT_EQ(a->save_state().obs, b->save_state().obs);
      }
      differed = differed || ma.episode_return_sum != mb.episode_return_sum || a->params_host() != b->params_host();
    }
    EXPECT_TRUE(differed) << "acting ahead changed nothing";
    EXPECT_EQ(b->params_host(), gmi::test::train(ahead, 6)) << "deterministic";
    auto first = gmi::algos::make_trainer(ahead, 0);
    for (int i = 0; i < 3; ++i) first->iterate();
    auto resumed = gmi::algos::make_trainer(ahead, 0);
    resumed->load_state(first->save_state());
    for (int i = 0; i < 3; ++i) resumed->iterate();
    EXPECT_EQ(resumed->params_host(), b->params_host()) << "a resume repeats the run";
  }
  // A frozen actor: acting ahead or not, the same observations, actions and updates.
  for (const auto& base : {sac({{"sac.policy_lr", "1e-12"}, {"sac.updates_per_step", "2"}}),
                           td3({{"td3.policy_lr", "1e-12"}, {"td3.updates_per_step", "2"}})}) {
    SCOPED_TRACE(base.algo + " frozen actor");
    const auto ahead = acting_ahead(base);
    auto a = gmi::algos::make_trainer(base, 0), b = gmi::algos::make_trainer(ahead, 0);
    for (int i = 0; i < 4; ++i) {
      const auto ma = a->iterate(), mb = b->iterate();
      EXPECT_EQ(ma.episode_return_sum, mb.episode_return_sum) << "iteration " << i;
      EXPECT_EQ(std::memcmp(ma.losses.data(), mb.losses.data(), ma.losses.size() * sizeof(double)), 0) << "iteration " << i;
    }
    EXPECT_EQ(a->params_host(), b->params_host());
  }
}

TEST(OffPolicy, ResumeWithoutReplayRefillsBeforeLearning) {
  const auto cfg = dqn({{"checkpoint.replay", "false"}, {"dqn.learning_starts", "0"}});
  auto first = gmi::algos::make_trainer(cfg, 0);
  for (int i = 0; i < 2; ++i) first->iterate();
  const TrainerState s = first->save_state();
  EXPECT_FALSE(s.replay.has_value());
  auto resumed = gmi::algos::make_trainer(cfg, 0);
  resumed->load_state(s);
  const auto before = resumed->params_host();
  // 25 vector steps of 2 envs; the 4th refills a batch of 8 and learns (it stores, then learns),
  // the 3 before it do not; an update every 2 env steps.
  const auto m = resumed->iterate();
  EXPECT_EQ(m.updates, (25 - 3) * 2 / 2);
  EXPECT_NE(resumed->params_host(), before);
  // A trainer that ran before (a full shard) forgets its experience on loading and refills alike.
  first->load_state(s);
  EXPECT_EQ(first->iterate().updates, m.updates);
  EXPECT_EQ(first->params_host(), resumed->params_host());
}

TEST(OffPolicy, ResumeThatExtendsTheRunKeepsTheEpsilonSchedule) {
  // Epsilon decays over exploration_fraction of the run that started; resuming with a larger
  // train.total_env_steps (running on) does not stretch the schedule.
  const auto cfg = dqn();
  gmi::algos::DqnTrainer first(cfg, 0, nullptr);
  first.iterate();
  const TrainerState s = first.save_state();
  gmi::algos::DqnTrainer longer(dqn({{"train.total_env_steps", "4000"}}), 0, nullptr);
  EXPECT_NE(longer.epsilon(100), first.epsilon(100));
  longer.load_state(s);
  for (std::int64_t k : {25, 100, 200, 400}) EXPECT_EQ(longer.epsilon(k), first.epsilon(k)) << "vector step " << k;
}

TEST(OffPolicy, HostAndDeviceReplayTrainAlike) {
  for (const auto& [a, b] : {std::make_pair(dqn(), dqn({{"replay.storage", "host"}})),
                             std::make_pair(sac(), sac({{"replay.storage", "host"}}))}) {
    SCOPED_TRACE(a.algo);
    EXPECT_EQ(train(a, 3), train(b, 3));
  }
}

TEST(OffPolicy, TimeLimitStoresTheFinalObservationNotTheReset) {
  // Episodes of 5 steps: at a truncation the stored next observation is where the episode ended
  // (CleanRL's real_next_obs), so it is not the next row's first observation; elsewhere the next
  // observation is the next step's observation.  Truncation is not termination.
  auto cfg = dqn({{"env.max_episode_steps", "5"}, {"env.num_envs", "1"}, {"dqn.learning_starts", "1000"}});
  auto t = gmi::algos::make_trainer(cfg, 0);
  t->iterate();
  const TrainerState s = t->save_state();
  const auto& r = *s.replay;
  const int od = 4;
  ASSERT_EQ(r.size, 25);
  int elapsed = 0, truncations = 0;
  for (int k = 0; k + 1 < 25; ++k) {
    const std::vector<float> next(r.next_obs.begin() + k * od, r.next_obs.begin() + (k + 1) * od);
    const std::vector<float> obs(r.obs.begin() + (k + 1) * od, r.obs.begin() + (k + 2) * od);
    ++elapsed;
    const bool truncated = elapsed == 5 && !r.terminated[k];
    if (truncated) {
      EXPECT_NE(next, obs) << "step " << k;
      ++truncations;
    }
    if (elapsed < 5 && !r.terminated[k]) {
      EXPECT_EQ(next, obs) << "step " << k;
    }
    if (elapsed == 5 || r.terminated[k]) elapsed = 0;
  }
  EXPECT_GE(truncations, 3);
}

TEST(OffPolicy, NonFiniteGradientsAreSkipped) {
  for (const auto& cfg :
       {dqn({{"dqn.learning_starts", "0"}}), sac({{"sac.learning_starts", "0"}}), td3({{"td3.learning_starts", "0"}})}) {
    SCOPED_TRACE(cfg.algo);
    auto t = gmi::algos::make_trainer(cfg, 0);
    t->iterate();
    const auto before = t->params_host();
    t->inject_nonfinite_gradient();
    const auto m = t->iterate();
    EXPECT_GT(m.updates, 0);
    // Every optimiser step was skipped (SAC's actor and alpha steps too: the weights stay); the
    // count is of updates (DQN's, SAC's Q steps), as m.updates, and so is the streak.
    EXPECT_EQ(m.skipped_updates, m.updates);
    EXPECT_EQ(m.nonfinite_streak, m.updates);
    EXPECT_EQ(t->params_host(), before) << "no update moved the weights";
    const auto after = t->iterate();
    EXPECT_EQ(after.skipped_updates, 0);
    EXPECT_EQ(after.nonfinite_streak, 0);
    EXPECT_NE(t->params_host(), before);
  }
}

TEST(OffPolicy, ConfigErrorsNameTheKey) {
  const auto error = gmi::test::config_error;
  EXPECT_EQ(error({{"algo", "dqn"}, {"env.name", "Pendulum-v1"}}),
            "config c.yaml: algo: dqn needs discrete actions; Pendulum-v1 has continuous actions (use ppo, appo, sac or td3)");
  EXPECT_EQ(error({{"algo", "sac"}, {"env.name", "CartPole-v1"}}),
            "config c.yaml: algo: sac needs continuous actions; CartPole-v1 has discrete actions (use ppo, appo or dqn)");
  EXPECT_EQ(error({{"algo", "dqn"}, {"env.num_envs", "64"}, {"replay.capacity", "10"}}),
            "config c.yaml: replay.capacity: 10 transitions cannot take one step of env.num_envs = 64 envs");
  EXPECT_EQ(error({{"algo", "dqn"}, {"replay.storage", "disk"}}),
            "config c.yaml: replay.storage: expected one of device, host, got 'disk'");
  EXPECT_EQ(error({{"algo", "a2c"}}), "config c.yaml: algo: expected one of ppo, appo, dqn, sac, td3, got 'a2c'");
}

}  // namespace
