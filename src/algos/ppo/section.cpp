// The ppo section's derive step (registered in src/algos/registry.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "kernels/envs/registry.hpp"
#include "src/algos/ppo/ppo.hpp"

namespace gmi::algos {

void derive_ppo(config::Config& c) {
  c.num_steps = c.ppo.num_steps;
  c.batch_size = std::int64_t(c.env.num_envs) * c.ppo.num_steps;
  if (c.batch_size > INT_MAX)
    config::fail(c, "env.num_envs",
                 fmt::format("env.num_envs * ppo.num_steps = {} exceeds {} samples per GMI", c.batch_size, INT_MAX));
  if (envs::is_multi_agent(c.env.name)) {
    // One role's batch holds a sample per agent of the role.
    int agents = 0;
    for (const auto& role : envs::multi_agent_spec(c.env.name, config::env_overrides(c)).roles)
      agents = std::max(agents, role.agents);
    const std::int64_t role_batch = c.batch_size * agents;
    if (role_batch > INT_MAX)
      config::fail(c, "env.num_envs",
                   fmt::format("env.num_envs * agents of a role ({}) * ppo.num_steps = {} exceeds {} samples per GMI",
                               agents, role_batch, INT_MAX));
  }
  if (c.batch_size % c.ppo.num_minibatches != 0)
    config::fail(c, "ppo.num_minibatches",
                 fmt::format("{} does not divide the batch env.num_envs * ppo.num_steps = {}", c.ppo.num_minibatches,
                             c.batch_size));
  c.minibatch_size = c.batch_size / c.ppo.num_minibatches;
}

}  // namespace gmi::algos
