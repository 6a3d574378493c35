// End-to-end learning with the shipped configs (label `learning`: minutes on a CPU).
// Each test trains with the config exactly as a user runs it (seeded) and checks the acceptance
// threshold on the mean episodic return of an iteration within the step budget.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "kernels/envs/mujoco/options.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/config/config.hpp"

namespace {

struct Curve {
  double best = -INFINITY;   ///< best iteration mean return within the budget
  double last = NAN;         ///< mean return of the last iteration with finished episodes
  std::int64_t best_at = 0;  ///< env steps when `best` was reached
};

Curve train(const std::string& config, std::int64_t budget) {
  gmi::config::Config cfg =
      gmi::config::load(std::string(GMI_SOURCE_DIR "/config/") + config,
                        {{"train.total_env_steps", std::to_string(budget)}});
  gmi::algos::PpoTrainer trainer(cfg, 0);
  Curve c;
  for (std::int64_t it = 0; it < cfg.num_iterations; ++it) {
    const auto m = trainer.iterate();
    if (m.episodes == 0) continue;
    const double ret = m.episode_return_sum / m.episodes;
    const std::int64_t steps = m.iteration * cfg.batch_size;
    if (ret > c.best) c.best = ret, c.best_at = steps;
    c.last = ret;
    if (m.iteration % 50 == 0) spdlog::warn("{}: {} steps, return {:.1f}", config, steps, ret);
  }
  spdlog::warn("{}: best {:.1f} at {} steps, last {:.1f}", config, c.best, c.best_at, c.last);
  return c;
}

}  // namespace

TEST(Learning, CartPoleReaches475Within500kSteps) {
  const Curve c = train("cartpole_ppo.yaml", 500000);
  EXPECT_GE(c.best, 475.0);
}

TEST(Learning, AcrobotReachesMinus100Within500kSteps) {
  const Curve c = train("acrobot_ppo.yaml", 500000);
  EXPECT_GE(c.best, -100.0);
}

TEST(Learning, PendulumLearnsWithin200kSteps) {
  // A random policy scores about -1200; SB3-zoo's PPO (with gSDE) about -172 at 100k steps.
  const Curve c = train("pendulum_ppo.yaml", 200000);
  EXPECT_GE(c.best, -300.0);
  EXPECT_GE(c.last, -400.0);
}

TEST(Learning, MountainCarContinuousReachesTheGoal) {
  // Returns above 0 need the +100 goal reward: the car learned to climb the hill.
  const Curve c = train("mountain_car_continuous_ppo.yaml", 500000);
  EXPECT_GE(c.best, 80.0);  // solved is 90 (Gymnasium reward_threshold)
}

TEST(Learning, HopperReaches1000Within500kSteps) {
  // MuJoCo on the host (CleanRL's settings as 8 envs x 256 steps); a random policy scores about 20.
  if (!gmi::envs::mujoco::available()) GTEST_SKIP() << "built without MuJoCo";
  const Curve c = train("hopper_ppo.yaml", 500000);
  EXPECT_GE(c.best, 1000.0);
}
