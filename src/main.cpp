#include "src/algos/registry.hpp"
#include "src/cli/cli.hpp"

int main(int argc, char** argv) {
  gmi::algos::register_algorithms();
  return gmi::cli::main(argc, argv);
}
