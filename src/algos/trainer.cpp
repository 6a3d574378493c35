#include "src/algos/trainer.hpp"

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/blas.hpp"
#include "kernels/nn/tile_gemm.hpp"

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

void set_device_math(const config::Config& cfg) {
  blas::set_matmul_precision(blas::parse_matmul_precision(cfg.device.matmul));
  blas::set_epilogues(cfg.device.gemm_epilogues);
  nn::tile_gemm::set_enabled(cfg.device.tile_gemm);
}

EnvPtr own_env(EnvPtr given, const config::Config& cfg, std::uint64_t env_offset) {
  if (!given)
    return envs::make_vec_env(cfg.env.name, cfg.env.num_envs, std::uint64_t(cfg.train.seed), env_offset,
                              config::env_overrides(cfg));
  GMI_REQUIRE(given->num_envs() == cfg.env.num_envs, "a trainer was given " + std::to_string(given->num_envs()) +
                                                         " envs for env.num_envs " + std::to_string(cfg.env.num_envs));
  return given;
}

RolloutShape rollout_shape(const config::Config& cfg) {
  RolloutShape s;
  if (!envs::is_multi_agent(cfg.env.name)) {
    const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
    s.obs = spec.obs_dim, s.actions = spec.act_dim, s.terms = int(spec.reward_terms.size());
    return s;
  }
  const envs::MultiAgentSpec g = envs::multi_agent_spec(cfg.env.name, config::env_overrides(cfg));
  s.rows = 0, s.roles = int(g.roles.size()), s.terms = int(g.stat_terms.size()), s.game = true;
  for (const envs::RoleSpec& role : g.roles) {
    s.obs += role.agents * role.obs_dim;
    s.actions += role.agents * role.act_dim();
    s.rows += role.agents;
  }
  return s;
}

std::vector<envs::EpisodeStats> episode_blocks(const HostRollout& r) {
  return r.role_episodes.empty() ? std::vector<envs::EpisodeStats>{r.episodes} : r.role_episodes;
}

namespace {
[[noreturn]] void no_device_rollout() {
  throw Error("this algorithm's rollouts go through the host (it has no device_rollout())");
}
}  // namespace

void ServedLearning::serve_device_rollout(std::int64_t, HostRollout&, const std::function<void()>&) {
  no_device_rollout();
}

void ServedLearning::begin_device_rollout() { no_device_rollout(); }

IterationMetrics ServedLearning::learn_device_rollout(const HostRollout&, double) { no_device_rollout(); }

}  // namespace gmi::algos
