#include "src/algos/registry.hpp"

#include <fmt/format.h>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/blas.hpp"
#include "src/algos/appo/section.hpp"
#include "src/algos/dqn/dqn.hpp"
#include "src/algos/ppo/multi_agent.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/algos/replay_section.hpp"
#include "src/algos/sac/sac.hpp"
#include "src/algos/td3/td3.hpp"
#include "src/algos/ppo/section.hpp"

namespace gmi::algos {
namespace {

std::int64_t no_epochs(const config::Config&) { return 0; }
std::int64_t no_replay(const config::Config&) { return 0; }
std::int64_t replay_capacity(const config::Config& c) { return c.section<ReplayConfig>().capacity; }
const char* kOffPolicyExperience =
    "off-policy: the replay buffers are under replay/ (unless checkpoint.replay is false)";

/// What DQN and SAC rows share: a replay section, their checkpoints' replay, their settings line.
Algorithm offpolicy_row(const char* name, const char* summary, config::SectionDecl section,
                        void (*derive)(config::Config&)) {
  Algorithm a;
  a.rules.name = name;
  a.rules.summary = summary;
  a.rules.sections = {replay_section(), std::move(section)};
  a.rules.derive = derive;
  a.checkpoint.experience = kOffPolicyExperience;
  a.checkpoint.update_epochs = no_epochs;
  a.checkpoint.replay_capacity = replay_capacity;
  a.settings = [](const config::Config& c) {
    return fmt::format("{} batch {} | replay {} ({} per GMI)", c.algo, c.minibatch_size, c.section<ReplayConfig>().storage,
                       c.section<ReplayConfig>().capacity);
  };
  a.replay = true;
  a.async_rollouts = true;  // serving GMIs' transitions join the trainer's replay
  return a;
}

// ---- PPO (single-agent envs; one policy per role of a multi-agent game) ----
Algorithm ppo() {
  Algorithm a;
  a.rules.name = "ppo";
  a.rules.summary = "on-policy, discrete or continuous actions";
  a.rules.sections = {ppo_section()};
  a.rules.multi_agent = true;
  a.rules.captured_rollout = true;
  a.rules.captured_update = true;
  a.rules.grouped_steps = true;
  a.rules.derive = derive_ppo;
  a.example = {{"env.name", "CartPole-v1"}, {"env.num_envs", "4"}, {"ppo.num_steps", "16"},
               {"policy.actor_hidden", "[16, 16]"}, {"policy.critic_hidden", "[16, 16]"},
               {"ppo.normalize_obs", "true"}, {"ppo.normalize_reward", "true"}, {"train.total_env_steps", "1000"}};
  a.make_trainer = [](const config::Config& c, std::uint64_t offset, mpi::GradientReducer* r, GivenEnvs given) -> std::unique_ptr<Trainer> {
    if (envs::is_multi_agent(c.env.name)) return std::make_unique<MultiAgentPpoTrainer>(c, offset, r, std::move(given.game));
    return std::make_unique<PpoTrainer>(c, offset, r, std::move(given.env));
  };
  a.num_params = [](const config::Config& c) {
    return envs::is_multi_agent(c.env.name) ? MultiAgentPpoTrainer::num_params(c) : PpoTrainer::policy_layout(c).num_params;
  };
  a.memory_needs = [](const config::Config& c) {
    return envs::is_multi_agent(c.env.name) ? MultiAgentPpoTrainer::memory_needs(c) : PpoTrainer::memory_needs(c);
  };
  a.make_policy = [](const config::Config& c, const envs::EnvSpec& spec, const std::vector<float>& params,
                     const std::vector<double>& obs_rms, int capacity) -> std::unique_ptr<Policy> {
    set_device_math(c);  // the layered actor's products
    return std::make_unique<Actor>(nn::ActorCriticLayout(policy_spec(c, spec)), params, obs_rms, actor_options(c, spec),
                                   capacity);
  };
  a.checkpoint.experience =
      "not stored: PPO is on-policy and checkpoints are taken at iteration boundaries, where the rollout has been "
      "consumed";
  a.checkpoint.update_epochs = [](const config::Config& c) { return std::int64_t(c.section<PpoConfig>().update_epochs); };
  a.checkpoint.replay_capacity = no_replay;
  a.settings = [](const config::Config& c) {
    return fmt::format("ppo {} steps x {} epochs x {} minibatches", c.section<PpoConfig>().num_steps, c.section<PpoConfig>().update_epochs,
                       c.section<PpoConfig>().num_minibatches);
  };
  a.serve_bench = true;
  a.phase_profile = true;
  a.onnx_export = true;
  a.async_rollouts = true;
  a.device_rollouts = true;  // APPO's too (ppo()'s copy)
  return a;
}

// ---- APPO: PPO's trainer with V-trace targets per minibatch of whole trajectories ----
Algorithm appo() {
  Algorithm a = ppo();
  a.rules.name = "appo";
  a.rules.summary = "PPO's clipped loss with V-trace targets; single-agent; mapping.template async decouples acting "
                    "from learning";
  a.rules.sections.push_back(appo_section());
  a.rules.multi_agent = false;  // config::derive refuses the games, so ppo()'s factories see single-agent envs only
  a.rules.derive = derive_appo;
  a.settings = [](const config::Config& c) {
    return fmt::format("appo {} steps x {} epochs x {} minibatches of whole trajectories, V-trace rho {} c {}",
                       c.section<PpoConfig>().num_steps, c.section<PpoConfig>().update_epochs,
                       c.section<PpoConfig>().num_minibatches, c.section<AppoConfig>().vtrace_rho,
                       c.section<AppoConfig>().vtrace_c);
  };
  return a;
}

// ---- DQN (discrete actions, replay) ----
Algorithm dqn() {
  Algorithm a = offpolicy_row("dqn", "off-policy, discrete", dqn_section(), derive_dqn);
  a.rules.continuous_actions = false;
  a.rules.captured_update = true;
  a.example = {{"env.name", "CartPole-v1"}, {"env.num_envs", "2"}, {"policy.q_hidden", "[16, 16]"},
               {"replay.capacity", "30"}, {"dqn.num_steps", "25"}, {"dqn.learning_starts", "20"},
               {"dqn.train_frequency", "2"}, {"dqn.target_network_frequency", "10"}, {"dqn.batch_size", "8"},
               {"train.total_env_steps", "1000"}};
  a.make_trainer = [](const config::Config& c, std::uint64_t offset, mpi::GradientReducer* r, GivenEnvs given) -> std::unique_ptr<Trainer> {
    return std::make_unique<DqnTrainer>(c, offset, r, std::move(given.env));
  };
  a.num_params = [](const config::Config& c) { return DqnTrainer::network(c).num_params; };
  a.memory_needs = DqnTrainer::memory_needs;
  a.make_policy = [](const config::Config& c, const envs::EnvSpec&, const std::vector<float>& params,
                     const std::vector<double>&, int capacity) -> std::unique_ptr<Policy> {
    return std::make_unique<DqnPolicy>(c, params, capacity);
  };
  return a;
}

// ---- SAC (continuous actions, replay) ----
Algorithm sac() {
  Algorithm a = offpolicy_row("sac", "off-policy, continuous", sac_section(), derive_sac);
  a.rules.discrete_actions = false;
  a.rules.captured_update = true;
  a.example = {{"env.name", "Pendulum-v1"}, {"env.num_envs", "2"}, {"policy.actor_hidden", "[16, 16]"},
               {"policy.q_hidden", "[16, 16]"}, {"replay.capacity", "30"}, {"sac.num_steps", "10"},
               {"sac.learning_starts", "15"}, {"sac.batch_size", "8"}, {"train.total_env_steps", "1000"}};
  a.make_trainer = [](const config::Config& c, std::uint64_t offset, mpi::GradientReducer* r, GivenEnvs given) -> std::unique_ptr<Trainer> {
    return std::make_unique<SacTrainer>(c, offset, r, std::move(given.env));
  };
  a.num_params = [](const config::Config& c) { return SacTrainer::networks(c).num_params; };
  a.memory_needs = SacTrainer::memory_needs;
  a.make_policy = [](const config::Config& c, const envs::EnvSpec& spec, const std::vector<float>& params,
                     const std::vector<double>&, int capacity) -> std::unique_ptr<Policy> {
    return std::make_unique<SacPolicy>(c, spec, params, capacity);
  };
  return a;
}

// ---- TD3 (continuous actions, replay) ----
Algorithm td3() {
  Algorithm a = offpolicy_row("td3", "off-policy, continuous, deterministic actor", td3_section(), derive_td3);
  a.rules.discrete_actions = false;
  a.rules.captured_update = true;
  a.example = {{"env.name", "Pendulum-v1"}, {"env.num_envs", "2"}, {"policy.actor_hidden", "[16, 16]"},
               {"policy.q_hidden", "[16, 16]"}, {"replay.capacity", "30"}, {"td3.num_steps", "10"},
               {"td3.learning_starts", "15"}, {"td3.batch_size", "8"}, {"train.total_env_steps", "1000"}};
  a.make_trainer = [](const config::Config& c, std::uint64_t offset, mpi::GradientReducer* r, GivenEnvs given) -> std::unique_ptr<Trainer> {
    return std::make_unique<Td3Trainer>(c, offset, r, std::move(given.env));
  };
  a.num_params = [](const config::Config& c) { return Td3Trainer::networks(c).num_params; };
  a.memory_needs = Td3Trainer::memory_needs;
  a.make_policy = [](const config::Config& c, const envs::EnvSpec& spec, const std::vector<float>& params,
                     const std::vector<double>&, int capacity) -> std::unique_ptr<Policy> {
    return std::make_unique<Td3Policy>(c, spec, params, capacity);
  };
  return a;
}

}  // namespace

const std::vector<Algorithm>& algorithms() {
  // One row per algorithm.
  static const std::vector<Algorithm> rows = {ppo(), appo(), dqn(), sac(), td3()};
  return rows;
}

const Algorithm& algorithm(const std::string& name) {
  for (const Algorithm& a : algorithms())
    if (a.rules.name == name) return a;
  throw InputError("algo: expected one of " + algorithm_names() + ", got '" + name + "'");
}

std::string algorithm_names(bool (*pred)(const Algorithm&)) {
  std::vector<std::string> n;
  for (const Algorithm& a : algorithms())
    if (!pred || pred(a)) n.push_back(a.rules.name);
  return config::join_names(n, "and");
}

void register_algorithms() {
  for (const Algorithm& a : algorithms()) config::register_algorithm(a.rules);
}

// ---- what src/ asks of the algorithm a config names ----

std::unique_ptr<Trainer> make_trainer(const config::Config& cfg, std::uint64_t env_offset,
                                      mpi::GradientReducer* reducer, GivenEnvs given) {
  GMI_REQUIRE(!given.game || envs::is_multi_agent(cfg.env.name), "a multi-agent game given for " + cfg.env.name);
  GMI_REQUIRE(!given.env || !envs::is_multi_agent(cfg.env.name), "a single-agent env given for " + cfg.env.name);
  return algorithm(cfg.algo).make_trainer(cfg, env_offset, reducer, std::move(given));
}

std::size_t num_params(const config::Config& cfg) { return algorithm(cfg.algo).num_params(cfg); }

MemoryNeeds memory_needs(const config::Config& cfg) { return algorithm(cfg.algo).memory_needs(cfg); }

std::unique_ptr<Policy> make_policy(const config::Config& cfg, const envs::EnvSpec& spec,
                                    const std::vector<float>& params, const std::vector<double>& obs_rms,
                                    int capacity) {
  if (envs::is_multi_agent(cfg.env.name))
    throw InputError(cfg.env.name + " is a multi-agent environment: its policies (one per role) are not served "
                     "by this tool yet");
  const Algorithm& a = algorithm(cfg.algo);
  const std::size_t want = a.num_params(cfg);
  if (params.size() != want)
    throw InputError(fmt::format("the policy has {} parameters but {} of its config ({}) needs {}", params.size(),
                                 cfg.algo, cfg.env.name, want));
  return a.make_policy(cfg, spec, params, obs_rms, capacity);
}

}  // namespace gmi::algos
