#include "src/cli/cli.hpp"

int main(int argc, char** argv) { return gmi::cli::main(argc, argv); }
