#pragma once
/// \file
/// \brief `gmi_drl export`: a checkpoint's actor as an ONNX model, observation normalisation
/// included, for serving outside gmi_drl.
///
/// The model: input `obs` float [batch, obs_dim] (raw observations); outputs `action` (discrete:
/// int64 [batch], the argmax of the logits; continuous: float [batch, act_dim], the Gaussian's
/// mean) and, for discrete actions, `logits`, for continuous ones `env_action` (the mean clipped to
/// the action space, as gmi_drl steps the environment with ppo.clip_actions).  `action` is what
/// `gmi_drl eval --deterministic` chooses.
#include <string>

namespace gmi::tools {

struct ExportOptions {
  std::string checkpoint;
  std::string onnx;
  int opset = 13;
};

/// Throws gmi::InputError for a bad checkpoint or a build without ONNX.
void run_export(const ExportOptions& o);

namespace detail {
/// Writes the ONNX model (export_onnx.cpp, built when ONNX is found).
void write_onnx(const ExportOptions& o);
}  // namespace detail

}  // namespace gmi::tools
