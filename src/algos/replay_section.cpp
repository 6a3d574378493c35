// The replay section's keys (the DQN and SAC rows name it in src/algos/registry.cpp).
#include "src/algos/replay_section.hpp"

namespace gmi::algos {

config::SectionDecl replay_section() {
  return config::section<ReplayConfig>("replay", GMI_CONFIG_KEYS(ReplayConfig, GMI_REPLAY_KEYS));
}

}  // namespace gmi::algos
