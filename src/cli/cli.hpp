#pragma once
/// \file
/// \brief The `gmi_drl` command line (CLI11): training (default), `env`, `eval`, `config`, `checkpoint`, `bench*`.
namespace gmi::cli {

/// Parses arguments and runs the command.  Returns the process exit status:
/// 0 success, 1 runtime failure, 2 bad input (one error line on stderr).
int main(int argc, char** argv);

}  // namespace gmi::cli
