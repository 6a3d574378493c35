#include "src/algos/trainer.hpp"

#include "kernels/core/error.hpp"
#include "src/algos/ppo/ppo.hpp"

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

}  // namespace gmi::algos
