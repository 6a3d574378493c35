// The sac section: its keys and its derive step (registered in src/algos/registry.cpp).
#include <fmt/format.h>

#include "kernels/envs/registry.hpp"
#include "kernels/rl/sac_limits.hpp"
#include "src/algos/offpolicy.hpp"
#include "src/algos/sac/section.hpp"

namespace gmi::algos {

config::SectionDecl sac_section() { return config::section<SacConfig>("sac", GMI_CONFIG_KEYS(SacConfig, GMI_SAC_KEYS)); }

void derive_sac(config::Config& c) {
  const SacConfig& sac = c.section<SacConfig>();
  derive_offpolicy(c, sac.num_steps, sac.batch_size);
  const envs::EnvSpec spec = envs::env_spec(c.env.name, config::env_overrides(c));
  if (spec.act_dim > rl::kMaxSacActDim)
    config::fail(c, "algo", fmt::format("sac takes at most {} action dimensions; {} has {} (use ppo)", rl::kMaxSacActDim,
                                        c.env.name, spec.act_dim));
}

}  // namespace gmi::algos
