#pragma once
/// \file
/// \brief Environments by name.  Adding one: its header, one line in registry.cpp, its tests.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/envs/mujoco/options.hpp"
#include "kernels/envs/vec_env.hpp"

namespace gmi::envs {

/// Settings a user may override (0 / unset keep the environment's default).
struct EnvOverrides {
  int max_episode_steps = 0;
  mujoco::Options mujoco;  ///< host-simulated MuJoCo environments only
};

/// Names of all registered environments, in registry order.
std::vector<std::string> env_names();

/// Throws gmi::InputError "unknown environment 'X': expected one of ..." unless `name` is registered.
void check_env_name(const std::string& name);

/// The spec of a registered environment; throws gmi::InputError naming the valid choices.
EnvSpec env_spec(const std::string& name, const EnvOverrides& overrides = {});

/// N copies of a registered environment on this rank, envs [global_offset, global_offset + n).
std::unique_ptr<VecEnvBase> make_vec_env(const std::string& name, int num_envs, std::uint64_t seed,
                                         std::uint64_t global_offset,
                                         const EnvOverrides& overrides = {});

}  // namespace gmi::envs
