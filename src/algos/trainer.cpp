#include "src/algos/trainer.hpp"

#include <fmt/format.h>

#include "kernels/core/error.hpp"
#include "src/algos/dqn/dqn.hpp"
#include "kernels/envs/registry.hpp"
#include "src/algos/ppo/multi_agent.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/algos/sac/sac.hpp"

namespace gmi::algos {

const std::vector<float>* TrainerState::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.first == name) return &t.second;
  return nullptr;
}

const std::vector<double>* TrainerState::tensor64(const std::string& name) const {
  for (const auto& t : tensors64)
    if (t.first == name) return &t.second;
  return nullptr;
}

std::int64_t TrainerState::counter(const std::string& name) const {
  for (const auto& c : counters)
    if (c.first == name) return c.second;
  throw Error("trainer state: no counter '" + name + "'");
}

std::unique_ptr<Trainer> make_trainer(const config::Config& cfg, std::uint64_t env_offset,
                                      mpi::GradientReducer* reducer) {
  if (envs::is_multi_agent(cfg.env.name)) return std::make_unique<MultiAgentPpoTrainer>(cfg, env_offset, reducer);
  if (cfg.algo == "dqn") return std::make_unique<DqnTrainer>(cfg, env_offset, reducer);
  if (cfg.algo == "sac") return std::make_unique<SacTrainer>(cfg, env_offset, reducer);
  return std::make_unique<PpoTrainer>(cfg, env_offset, reducer);
}

std::size_t num_params(const config::Config& cfg) {
  if (envs::is_multi_agent(cfg.env.name)) return MultiAgentPpoTrainer::num_params(cfg);
  if (cfg.algo == "dqn") return DqnTrainer::network(cfg).num_params;
  if (cfg.algo == "sac") return SacTrainer::networks(cfg).num_params;
  return PpoTrainer::policy_layout(cfg).num_params;
}

MemoryNeeds memory_needs(const config::Config& cfg) {
  if (envs::is_multi_agent(cfg.env.name)) return MultiAgentPpoTrainer::memory_needs(cfg);
  if (cfg.algo == "dqn") return DqnTrainer::memory_needs(cfg);
  if (cfg.algo == "sac") return SacTrainer::memory_needs(cfg);
  return PpoTrainer::memory_needs(cfg);
}

ActorOptions actor_options(const config::Config& cfg, const envs::EnvSpec& spec) {
  ActorOptions ao;
  ao.normalize_obs = cfg.ppo.normalize_obs;
  ao.obs_clip = float(cfg.ppo.obs_clip);
  ao.clip_actions = cfg.ppo.clip_actions;
  ao.act_low = spec.act_low;
  ao.act_high = spec.act_high;
  ao.fused = fused_wanted(cfg);
  ao.tf32 = cfg.device.matmul == "tf32";
  return ao;
}

std::unique_ptr<Policy> make_policy(const config::Config& cfg, const envs::EnvSpec& spec,
                                    const std::vector<float>& params, const std::vector<double>& obs_rms,
                                    int capacity) {
  if (envs::is_multi_agent(cfg.env.name))
    throw InputError(cfg.env.name + " is a multi-agent environment: its policies (one per role) are not served "
                     "by this tool yet");
  const std::size_t want = num_params(cfg);
  if (params.size() != want)
    throw InputError(fmt::format("the policy has {} parameters but {} of its config ({}) needs {}", params.size(),
                                 cfg.algo, cfg.env.name, want));
  if (cfg.algo == "dqn") return std::make_unique<DqnPolicy>(cfg, params, capacity);
  if (cfg.algo == "sac") return std::make_unique<SacPolicy>(cfg, spec, params, capacity);
  blas::set_matmul_precision(blas::parse_matmul_precision(cfg.device.matmul));  // the layered actor's products
  return std::make_unique<Actor>(nn::ActorCriticLayout(policy_spec(cfg, spec)), params, obs_rms,
                                 actor_options(cfg, spec), capacity);
}

}  // namespace gmi::algos
