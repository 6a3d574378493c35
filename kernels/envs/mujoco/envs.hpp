#pragma once
/// \file
/// \brief Questions about the MuJoCo environments that the rest of gmi_drl asks by name (answered
/// from the one registry, kernels/envs/registry.cpp; built with or without MuJoCo).
#include <string>

#include "kernels/envs/mujoco/options.hpp"

namespace gmi::envs::mujoco {

/// Whether `name` is one of the registry's MuJoCo environments (in this build or not).
bool is_mujoco(const std::string& name);
/// Throws gmi::InputError naming env.<key> for a keyword argument `name` does not take (any, for
/// an environment that is not MuJoCo's).  Needs no model file.  In a build without MuJoCo a MuJoCo
/// environment's arguments are not checked here (making it says why it cannot run).
void check_kwargs_for(const std::string& name, const Kwargs& k);

}  // namespace gmi::envs::mujoco
