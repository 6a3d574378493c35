#pragma once
/// \file
/// \brief What a user may override in an environment (config env.*).  Its own header so that the
/// environment families the registry dispatches to (MuJoCo's, kernels/envs/mujoco/envs.hpp) take
/// it without including the registry, which includes them.
#include "kernels/envs/mujoco/options.hpp"
#include "kernels/envs/multiagent/tag_params.hpp"

namespace gmi::envs {

/// Settings a user may override (0 / unset keep the environment's default).
struct EnvOverrides {
  int max_episode_steps = 0;
  mujoco::Options mujoco;  ///< host-simulated MuJoCo environments only
  TagParams tag;           ///< the multi-agent Tag games only (kernels/envs/multiagent/)
};

}  // namespace gmi::envs
