// The ppo section: its keys and its derive step (registered in src/algos/registry.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>

#include "kernels/envs/registry.hpp"
#include "src/algos/ppo/section.hpp"

namespace gmi::algos {

config::SectionDecl ppo_section() { return config::section<PpoConfig>("ppo", GMI_CONFIG_KEYS(PpoConfig, GMI_PPO_KEYS)); }

namespace {
/// ppo.frozen_roles names roles of the multi-agent game, and is empty for other environments.
void check_frozen_roles(const config::Config& c) {
  const std::vector<std::string>& frozen = c.section<PpoConfig>().frozen_roles;
  if (!envs::is_multi_agent(c.env.name)) {
    if (!frozen.empty()) config::fail(c, "ppo.frozen_roles", c.env.name + " has no roles (a single-agent environment)");
    return;
  }
  const envs::MultiAgentSpec game = envs::multi_agent_spec(c.env.name, config::env_overrides(c));
  for (const std::string& r : frozen) {
    std::string names;
    bool found = false;
    for (const auto& role : game.roles) found = found || role.name == r, names += " " + role.name;
    if (!found)
      config::fail(c, "ppo.frozen_roles", "'" + r + "' is not a role of " + c.env.name + " (its roles:" + names + ")");
  }
}
}  // namespace

void derive_ppo(config::Config& c) {
  check_frozen_roles(c);
  if (c.policy.shared_hidden) {
    if (c.policy.actor_hidden.empty())
      config::fail(c, "policy.shared_hidden", "true needs at least one hidden layer in policy.actor_hidden");
    if (c.policy.critic_hidden != c.policy.actor_hidden)
      config::fail(c, "policy.critic_hidden",
                   fmt::format("expected [{}] (policy.actor_hidden: policy.shared_hidden makes them one trunk), got [{}]",
                               fmt::join(c.policy.actor_hidden, ", "), fmt::join(c.policy.critic_hidden, ", ")));
  }
  const PpoConfig& ppo = c.section<PpoConfig>();
  c.num_steps = ppo.num_steps;
  c.batch_size = std::int64_t(c.env.num_envs) * ppo.num_steps;
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
  if (c.batch_size % ppo.num_minibatches != 0)
    config::fail(c, "ppo.num_minibatches",
                 fmt::format("{} does not divide the batch env.num_envs * ppo.num_steps = {}", ppo.num_minibatches,
                             c.batch_size));
  c.minibatch_size = c.batch_size / ppo.num_minibatches;
}

}  // namespace gmi::algos
