// The algorithm registry (src/algos/registry.hpp): every registered algorithm has what a row
// promises — a config section with keys, a derive step, a memory estimate, a policy that acts, and
// a checkpoint round trip through an HDF5 file that resumes exactly — and nothing outside the
// registry picks an algorithm by name.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <unistd.h>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "src/algos/registry.hpp"
#include "src/checkpoint/checkpoint.hpp"
#include "src/config/config.hpp"
#include "tests/support/test_util.hpp"

namespace {

using gmi::algos::Algorithm;
using gmi::algos::algorithms;

gmi::config::Config example(const Algorithm& a) {
  gmi::config::Overrides ov = {{"algo", a.rules.name}};
  ov.insert(ov.end(), a.example.begin(), a.example.end());
  return gmi::config::parse("{}", "example", ov);
}

TEST(Registry, EveryRowIsComplete) {
  ASSERT_GE(algorithms().size(), 3u);
  const std::vector<std::string> keys = gmi::config::keys();
  for (const Algorithm& a : algorithms()) {
    SCOPED_TRACE(a.rules.name);
    EXPECT_FALSE(a.rules.summary.empty());
    ASSERT_NE(a.rules.derive, nullptr);
    ASSERT_NE(a.make_trainer, nullptr);
    ASSERT_NE(a.num_params, nullptr);
    ASSERT_NE(a.memory_needs, nullptr);
    ASSERT_NE(a.checkpoint.update_epochs, nullptr);
    ASSERT_NE(a.checkpoint.replay_capacity, nullptr);
    ASSERT_NE(a.settings, nullptr);
    EXPECT_FALSE(a.checkpoint.experience.empty());
    EXPECT_TRUE(a.rules.discrete_actions || a.rules.continuous_actions);
    // Its config sections exist, hold keys, and are in the schema with them.
    ASSERT_FALSE(a.rules.sections.empty());
    for (const gmi::config::SectionDecl& section : a.rules.sections) {
      ASSERT_TRUE(section.keys) << section.name;
      const std::vector<gmi::config::Field> declared = section.keys();
      EXPECT_FALSE(declared.empty()) << "config section '" << section.name << "' declares no keys";
      int n = 0;
      for (const std::string& k : keys) n += k.rfind(section.name + ".", 0) == 0;
      EXPECT_EQ(n, int(declared.size())) << "config section '" << section.name << "' is not in the schema";
      for (const gmi::config::Field& f : declared) EXPECT_FALSE(f.doc.empty()) << f.path << " has no description";
    }
    // Registered with the config: `algo` takes its name, and the reference lists it.
    EXPECT_NE(gmi::config::reference_markdown().find(a.rules.name + " ("), std::string::npos);
    // Its example runs through its derive step.
    const gmi::config::Config cfg = example(a);
    EXPECT_GT(cfg.num_steps, 0);
    EXPECT_GT(cfg.batch_size, 0);
    EXPECT_GT(cfg.minibatch_size, 0);
    EXPECT_FALSE(a.settings(cfg).empty());
    // A memory estimate that names what makes it grow.
    const gmi::algos::MemoryNeeds m = a.memory_needs(cfg);
    EXPECT_GT(m.device_bytes, 0.0);
    EXPECT_FALSE(m.drivers.empty());
    EXPECT_GT(a.num_params(cfg), 0u);
  }
}

TEST(Registry, DeviceRolloutsIsWhatTheTrainerHas) {
  // The row's device_rollouts (the memory check's guess of the async transport) and the trainer's
  // ServedLearning::device_rollout (what async.transport auto asks at start-up) agree.
  for (const Algorithm& a : algorithms()) {
    SCOPED_TRACE(a.rules.name);
    auto trainer = a.make_trainer(example(a), 0, nullptr, {});
    gmi::algos::ServedLearning* served = trainer->served_learning();
    EXPECT_EQ(served != nullptr, a.async_rollouts);
    if (!served) {
      EXPECT_FALSE(a.device_rollouts);
      continue;
    }
    const std::optional<gmi::algos::DeviceRollout> d = served->device_rollout();
    EXPECT_EQ(d.has_value(), a.device_rollouts);
    if (d)
      for (const gmi::algos::DeviceRollout::Array& x : d->arrays) {
        EXPECT_NE(x.data, nullptr);
        EXPECT_GT(x.steps * x.row_bytes, 0u);
      }
  }
}

TEST(Registry, UnknownAlgorithmIsOneLineNamingTheChoices) {
  EXPECT_EQ(gmi::test::config_error({{"algo", "a2c"}}), "config c.yaml: algo: expected one of ppo, appo, dqn, sac, td3, got 'a2c'");
  EXPECT_THROW(gmi::algos::algorithm("a2c"), gmi::InputError);
  gmi::config::Config c = gmi::config::parse("{}", "c.yaml");
  c.algo = "a2c";  // set in code, past the parser
  EXPECT_THROW(gmi::config::derive(c, 1), gmi::InputError);
}

TEST(Registry, EveryPolicyActsWithFiniteActions) {
  for (const Algorithm& a : algorithms()) {
    SCOPED_TRACE(a.rules.name);
    if (!a.make_policy) continue;
    const gmi::config::Config cfg = example(a);
    auto trainer = a.make_trainer(cfg, 0, nullptr, {});
    trainer->iterate();
    const gmi::envs::EnvSpec& spec = trainer->env_spec();
    const gmi::algos::TrainerState s = trainer->save_state();
    const int n = 5;
    auto policy = gmi::algos::make_policy(cfg, spec, s.params, s.obs_rms, n);
    const std::vector<float> obs(std::size_t(n) * spec.obs_dim, 0.25f);
    auto d_obs = gmi::test::to_device(obs);
    gmi::View1<float> actions("actions", std::size_t(n) * spec.act_dim), env_actions("env_actions",
                                                                               std::size_t(n) * spec.act_dim);
    policy->act(gmi::ExecSpace(), d_obs.data(), n, false, 1, 0, 0, actions.data(), env_actions.data());
    for (float x : gmi::test::to_host(env_actions)) EXPECT_TRUE(std::isfinite(x));
    // A parameter count that is not the config's is one error line.
    std::vector<float> wrong = s.params;
    wrong.pop_back();
    EXPECT_THROW(gmi::algos::make_policy(cfg, spec, wrong, s.obs_rms, n), gmi::InputError);
  }
}

/// Train 2 iterations, checkpoint into an HDF5 file, read it back into a new trainer: 2 more
/// iterations of both give the same weights and state as one trainer running 4.
TEST(Registry, CheckpointFileRoundTripResumesExactly) {
  const auto dir = std::filesystem::temp_directory_path() / ("gmi_registry_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const Algorithm& a : algorithms()) {
    SCOPED_TRACE(a.rules.name);
    const gmi::config::Config cfg = example(a);
    auto straight = a.make_trainer(cfg, 0, nullptr, {});
    for (int i = 0; i < 4; ++i) straight->iterate();

    auto first = a.make_trainer(cfg, 0, nullptr, {});
    for (int i = 0; i < 2; ++i) first->iterate();
    const gmi::algos::TrainerState st = first->save_state();
    gmi::checkpoint::Meta meta;
    meta.gmi_drl_version = "test";
    meta.config = gmi::config::to_yaml(cfg);
    meta.gmis_per_gpu = {1};
    meta.iteration = st.iteration;
    meta.env_steps = st.iteration * cfg.batch_size;
    meta.updates = first->updates();
    meta.algo = cfg.algo;
    meta.env = cfg.env.name;
    meta.envs_per_gmi = cfg.env.num_envs;
    meta.obs_dim = std::int64_t(st.obs.size()) / cfg.env.num_envs;
    meta.num_params = std::int64_t(st.params.size());
    meta.seed = cfg.train.seed;
    meta.num_steps = cfg.num_steps;
    meta.update_epochs = a.checkpoint.update_epochs(cfg);
    meta.replay_capacity = a.checkpoint.replay_capacity(cfg);
    meta.nonfinite_streak = st.nonfinite_streak;
    const std::string path = (dir / (a.rules.name + ".h5")).string();
    gmi::checkpoint::write(path, MPI_COMM_SELF, meta, st, {});
    const gmi::checkpoint::Meta read_back = gmi::checkpoint::verify(path);
    EXPECT_EQ(read_back.algo, a.rules.name);
    const gmi::checkpoint::Contents c = gmi::checkpoint::read(path, 0);

    auto resumed = a.make_trainer(cfg, 0, nullptr, {});
    resumed->load_state(c.state);
    for (int i = 0; i < 2; ++i) resumed->iterate();
    const gmi::algos::TrainerState x = straight->save_state(), y = resumed->save_state();
    EXPECT_EQ(x.iteration, y.iteration);
    EXPECT_EQ(x.params, y.params);
    EXPECT_EQ(x.adam_m, y.adam_m);
    EXPECT_EQ(x.adam_v, y.adam_v);
    EXPECT_EQ(x.obs, y.obs);
    EXPECT_EQ(x.obs_rms, y.obs_rms);
    EXPECT_EQ(x.tensors, y.tensors);
    EXPECT_EQ(x.counters, y.counters);
  }
  std::filesystem::remove_all(dir);
}

/// No file outside src/algos/ chooses by algorithm name: they ask the registry.
TEST(Registry, NoAlgorithmNameComparedOutsideAlgos) {
  const std::regex by_name(R"re(algo\s*[!=]=\s*"|"(ppo|dqn|sac)"\s*[!=]=)re");
  int checked = 0;
  for (const char* top : {"src", "mpi", "kernels"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(GMI_SOURCE_DIR) + "/" + top)) {
      const std::string p = e.path().string();
      if (!e.is_regular_file() || p.find("/src/algos/") != std::string::npos) continue;
      if (e.path().extension() != ".cpp" && e.path().extension() != ".hpp") continue;
      std::ifstream in(p);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        EXPECT_FALSE(std::regex_search(line, by_name)) << p << ":" << n << ": " << line;
      ++checked;
    }
  EXPECT_GT(checked, 50);
}

}  // namespace
