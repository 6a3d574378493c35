// Prints the environment registry (kernels/envs/registry.cpp), one environment a line:
// name <TAB> kind <TAB> why this build cannot run it (empty if it can).  The reference scripts
// (compare_gymnasium.py) iterate it instead of spelling the names.
#include <cstdio>

#include "kernels/envs/registry.hpp"

int main() {
  for (const gmi::envs::EnvInfo& e : gmi::envs::registered_envs())
    std::printf("%s\t%s\t%s\n", e.name.c_str(), gmi::envs::kind_name(e.kind), e.unavailable.c_str());
  return 0;
}
