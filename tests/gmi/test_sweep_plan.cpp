// The sweep's runs: seeds, grid axes and random draws expanded into named runs (src/runtime/sweep.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "kernels/core/error.hpp"
#include "src/config/config.hpp"
#include "src/runtime/sweep.hpp"

namespace gmi::sweeps {
namespace {

config::Config base(const config::Overrides& o) { return config::parse("{}", "test", o); }

TEST(SweepPlan, SeedsAreRangesOrLists) {
  EXPECT_EQ(parse_seeds("", 7), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(parse_seeds("1..4", 0), (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(parse_seeds("5, 2,9", 0), (std::vector<std::int64_t>{5, 2, 9}));
  EXPECT_THROW(parse_seeds("4..1", 0), InputError);
  EXPECT_THROW(parse_seeds("1,1", 0), InputError);
  EXPECT_THROW(parse_seeds("-1..2", 0), InputError);
  EXPECT_THROW(parse_seeds("a", 0), InputError);
}

TEST(SweepPlan, AxisValuesSplitOutsideBrackets) {
  const auto [key, values] = parse_axis("policy.actor_hidden=[64, 64],[256, 256], 'a,b'");
  EXPECT_EQ(key, "policy.actor_hidden");
  EXPECT_EQ(values, (std::vector<std::string>{"[64, 64]", "[256, 256]", "'a,b'"}));
  EXPECT_THROW(parse_axis("ppo.gamma"), InputError);
  EXPECT_THROW(parse_axis("ppo.gamma="), InputError);
  EXPECT_THROW(parse_axis("ppo.gamma=0.9,,0.99"), InputError);
}

TEST(SweepPlan, EveryGridPointWithEverySeedSeedsOutermost) {
  const config::Config c = base({{"sweep.seeds", "1..2"},
                                 {"sweep.grid", "['ppo.learning_rate=1e-3,3e-4', 'env.num_envs=4,8,16']"}});
  const std::vector<RunSpec> runs = expand(c);
  ASSERT_EQ(runs.size(), 12u);
  std::set<std::string> names;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].index, int(i));
    EXPECT_EQ(runs[i].seed, i < 6 ? 1 : 2);
    names.insert(runs[i].name);
  }
  EXPECT_EQ(names.size(), runs.size());
  EXPECT_EQ(runs[0].config, "ppo.learning_rate=1e-3;env.num_envs=4");
  EXPECT_EQ(runs[5].config, "ppo.learning_rate=3e-4;env.num_envs=16");
  EXPECT_EQ(runs[0].name, "c0-learning_rate=1e-3,num_envs=4-seed1");
  EXPECT_EQ(runs[11].name, "c5-learning_rate=3e-4,num_envs=16-seed2");
  // Seeds alone: one configuration, named by the seed.
  const std::vector<RunSpec> seeds = expand(base({{"sweep.seeds", "3,4"}}));
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_EQ(seeds[1].name, "seed4");
  EXPECT_EQ(seeds[1].config, "");
  // No sweep keys: the config's own seed, once.
  const std::vector<RunSpec> one = expand(base({{"train.seed", "9"}}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].seed, 9);
}

TEST(SweepPlan, GridKeysAreChecked) {
  EXPECT_THROW(expand(base({{"sweep.grid", "['ppo.gama=0.9,0.99']"}})), InputError);
  EXPECT_THROW(expand(base({{"sweep.grid", "['train.seed=1,2']"}})), InputError);
  EXPECT_THROW(expand(base({{"sweep.grid", "['ppo.gamma=0.9', 'ppo.gamma=0.99']"}})), InputError);
}

TEST(SweepPlan, RandomDrawsStayInTheirSpaceAndRepeat) {
  const std::string space = ::testing::TempDir() + "/space.yaml";
  std::ofstream(space) << "ppo.learning_rate: {log_uniform: [1e-5, 1e-3]}\n"
                          "ppo.gamma: {uniform: [0.9, 0.999]}\n"
                          "ppo.update_epochs: {int_uniform: [2, 8]}\n"
                          "policy.activation: {choice: [tanh, relu]}\n";
  const config::Config c = base({{"sweep.random", "20"}, {"sweep.space", "\"" + space + "\""},
                                 {"sweep.grid", "['env.num_envs=4,8']"}});
  const std::vector<RunSpec> a = expand(c), b = expand(c);
  ASSERT_EQ(a.size(), 40u);  // 2 grid points x 20 draws x 1 seed
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].overrides, b[i].overrides);  // the same sweep draws the same runs
    ASSERT_EQ(a[i].overrides.size(), 5u);
    const double lr = std::stod(a[i].overrides[1].second), gamma = std::stod(a[i].overrides[2].second);
    const int epochs = std::stoi(a[i].overrides[3].second);
    EXPECT_TRUE(lr >= 1e-5 * 0.999 && lr <= 1e-3 * 1.001) << lr;
    EXPECT_TRUE(gamma >= 0.9 && gamma <= 0.999) << gamma;
    EXPECT_TRUE(epochs >= 2 && epochs <= 8) << epochs;
    EXPECT_TRUE(a[i].overrides[4].second == "tanh" || a[i].overrides[4].second == "relu");
    // Every draw is a config the schema accepts.
    EXPECT_NO_THROW(config::parse("{}", "draw", a[i].overrides));
  }
}

}  // namespace
}  // namespace gmi::sweeps
