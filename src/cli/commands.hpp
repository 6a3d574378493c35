#pragma once
/// \file
/// \brief What the `gmi_drl` subcommands share: each one's file adds its options to the CLI11 app
/// next to its handler (`add_*_command`), `cli::main` parses and runs the one that was given.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "kernels/core/error.hpp"

namespace gmi::cli {

/// Runs a parsed command; returns the exit status.  `argc`/`argv` are main's, for MPI_Init.
using Handler = std::function<int(int* argc, char*** argv)>;

/// A subcommand: the CLI11 app that is `parsed()` when it was given, and what runs it.
struct Command {
  CLI::App* app = nullptr;
  Handler run;
};

/// "expected an integer >= lo" instead of CLI11's generic range text.
CLI::Validator at_least(long long lo);

/// Run a command that needs no MPI: bad input -> one line, status 2; other failures -> status 1.
template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "gmi_drl: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi_drl: fatal: %s\n", e.what());
    return 1;
  }
}

/// Training, the command without a subcommand: its options live on the top-level app.
Handler add_train_options(CLI::App& app);

// One per subcommand, each in <name>_command.cpp; main adds them in this order (--help lists them so).
Command add_env_command(CLI::App& app);
Command add_config_command(CLI::App& app);
Command add_checkpoint_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_bench_reduce_command(CLI::App& app);
Command add_bench_env_command(CLI::App& app);
Command add_bench_channels_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);

}  // namespace gmi::cli
