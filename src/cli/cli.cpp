#include "src/cli/cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <vector>

#include "gmi_version.hpp"
#include "src/cli/commands.hpp"
#include "src/config/integer.hpp"

namespace gmi::cli {

CLI::Validator at_least(long long lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        const auto v = config::parse_integer(s);
        if (v && *v >= lo) return {};
        return "expected an integer >= " + std::to_string(lo) + ", got '" + s + "'";
      },
      "INT>=" + std::to_string(lo));
}

int main(int argc, char** argv) {
  CLI::App app{"gmi_drl " GMI_DRL_VERSION
               " - deep reinforcement learning on GPU multiplexing instances (GMIs)",
               "gmi_drl"};
  app.set_version_flag("--version", GMI_DRL_VERSION);
  app.require_subcommand(0, 1);

  const Handler train = add_train_options(app);
  const std::vector<Command> commands = {
      add_env_command(app),   add_config_command(app), add_checkpoint_command(app),
      add_bench_command(app), add_bench_reduce_command(app), add_bench_env_command(app),
      add_bench_channels_command(app), add_eval_command(app), add_export_command(app),
      add_tune_command(app), add_sweep_command(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "gmi_drl: error: %s (see gmi_drl --help)\n", e.what());
    return 2;
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run(&argc, &argv);
  return train(&argc, &argv);
}

}  // namespace gmi::cli
