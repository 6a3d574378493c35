// gmi_drl export
#include <memory>

#include "src/cli/commands.hpp"
#include "src/runtime/logging.hpp"
#include "src/tools/export.hpp"

namespace gmi::cli {

Command add_export_command(CLI::App& app) {
  auto ex = std::make_shared<tools::ExportOptions>();
  auto* ex_cmd = app.add_subcommand("export", "write a checkpoint's actor (observation normalisation included) as ONNX");
  ex_cmd->add_option("--checkpoint", ex->checkpoint, "checkpoint (HDF5) of a training run")->required();
  ex_cmd->add_option("--onnx", ex->onnx, "the ONNX file to write")->required();
  ex_cmd->add_option("--opset", ex->opset, "ONNX opset version")->check(CLI::Range(13, 21));
  return {ex_cmd, [ex](int*, char***) {
            runtime::setup_logging(0);
            return guarded([&] { tools::run_export(*ex); });
          }};
}

}  // namespace gmi::cli
