// The sac section's derive step (registered in src/algos/registry.cpp).
#include <fmt/format.h>

#include "kernels/envs/registry.hpp"
#include "kernels/rl/sac_limits.hpp"
#include "src/algos/sac/sac.hpp"

namespace gmi::algos {

void derive_sac(config::Config& c) {
  derive_offpolicy(c, c.sac.num_steps, c.sac.batch_size);
  const envs::EnvSpec spec = envs::env_spec(c.env.name, config::env_overrides(c));
  if (spec.act_dim > rl::kMaxSacActDim)
    config::fail(c, "algo", fmt::format("sac takes at most {} action dimensions; {} has {} (use ppo)", rl::kMaxSacActDim,
                                        c.env.name, spec.act_dim));
}

}  // namespace gmi::algos
