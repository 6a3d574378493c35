// The appo section: its keys and its derive step (registered in src/algos/registry.cpp).
#include "src/algos/appo/section.hpp"

#include <fmt/format.h>

#include "src/algos/ppo/section.hpp"

namespace gmi::algos {

config::SectionDecl appo_section() {
  return config::section<AppoConfig>("appo", GMI_CONFIG_KEYS(AppoConfig, GMI_APPO_KEYS));
}

bool uses_vtrace(const config::Config& c) { return c.algo == "appo"; }

void derive_appo(config::Config& c) {
  derive_ppo(c);
  const int M = c.section<PpoConfig>().num_minibatches;
  if (c.env.num_envs % M != 0)
    config::fail(c, "ppo.num_minibatches",
                 fmt::format("{} does not divide env.num_envs = {} (appo's minibatches are whole trajectories: "
                             "env.num_envs / ppo.num_minibatches envs x ppo.num_steps steps each)",
                             M, c.env.num_envs));
}

}  // namespace gmi::algos
