#include "src/tools/checkpoint_tool.hpp"

#include <fmt/format.h>

#include <iostream>

#include "src/checkpoint/checkpoint.hpp"

namespace gmi::tools {

void inspect_checkpoint(const std::string& path) { std::cout << checkpoint::inspect(path); }

void verify_checkpoint(const std::string& path) {
  const checkpoint::Meta m = checkpoint::verify(path);
  std::cout << fmt::format("{}: ok (format {}, iteration {}, {} env steps, {} GMI(s) x {} envs, {} parameters)\n",
                           path, m.format_version, m.iteration, m.env_steps, m.num_gmis, m.envs_per_gmi,
                           m.num_params);
}

}  // namespace gmi::tools
