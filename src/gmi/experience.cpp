#include "src/gmi/experience.hpp"

#include "kernels/envs/registry.hpp"
#include "src/algos/registry.hpp"

namespace gmi::instances {

std::vector<mpi::PackageType> experience_packages(const config::Config& cfg) {
  const int n = cfg.env.num_envs;
  const bool replay = algos::algorithm(cfg.algo).replay;
  const envs::EnvOverrides ov = config::env_overrides(cfg);
  std::vector<mpi::PackageType> p;
  if (envs::is_multi_agent(cfg.env.name)) {
    for (const envs::RoleSpec& r : envs::multi_agent_spec(cfg.env.name, ov).roles) {
      const int rows = n * r.agents;
      p.push_back({r.name + ".obs", rows, 4 * r.obs_dim, 4});
      p.push_back({r.name + ".action", rows, 4 * r.act_dim(), 4});
      p.push_back({r.name + ".reward", rows, 4, 4});
      p.push_back({r.name + ".log_prob", rows, 4, 4});
      p.push_back({r.name + ".value", rows, 4, 4});
    }
    p.push_back({"terminated", n, 1, 1});
    p.push_back({"truncated", n, 1, 1});
    return p;
  }
  const envs::EnvSpec s = envs::env_spec(cfg.env.name, ov);
  p.push_back({"obs", n, 4 * s.obs_dim, 4});
  p.push_back({"action", n, 4 * s.act_dim, 4});
  p.push_back({"reward", n, 4, 4});
  p.push_back({"terminated", n, 1, 1});
  p.push_back({"truncated", n, 1, 1});
  if (replay) {
    p.push_back({"next_obs", n, 4 * s.obs_dim, 4});
  } else {
    p.push_back({"log_prob", n, 4, 4});
    p.push_back({"value", n, 4, 4});
  }
  return p;
}

}  // namespace gmi::instances
