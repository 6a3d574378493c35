#pragma once
/// \file
/// \brief WarpDrive's Tag games by name (tag.cpp): their specs and environments, for the registry's
/// two lines (kernels/envs/registry.cpp) and the Tag tests.
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/envs/multiagent/multi_agent.hpp"
#include "kernels/envs/multiagent/tag_params.hpp"

namespace gmi::envs {

/// The spec of a Tag game; throws gmi::InputError as resolve_tag_params.
MultiAgentSpec tag_spec(const std::string& name, const TagParams& p);
/// N Tag environments on this rank, envs [global_offset, global_offset + n) of the run.
std::unique_ptr<MultiAgentVecEnvBase> make_tag_env(const std::string& name, int num_envs, std::uint64_t seed,
                                                   std::uint64_t global_offset, const TagParams& p);

}  // namespace gmi::envs
