// Training (no subcommand): gmi_drl --config FILE [--set k=v]... [--run-dir DIR] [--seed N]
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "src/cli/commands.hpp"
#include "src/config/config.hpp"
#include "src/runtime/train.hpp"

namespace gmi::cli {
namespace {

struct TrainArgs {
  runtime::TrainOptions train;
  std::vector<std::string> sets;
  std::string run_dir;
  std::int64_t seed = -1;
};

int run_train(TrainArgs& a, int* argc, char*** argv) {
  runtime::TrainOptions& train = a.train;
  if (train.config_paths.empty() && train.resume.empty()) {
    std::fprintf(stderr, "gmi_drl: error: --config is required to train, or --resume to continue a run (see gmi_drl --help)\n");
    return 2;
  }
  const int st = guarded([&] {
    train.overrides = config::parse_overrides(a.sets);
    if (a.seed >= 0) train.overrides.emplace_back("train.seed", std::to_string(a.seed));
    if (!a.run_dir.empty()) train.overrides.emplace_back("train.run_dir", config::yaml_quote(a.run_dir));
  });
  if (st != 0) return st;
  return runtime::run_training(train, argc, argv);
}

}  // namespace

Handler add_train_options(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  runtime::TrainOptions& train = a->train;
  app.add_option("--config", train.config_paths,
                 "training configuration (YAML); repeat it to lay files on top of each other: "
                 "--config base.yaml --config tuned.yaml (a later file's keys win)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingFile);
  app.add_option("--set", a->sets, "override a config key: --set ppo.gamma=0.995 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--run-dir", a->run_dir, "output directory (default: runs/<config>-<time>)");
  app.add_option("--seed", a->seed, "seed of the run (overrides train.seed)")->check(at_least(0));
  app.add_option("--resume", train.resume,
                 "continue from a checkpoint: 'latest' (newest valid one in the run directory) or a FILE; "
                 "without --config the checkpoint's config is used");
  app.add_option("--log-level", train.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  return [a](int* argc, char*** argv) { return run_train(*a, argc, argv); };
}

}  // namespace gmi::cli
