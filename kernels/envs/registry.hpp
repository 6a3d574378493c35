#pragma once
/// \file
/// \brief Every environment by name: one table (registry.cpp) of the device, MuJoCo, device-physics and
/// multi-agent environments.  Adding one: its header, one line in registry.cpp, its reference entry in the
/// tests (tests/envs/compare_gymnasium.py for a device environment).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/envs/multiagent/multi_agent.hpp"
#include "kernels/envs/overrides.hpp"
#include "kernels/envs/vec_env.hpp"

namespace gmi::envs {

/// What runs an environment.
enum class EnvKind {
  device,       ///< a header in kernels/envs/ stepped by VecEnv<Env> on the device
  mujoco,       ///< host-simulated (kernels/envs/mujoco/), behind VecEnvBase
  physics,      ///< a MuJoCo model on the device pipeline (kernels/envs/physics/), stepped by VecEnv<Env>
  multi_agent,  ///< several roles, one policy each (kernels/envs/multiagent/)
};
const char* kind_name(EnvKind k);  ///< "device", "mujoco", "physics", "multi-agent"

/// One line of the registry.
struct EnvInfo {
  std::string name;         ///< Gymnasium-style id, e.g. "CartPole-v1"
  EnvKind kind;
  std::string unavailable;  ///< "" when this build runs it; else why not (decided at build time)
};

/// Every registered environment, in registry order (device, MuJoCo, multi-agent), available in
/// this build or not.
const std::vector<EnvInfo>& registered_envs();

/// Names of all registered single-agent environments, in registry order.
std::vector<std::string> env_names();
/// Every environment name: the single-agent ones, then the multi-agent ones (env.name's choices).
std::vector<std::string> all_env_names();
/// Names of the multi-agent environments.
std::vector<std::string> multi_agent_env_names();
/// Whether `name` is a multi-agent environment (kernels/envs/multiagent/: several roles, one
/// policy each; make_multi_agent_env builds it).
bool is_multi_agent(const std::string& name);

/// Throws gmi::InputError "unknown environment 'X': expected one of ..." unless `name` is registered
/// (single- or multi-agent).
void check_env_name(const std::string& name);

/// The spec of a registered single-agent environment; throws gmi::InputError naming the valid
/// choices (and, for a multi-agent name, saying so), or why this build cannot run it.
EnvSpec env_spec(const std::string& name, const EnvOverrides& overrides = {});

/// N copies of a registered environment on this rank, envs [global_offset, global_offset + n).
std::unique_ptr<VecEnvBase> make_vec_env(const std::string& name, int num_envs, std::uint64_t seed,
                                         std::uint64_t global_offset,
                                         const EnvOverrides& overrides = {});

/// N copies of a multi-agent environment on this rank, envs [global_offset, global_offset + n).
std::unique_ptr<MultiAgentVecEnvBase> make_multi_agent_env(const std::string& name, int num_envs, std::uint64_t seed,
                                                           std::uint64_t global_offset, const EnvOverrides& overrides);
/// Its spec (roles, observation and action sizes).
MultiAgentSpec multi_agent_spec(const std::string& name, const EnvOverrides& overrides);

}  // namespace gmi::envs
