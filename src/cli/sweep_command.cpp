// gmi_drl sweep
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "src/cli/commands.hpp"
#include "src/config/config.hpp"
#include "src/runtime/sweep.hpp"

namespace gmi::cli {
namespace {

struct SweepArgs {
  sweeps::SweepOptions sweep;
  std::string seeds, space, dir;
  std::vector<std::string> grid;
  int random = -1, per_gpu = -1, retries = -1;
};

int run(SweepArgs& a, int* argc, char*** argv) {
  sweeps::SweepOptions& o = a.sweep;
  const bool changes_runs = !a.seeds.empty() || !a.grid.empty() || a.random >= 0 || !a.space.empty() ||
                            !o.config_paths.empty() || !o.sets.empty();
  if (!o.resume.empty() && changes_runs) {
    std::fprintf(stderr, "gmi_drl: error: --resume %s continues that sweep's runs: --config, --set, --seeds, --grid, "
                         "--random and --space cannot change them (start a new sweep for that)\n", o.resume.c_str());
    return 2;
  }
  if (o.resume.empty() && o.config_paths.empty()) {
    std::fprintf(stderr, "gmi_drl: error: sweep: --config is required, or --resume DIR to continue a sweep (see gmi_drl sweep --help)\n");
    return 2;
  }
  if (!a.seeds.empty()) o.sweep.push_back("sweep.seeds=" + config::yaml_quote(a.seeds));
  if (!a.grid.empty()) {
    std::string list = "[";
    for (std::size_t i = 0; i < a.grid.size(); ++i) list += (i ? ", " : "") + config::yaml_quote(a.grid[i]);
    o.sweep.push_back("sweep.grid=" + list + "]");
  }
  if (a.random >= 0) o.sweep.push_back("sweep.random=" + std::to_string(a.random));
  if (!a.space.empty()) o.sweep.push_back("sweep.space=" + config::yaml_quote(a.space));
  if (a.per_gpu >= 0) o.sweep.push_back("sweep.per_gpu=" + std::to_string(a.per_gpu));
  if (a.retries >= 0) o.sweep.push_back("sweep.retries=" + std::to_string(a.retries));
  if (!a.dir.empty()) o.sweep.push_back("sweep.dir=" + config::yaml_quote(a.dir));
  return sweeps::run_sweep(o, argc, argv);
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand(
      "sweep", "many independent runs (seeds, a grid, random draws) side by side on GMIs; DIR/sweep.csv lists them");
  cmd->add_option("--config", a->sweep.config_paths, "configuration of every run (YAML; repeatable, later files on top)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sweep.sets, "override a config key in every run (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--seeds", a->seeds, "seeds of every configuration: a..b or a,b,c (sweep.seeds)");
  cmd->add_option("--grid", a->grid, "a grid axis key=v1,v2,... (repeatable: every combination; sweep.grid)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--random", a->random, "configurations drawn from --space (sweep.random)")->check(at_least(0));
  cmd->add_option("--space", a->space, "YAML file of the distributions --random draws from (sweep.space)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--per-gpu", a->per_gpu, "runs side by side per GPU when the sweep starts its own GMIs (sweep.per_gpu)")
      ->check(at_least(0));
  cmd->add_option("--retries", a->retries, "restarts of a killed or timed-out run (sweep.retries)")->check(at_least(0));
  cmd->add_option("--sweep-dir", a->dir, "the sweep's directory (sweep.dir; default sweeps/<config>-<time>)");
  cmd->add_option("--resume", a->sweep.resume, "continue the sweep in DIR: runs not done yet, cut-off ones from their newest checkpoint")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--log-level", a->sweep.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  return {cmd, [a](int* argc, char*** argv) { return run(*a, argc, argv); }};
}

}  // namespace gmi::cli
