// Configuration: strict parsing (unknown keys, wrong types, out-of-range values are one-line errors
// naming the key), overrides, derived values, and the resolved YAML round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "src/config/config.hpp"
#include "src/algos/ppo/section.hpp"

using gmi::InputError;
using namespace gmi::config;
using gmi::algos::PpoConfig;

namespace {

// The error text for a YAML document, or "" if it parses.
std::string error_of(const std::string& yaml, const Overrides& ov = {}) {
  try {
    parse(yaml, "test.yaml", ov);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Config, DefaultsAreCleanRLs) {
  const Config c = parse("{}", "test.yaml");
  EXPECT_EQ(c.env.name, "CartPole-v1");
  EXPECT_EQ(c.section<PpoConfig>().num_steps, 128);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().learning_rate, 2.5e-4);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().gamma, 0.99);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().gae_lambda, 0.95);
  EXPECT_EQ(c.section<PpoConfig>().num_minibatches, 4);
  EXPECT_EQ(c.section<PpoConfig>().update_epochs, 4);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().clip_coef, 0.2);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().ent_coef, 0.01);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().vf_coef, 0.5);
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().max_grad_norm, 0.5);
  EXPECT_FALSE(c.section<PpoConfig>().target_kl.has_value());
  EXPECT_EQ(c.policy.actor_hidden, (std::vector<int>{64, 64}));
}

TEST(Config, DerivedValues) {
  const Config c = parse("env: {num_envs: 6}\nppo: {num_steps: 10, num_minibatches: 3}\n"
                         "train: {total_env_steps: 1000}\n",
                         "test.yaml", {}, 2);
  EXPECT_EQ(c.batch_size, 60);
  EXPECT_EQ(c.minibatch_size, 20);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.num_iterations, 9);  // ceil(1000 / 120)
}

TEST(Config, UnknownKeyIsNamedWithSuggestion) {
  EXPECT_EQ(error_of("ppo:\n  gama: 0.9\n"),
            "config test.yaml: ppo.gama: unknown key (did you mean 'ppo.gamma'?)");
  EXPECT_EQ(error_of("bogus_section:\n  x: 1\n"), "config test.yaml: bogus_section: unknown key");
  EXPECT_EQ(error_of("env: 3\n"), "config test.yaml: env: expected a mapping (section), got '3'");
}

TEST(Config, WrongTypesAreNamed) {
  EXPECT_EQ(error_of("ppo: {gamma: abc}"),
            "config test.yaml: ppo.gamma: expected a number in [0, 1], got 'abc'");
  EXPECT_EQ(error_of("ppo: {num_steps: 12.5}"),
            "config test.yaml: ppo.num_steps: expected an integer >= 1, got '12.5'");
  EXPECT_EQ(error_of("ppo: {anneal_lr: maybe}"),
            "config test.yaml: ppo.anneal_lr: expected a boolean, got 'maybe'");
  EXPECT_EQ(error_of("policy: {actor_hidden: 64}"),
            "config test.yaml: policy.actor_hidden: expected a list of integers of at most 16 "
            "widths in [1, 65536], got '64'");
  EXPECT_EQ(error_of("env: {num_envs: [1, 2]}"),
            "config test.yaml: env.num_envs: expected an integer >= 1, got a list");
  EXPECT_EQ(error_of("ppo: {gamma: null}"),
            "config test.yaml: ppo.gamma: expected a number in [0, 1], got null");
}

TEST(Config, OutOfRangeValuesAreNamed) {
  EXPECT_EQ(error_of("ppo: {gamma: 1.5}"),
            "config test.yaml: ppo.gamma: expected a number in [0, 1], got '1.5'");
  EXPECT_EQ(error_of("env: {num_envs: 0}"),
            "config test.yaml: env.num_envs: expected an integer >= 1, got '0'");
  EXPECT_EQ(error_of("env: {num_envs: 99999999999}"),
            "config test.yaml: env.num_envs: expected an integer >= 1, got '99999999999'");
  EXPECT_EQ(error_of("policy: {activation: sigmoid}"),
            "config test.yaml: policy.activation: expected one of tanh, relu, elu, got 'sigmoid'");
  std::string env_choices;  // every registered environment, in registry order
  for (const std::string& n : gmi::envs::all_env_names()) env_choices += (env_choices.empty() ? "" : ", ") + n;
  EXPECT_EQ(error_of("env: {name: Pong-v5}"),
            "config test.yaml: env.name: expected one of " + env_choices + ", got 'Pong-v5'");
  EXPECT_EQ(error_of("policy: {actor_hidden: [64, 0]}"),
            "config test.yaml: policy.actor_hidden: expected a list of integers of at most 16 "
            "widths in [1, 65536], got a list");
  EXPECT_EQ(error_of("ppo: {target_kl: -1}"),
            "config test.yaml: ppo.target_kl: expected a number or null (> 0), got '-1'");
}

TEST(Config, InconsistentKeysAreNamed) {
  EXPECT_EQ(error_of("env: {num_envs: 3}\nppo: {num_steps: 5, num_minibatches: 4}"),
            "config test.yaml: ppo.num_minibatches: 4 does not divide the batch env.num_envs * "
            "ppo.num_steps = 15");
}

TEST(Config, EnvBatchSizeGroupsHostSimulatedEnvsForPpo) {
  EXPECT_EQ(parse("env: {name: Hopper-v5, num_envs: 8, batch_size: 3}", "t.yaml").env.batch_size, 3);
  EXPECT_EQ(parse("env: {name: CartPole-v1, num_envs: 8, batch_size: 8}", "t.yaml").env.batch_size, 8);  // one batch
  EXPECT_EQ(error_of("env: {name: Hopper-v5, num_envs: 8, batch_size: 9}"),
            "config test.yaml: env.batch_size: 9 is more than env.num_envs (8)");
  EXPECT_EQ(error_of("env: {name: CartPole-v1, num_envs: 8, batch_size: 4}"),
            "config test.yaml: env.batch_size: CartPole-v1 steps on the device; only host-simulated environments "
            "(MuJoCo) step in groups");
  EXPECT_EQ(error_of("algo: sac\nenv: {name: Hopper-v5, num_envs: 8, batch_size: 4}"),
            "config test.yaml: env.batch_size: algo sac steps all envs at once; groups are for algo ppo or appo");
  EXPECT_EQ(error_of("algo: sac\nenv: {name: Hopper-v5, num_envs: 8, async_halves: true}"),
            "config test.yaml: env.async_halves: algo sac steps all envs at once; groups are for algo ppo or appo");
  EXPECT_EQ(error_of("env: {name: Hopper-v5, num_envs: 130, batch_size: 2}"),
            "config test.yaml: env.batch_size: 130 envs in groups of 2 make 65 groups; at most 64 can be queued (a "
            "batch of at least 3)");
  EXPECT_EQ(error_of("env: {name: Hopper-v5, num_envs: 8, batch_size: 2, async_halves: true}"),
            "config test.yaml: env.batch_size: 2 contradicts env.async_halves (half of env.num_envs: 4); set one of them");
  EXPECT_EQ(error_of("env: {name: Hopper-v5, batch_size: -1}"),
            "config test.yaml: env.batch_size: expected an integer >= 0, got '-1'");
}

TEST(Config, YamlSyntaxErrorNamesLine) {
  const std::string e = error_of("ppo:\n  gamma: [0.9\n");
  EXPECT_EQ(e.rfind("config test.yaml: line ", 0), 0u) << e;
}

TEST(Config, MissingFileIsNamed) {
  try {
    load("/nonexistent/x.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "config /nonexistent/x.yaml: cannot open file");
  }
}

TEST(Config, EmptyOrCommentOnlyFileIsAnError) {
  const std::string path = ::testing::TempDir() + "gmi_empty_config.yaml";
  for (const char* text : {"", "# a comment\n\n   # another\n", "\n\n"}) {
    std::ofstream(path) << text;
    try {
      load(path);
      FAIL() << "accepted '" << text << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("config " + path + ": the file has no keys (empty, or only comments)", 0),
                0u)
          << e.what();
    }
  }
  // Every default on purpose: an empty mapping.
  std::ofstream(path) << "{}\n";
  EXPECT_EQ(load(path).env.name, "CartPole-v1");
}

TEST(Config, LaterFilesLayOnEarlierOnes) {
  const std::string base = ::testing::TempDir() + "gmi_overlay_base.yaml";
  const std::string top = ::testing::TempDir() + "gmi_overlay_top.yaml";
  std::ofstream(base) << "env: {name: Pendulum-v1, num_envs: 16}\nppo: {num_steps: 64, gamma: 0.9}\n"
                         "policy: {actor_hidden: [32, 32, 32]}\n";
  std::ofstream(top) << "env: {num_envs: 128}\ngmi: {per_gpu: 4}\npolicy: {actor_hidden: [8]}\n";
  const Config c = load(std::vector<std::string>{base, top}, {{"ppo.gamma", "0.5"}});
  EXPECT_EQ(c.env.name, "Pendulum-v1");  // from the base, untouched by the overlay's env section
  EXPECT_EQ(c.env.num_envs, 128);        // the overlay wins
  EXPECT_EQ(c.section<PpoConfig>().num_steps, 64);
  EXPECT_EQ(c.gmi.per_gpu, 4);
  EXPECT_EQ(c.policy.actor_hidden, std::vector<int>({8}));  // a list is replaced, not merged
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().gamma, 0.5);    // --set applies last
  EXPECT_EQ(c.source, base + " + " + top);
  EXPECT_EQ(c.batch_size, 128 * 64);     // derived from the merged values
  // An unknown key is named with the file that has it.
  std::ofstream(top) << "env: {num_env: 128}\n";
  try {
    load(std::vector<std::string>{base, top});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(top), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("env.num_env"), std::string::npos) << e.what();
  }
  // A key that is fine alone but not with the base is named too (checked after merging).
  std::ofstream(top) << "ppo: {num_minibatches: 7}\n";
  try {
    load(std::vector<std::string>{base, top});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ppo.num_minibatches"), std::string::npos) << e.what();
  }
}

TEST(Config, MujocoKeywordArgumentsAreCheckedForTheEnvironment) {
  const Config c = parse("env: {name: Ant-v5, contact_force_range: [-2, .inf], terminate_when_unhealthy: false}", "t.yaml");
  EXPECT_EQ((*c.env.kwargs.contact_force_range)[0], -2.0);
  EXPECT_TRUE(std::isinf((*c.env.kwargs.contact_force_range)[1]));
  EXPECT_EQ(parse(to_yaml(c), "r.yaml").env.kwargs.contact_force_range, c.env.kwargs.contact_force_range);
  EXPECT_EQ(error_of("env: {name: Hopper-v5, contact_cost_weight: 1}").rfind(
                "config test.yaml: env.contact_cost_weight: Hopper-v5 has no such setting (it takes frame_skip", 0),
            0u);
  EXPECT_EQ(error_of("env: {name: CartPole-v1, ctrl_cost_weight: 1}").rfind(
                "config test.yaml: env.ctrl_cost_weight: CartPole-v1 has no such setting", 0),
            0u);
  EXPECT_EQ(error_of("env: {name: Ant-v5, healthy_z_range: [1, 0.5]}"),
            "config test.yaml: env.healthy_z_range: expected a list [low, high] of two numbers (inf allowed), low < high "
            "or null, got a list");
  EXPECT_EQ(error_of("env: {name: Ant-v5, frame_skip: 0}"),
            "config test.yaml: env.frame_skip: expected an integer or null (>= 1), got '0'");
}

TEST(Config, TimeoutsTakeNumbersAutoOrOff) {
  const Config d = parse("{}", "t.yaml");
  EXPECT_DOUBLE_EQ(d.reduce.timeout_s, 120);
  EXPECT_EQ(d.train.stall_timeout_s.mode, AutoSeconds::Mode::automatic);
  const Config c = parse("train: {stall_timeout_s: 42.5}\nreduce: {timeout_s: 0.5}\n", "t.yaml");
  EXPECT_EQ(c.train.stall_timeout_s.mode, AutoSeconds::Mode::fixed);
  EXPECT_DOUBLE_EQ(c.train.stall_timeout_s.seconds, 42.5);
  EXPECT_DOUBLE_EQ(c.reduce.timeout_s, 0.5);
  EXPECT_EQ(parse("train: {stall_timeout_s: off}", "t.yaml").train.stall_timeout_s.mode, AutoSeconds::Mode::off);
  EXPECT_EQ(parse(to_yaml(c), "r.yaml").train.stall_timeout_s, c.train.stall_timeout_s);
  EXPECT_EQ(parse(to_yaml(parse("train: {stall_timeout_s: off}", "t.yaml")), "r.yaml").train.stall_timeout_s.mode,
            AutoSeconds::Mode::off);
  EXPECT_EQ(error_of("train: {stall_timeout_s: 0}"),
            "config test.yaml: train.stall_timeout_s: expected auto, off or a number of seconds (> 0), got '0'");
  EXPECT_EQ(error_of("train: {stall_timeout_s: [1]}"),
            "config test.yaml: train.stall_timeout_s: expected auto, off or a number of seconds (> 0), got a list");
  EXPECT_EQ(error_of("reduce: {timeout_s: -1}"), "config test.yaml: reduce.timeout_s: expected a number in (0, 1e6], got '-1'");
  EXPECT_EQ(error_of("reduce: {timeout_s: never}"),
            "config test.yaml: reduce.timeout_s: expected a number in (0, 1e6], got 'never'");
}

TEST(Config, OverridesApplyInOrderAndAreChecked) {
  const Config c = parse("ppo: {gamma: 0.9}", "test.yaml",
                         {{"ppo.gamma", "0.95"}, {"policy.actor_hidden", "[32, 16]"},
                          {"ppo.target_kl", "0.02"}, {"ppo.gamma", "0.97"}});
  EXPECT_DOUBLE_EQ(c.section<PpoConfig>().gamma, 0.97);
  EXPECT_EQ(c.policy.actor_hidden, (std::vector<int>{32, 16}));
  EXPECT_DOUBLE_EQ(*c.section<PpoConfig>().target_kl, 0.02);
  // A section absent from the file is created by the override.
  EXPECT_EQ(parse("{}", "t.yaml", {{"device.matmul", "tf32"}}).device.matmul, "tf32");
  EXPECT_EQ(parse("{}", "t.yaml", {{"device.matmul", "bf16"}}).device.matmul, "bf16");
  EXPECT_EQ(error_of("{}", {{"device.matmul", "fp16"}}),
            "config test.yaml: device.matmul: expected one of fp32, tf32, bf16, got 'fp16'");
  EXPECT_EQ(parse("algo: dqn\ndevice: {graphs: on}", "t.yaml").device.graphs, "on");  // its updates
  EXPECT_EQ(error_of("algo: dqn\nreplay: {storage: host}\ndevice: {graphs: on}"),
            "config test.yaml: device.graphs: on: captured updates sample a device replay; replay.storage is host "
            "(use auto or off)");
  // PPO's update: any environment, a game's roles and host-simulated MuJoCo included
  EXPECT_EQ(parse("env: {name: TagGridworld-v0}\ndevice: {graphs: on}", "t.yaml").device.graphs, "on");
  EXPECT_EQ(parse("algo: dqn\ndevice: {graphs: auto}", "t.yaml").device.graphs, "auto");
  EXPECT_EQ(error_of("device: {matmul: bf16, fused_kernels: on}"),
            "config test.yaml: device.fused_kernels: on: the fused kernels have no BF16 path (device.matmul bf16 "
            "runs the layered cuBLAS kernels); use auto or off");
  EXPECT_EQ(error_of("{}", {{"ppo.gamam", "0.9"}}),
            "config --set: ppo.gamam: unknown key (did you mean 'ppo.gamma'?)");
  EXPECT_EQ(error_of("{}", {{"ppo.gamma", "2"}}),
            "config test.yaml: ppo.gamma: expected a number in [0, 1], got '2'");
}

TEST(Config, ResolvedYamlRoundTrips) {
  const Config a = parse("env: {name: Pendulum-v1, num_envs: 4}\nppo: {target_kl: 0.015, "
                         "learning_rate: 3.0e-4}\ntrain: {run_dir: 'runs/a b: c'}\n",
                         "test.yaml");
  const std::string text = to_yaml(a);
  const Config b = parse(text, "resolved.yaml");
  EXPECT_EQ(to_yaml(b), text);
  EXPECT_EQ(b.env.name, "Pendulum-v1");
  EXPECT_DOUBLE_EQ(b.section<PpoConfig>().learning_rate, 3.0e-4);
  EXPECT_DOUBLE_EQ(*b.section<PpoConfig>().target_kl, 0.015);
  EXPECT_EQ(b.train.run_dir, "runs/a b: c");
  // every key appears in the resolved text
  for (const auto& k : keys()) {
    const auto leaf = k.substr(k.rfind('.') + 1);
    EXPECT_NE(text.find(leaf + ":"), std::string::npos) << k;
  }
}

TEST(Config, ReadmeDocumentsEveryKey) {
  std::ifstream in(GMI_SOURCE_DIR "/config/README.md");
  ASSERT_TRUE(in) << "config/README.md not found";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  for (const auto& k : keys()) EXPECT_NE(readme.find("`" + k + "`"), std::string::npos) << k;
  // and the table in config/README.md is the generated one (regenerate with `gmi_drl config reference`)
  EXPECT_NE(readme.find(reference_markdown()), std::string::npos)
      << "config/README.md's key reference is stale: paste the output of `gmi_drl config reference` "
         "between its config-reference markers";
}

TEST(Config, ShippedConfigsParse) {
  for (const char* f : {"cartpole_ppo.yaml", "acrobot_ppo.yaml", "pendulum_ppo.yaml",
                        "mountain_car_continuous_ppo.yaml", "bench_cartpole_ppo.yaml"}) {
    SCOPED_TRACE(f);
    EXPECT_NO_THROW(load(std::string(GMI_SOURCE_DIR "/config/") + f));
  }
}
