// gmi_drl checkpoint inspect | verify
#include <memory>
#include <string>

#include "src/cli/commands.hpp"
#include "src/tools/checkpoint_tool.hpp"

namespace gmi::cli {

Command add_checkpoint_command(CLI::App& app) {
  auto* ckpt = app.add_subcommand("checkpoint", "checkpoint tools");
  ckpt->require_subcommand(1);
  auto ckpt_file = std::make_shared<std::string>();
  auto* ckpt_inspect = ckpt->add_subcommand("inspect", "summary: version, layout, counters, tensor shapes");
  ckpt_inspect->add_option("file", *ckpt_file, "checkpoint (HDF5)")->required();
  auto* ckpt_verify = ckpt->add_subcommand(
      "verify", "read everything, check checksums and shapes; exit status 0 if valid, 2 if not");
  ckpt_verify->add_option("file", *ckpt_file, "checkpoint (HDF5)")->required();
  return {ckpt, [ckpt_inspect, ckpt_file](int*, char***) {
            if (ckpt_inspect->parsed()) return guarded([&] { tools::inspect_checkpoint(*ckpt_file); });
            return guarded([&] { tools::verify_checkpoint(*ckpt_file); });
          }};
}

}  // namespace gmi::cli
