#pragma once
/// \file
/// \brief The Dispenser (paper 003 §3.2.2): the typed packages one GMI's step of experience splits
/// into, for the channels (mpi/channels.hpp) that move it to another GMI.
///
/// Single-agent, per step of env.num_envs envs: obs, action (int32 index or floats), reward,
/// terminated and truncated (one byte each); algorithms that learn from a replay add next_obs (the
/// observation the step led to, before any reset); the others add log_prob and value.
/// Multi-agent games: per role "<role>.obs", "<role>.action", "<role>.reward", "<role>.log_prob",
/// "<role>.value" with one row per agent, and the envs' terminated and truncated flags.
#include <vector>

#include "mpi/channel_plan.hpp"
#include "src/config/config.hpp"

namespace gmi::instances {

std::vector<mpi::PackageType> experience_packages(const config::Config& cfg);

}  // namespace gmi::instances
