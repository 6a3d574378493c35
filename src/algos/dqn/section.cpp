// The dqn section's derive step (registered in src/algos/registry.cpp).
#include <fmt/format.h>

#include "src/algos/dqn/dqn.hpp"

namespace gmi::algos {

void derive_dqn(config::Config& c) {
  derive_offpolicy(c, c.dqn.num_steps, c.dqn.batch_size);
  if (c.dqn.end_e > c.dqn.start_e)
    config::fail(c, "dqn.end_e", fmt::format("{} is above dqn.start_e = {}: epsilon decays", c.dqn.end_e, c.dqn.start_e));
}

}  // namespace gmi::algos
