// gmi_drl config reference | show
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "src/cli/commands.hpp"
#include "src/config/config.hpp"

namespace gmi::cli {
namespace {

struct ShowArgs {
  std::string path;
  std::vector<std::string> sets;
};

}  // namespace

Command add_config_command(CLI::App& app) {
  auto* cfg = app.add_subcommand("config", "configuration tools");
  cfg->require_subcommand(1);
  auto* cfg_ref = cfg->add_subcommand("reference", "print every config key as a Markdown table");
  auto* cfg_show = cfg->add_subcommand("show", "validate a config and print it fully resolved");
  auto show = std::make_shared<ShowArgs>();
  cfg_show->add_option("--config", show->path, "configuration (YAML)")->required()->check(CLI::ExistingFile);
  cfg_show->add_option("--set", show->sets, "override a config key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return {cfg, [cfg_ref, show](int*, char***) {
            if (cfg_ref->parsed()) {
              std::cout << config::reference_markdown();
              return 0;
            }
            return guarded(
                [&] { std::cout << config::to_yaml(config::load(show->path, config::parse_overrides(show->sets))); });
          }};
}

}  // namespace gmi::cli
