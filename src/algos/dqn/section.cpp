// The dqn section: its keys and its derive step (registered in src/algos/registry.cpp).
#include <fmt/format.h>

#include "src/algos/dqn/section.hpp"
#include "src/algos/offpolicy.hpp"

namespace gmi::algos {

config::SectionDecl dqn_section() { return config::section<DqnConfig>("dqn", GMI_CONFIG_KEYS(DqnConfig, GMI_DQN_KEYS)); }

void derive_dqn(config::Config& c) {
  const DqnConfig& dqn = c.section<DqnConfig>();
  derive_offpolicy(c, dqn.num_steps, dqn.batch_size);
  if (dqn.end_e > dqn.start_e)
    config::fail(c, "dqn.end_e", fmt::format("{} is above dqn.start_e = {}: epsilon decays", dqn.end_e, dqn.start_e));
}

}  // namespace gmi::algos
