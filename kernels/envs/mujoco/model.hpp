#pragma once
/// \file
/// \brief Loading a MuJoCo model (shared by a GMI's envs, read only) and making its mjData.
#include <mujoco/mujoco.h>

#include <memory>
#include <string>
#include <vector>

namespace gmi::envs::mujoco {

using ModelPtr = std::shared_ptr<const mjModel>;
struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

/// The model `xml` (e.g. "hopper.xml") from `model_path` (a directory, or the XML file itself),
/// else from $GMI_MUJOCO_ASSETS, else from the Gymnasium installation found at configure time,
/// else from one installed since (installed_gymnasium_assets()).  Throws gmi::InputError naming
/// env.model_path and where it looked, or MuJoCo's compile error.
ModelPtr load_model(const std::string& xml, const std::string& model_path);
/// Gymnasium's model folders (.../gymnasium/envs/mujoco/assets) in the places Python packages are
/// installed, most specific first: $PYTHONPATH, $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, pyenv
/// ($PYENV_ROOT or ~/.pyenv), /usr/local, Debian's /usr/lib/python3, /opt/conda.
std::vector<std::string> installed_gymnasium_assets();
DataPtr make_data(const mjModel* m);

}  // namespace gmi::envs::mujoco
