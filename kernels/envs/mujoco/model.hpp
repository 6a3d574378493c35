#pragma once
/// \file
/// \brief Loading a MuJoCo model (shared by a GMI's envs, read only) and making its mjData.
#include <mujoco/mujoco.h>

#include <memory>
#include <string>

namespace gmi::envs::mujoco {

using ModelPtr = std::shared_ptr<const mjModel>;
struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

/// The model `xml` (e.g. "hopper.xml") from `model_path` (a directory, or the XML file itself),
/// else from $GMI_MUJOCO_ASSETS, else from the Gymnasium installation found at configure time.
/// Throws gmi::InputError naming env.model_path and where it looked, or MuJoCo's compile error.
ModelPtr load_model(const std::string& xml, const std::string& model_path);
DataPtr make_data(const mjModel* m);

}  // namespace gmi::envs::mujoco
