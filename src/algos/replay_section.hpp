#pragma once
/// \file
/// \brief The replay section: the off-policy algorithms' experience replay (kernels/rl/replay.hpp),
/// one shard per GMI, and how acting feeds it, each key declared once (kernels/core/key_list.hpp).
#include <cstdint>
#include <string>

#include "src/config/config.hpp"

namespace gmi::algos {

#define GMI_REPLAY_KEYS(X)                                                                                     \
  X(std::int64_t, capacity, 1000000, at_least(1),                                                             \
    "transitions kept per GMI (CleanRL's buffer_size); each GMI keeps its own envs' experience (under "       \
    "mapping.template async and ea-t a trainer keeps its serving GMIs'); must hold at least env.num_envs")    \
  X(std::string, storage, "device", one_of({"device", "host"}),                                               \
    "where the replay buffer lives: device (sampled on the device, paper 002's in-GPU replay), host (host "   \
    "memory; each batch copied to the device)")                                                               \
  X(bool, act_ahead, false, any,                                                                              \
    "true: within an iteration, vector step k + 1's actions come from the network before step k's updates "  \
    "(one vector step of policy lag), so host-simulated physics runs beside the updates on every step but "  \
    "an iteration's first; false: "                                                                          \
    "CleanRL's order (physics still overlaps updates that leave the acting network alone, with the same "     \
    "results)")

/// replay.* (read as `cfg.section<ReplayConfig>()`).
struct ReplayConfig {
  GMI_REPLAY_KEYS(GMI_KEY_MEMBER)
};

/// The replay section, which the DQN and SAC rows both name (registered once).
config::SectionDecl replay_section();

}  // namespace gmi::algos
