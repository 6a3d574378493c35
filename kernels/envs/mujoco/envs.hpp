#pragma once
/// \file
/// \brief The MuJoCo environments by name, for the registry (kernels/envs/registry.cpp, which
/// includes this header, so this one does not include the registry's).  Built with or without
/// MuJoCo: without it every call but names() says "built without MuJoCo".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/envs/overrides.hpp"
#include "kernels/envs/vec_env.hpp"

namespace gmi::envs::mujoco {

/// Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5, Humanoid-v5, InvertedPendulum-v5, Swimmer-v5.
std::vector<std::string> names();
bool is_mujoco(const std::string& name);
/// Throws gmi::InputError naming env.<key> for a keyword argument `name` does not take (any, for
/// an environment that is not MuJoCo's).  Needs no model file.
void check_kwargs_for(const std::string& name, const Kwargs& k);
EnvSpec spec(const std::string& name, const EnvOverrides& o);
std::unique_ptr<VecEnvBase> make(const std::string& name, int num_envs, std::uint64_t seed, std::uint64_t offset,
                                 const EnvOverrides& o);

}  // namespace gmi::envs::mujoco
