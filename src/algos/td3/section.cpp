// The td3 section: its keys and its derive step (registered in src/algos/registry.cpp).
#include "src/algos/td3/section.hpp"

#include "src/algos/offpolicy.hpp"

namespace gmi::algos {

config::SectionDecl td3_section() { return config::section<Td3Config>("td3", GMI_CONFIG_KEYS(Td3Config, GMI_TD3_KEYS)); }

void derive_td3(config::Config& c) {
  const Td3Config& td3 = c.section<Td3Config>();
  derive_offpolicy(c, td3.num_steps, td3.batch_size);
}

}  // namespace gmi::algos
