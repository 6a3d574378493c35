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

}  // namespace gmi::algos
