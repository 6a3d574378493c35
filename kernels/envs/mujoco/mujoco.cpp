// The MuJoCo environments (built with MuJoCo): models, noise, keyword arguments.  Their registry
// lines are in kernels/envs/registry.cpp.
#include <fmt/format.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

#include "kernels/core/error.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/mujoco/task.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/envs/mujoco/mujoco_vec_env.hpp"

namespace gmi::envs::mujoco {

namespace {
/// MuJoCo's warnings (a deprecated model attribute, an unstable simulation) once per process each,
/// on stderr, instead of once per model compiled or per step.
void warn_once(const char* msg) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(msg).second) std::fprintf(stderr, "MuJoCo warning: %s\n", msg);
}
struct InstallWarningHandler {
  InstallWarningHandler() { mju_user_warning = warn_once; }
} install_warning_handler;
}  // namespace

// ---- noise ------------------------------------------------------------------------------------

std::uint32_t Noise::next() {
  if (used_ == 4) {
    const rng::Bits4 b = rng::philox_host(seed_, (episode_ << 8) | std::uint64_t(block_++),
                                          rng::tag(rng::kPhysicsReset, env_));
    for (int k = 0; k < 4; ++k) bits_[k] = b.v[k];
    used_ = 0;
  }
  return bits_[used_++];
}

double Noise::uniform(double lo, double hi) {
  const std::uint64_t hi27 = next() >> 5, lo26 = next() >> 6;  // 53 bits
  const double u = double((hi27 << 26) | lo26) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

double Noise::normal() {
  double u1 = uniform(0.0, 1.0);
  while (u1 <= 0.0) u1 = uniform(0.0, 1.0);
  const double u2 = uniform(0.0, 1.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// ---- results to the device -------------------------------------------------------------------

void spread_results(const ExecSpace& space, const ResultBlock& block, const void* mirror, const StepOutputs& out) {
  const StepOutputs in = block.at(const_cast<void*>(mirror));
  const std::int64_t od = block.obs_dim;
  float *obs = out.next_obs, *fin = out.final_obs, *rew = out.reward;
  std::uint8_t *term = out.terminated, *trunc = out.truncated;
  Kokkos::parallel_for(
      "gmi::envs::mujoco::spread_results", Range64(space, 0, std::int64_t(block.n) * od), KOKKOS_LAMBDA(const std::int64_t k) {
        obs[k] = in.next_obs[k];
        fin[k] = in.final_obs[k];
        if (k % od == 0) {
          const std::int64_t i = k / od;
          rew[i] = in.reward[i];
          term[i] = in.terminated[i];
          trunc[i] = in.truncated[i];
        }
      });
}

// ---- keyword arguments ------------------------------------------------------------------------

void KwargReader::done() const {
  k_.for_each([&](const char* name, bool set) {
    if (!set) return;
    for (const char* a : taken_)
      if (std::string(a) == name) return;
    std::string list;
    for (const char* a : taken_) list += (list.empty() ? "" : ", ") + std::string(a);
    throw InputError(fmt::format("env.{}: {} has no such setting (it takes {})", name, env_,
                                 list.empty() ? "none of the MuJoCo environments' keyword arguments" : list));
  });
}

// ---- models -----------------------------------------------------------------------------------

namespace {
bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

std::vector<std::string> installed_gymnasium_assets() {
  // Where pip, a virtual environment, conda, pyenv or Debian put Python packages, most specific
  // first; each pattern ends in Gymnasium's model folder.
  const std::string tail = "/gymnasium/envs/mujoco/assets";
  std::vector<std::string> patterns;
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  std::string pythonpath = env("PYTHONPATH");
  for (std::size_t b = 0; !pythonpath.empty() && b <= pythonpath.size();) {
    const std::size_t e = std::min(pythonpath.find(':', b), pythonpath.size());
    if (e > b) patterns.push_back(pythonpath.substr(b, e - b) + tail);
    b = e + 1;
  }
  for (const char* prefix : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (!env(prefix).empty()) patterns.push_back(env(prefix) + "/lib/python3*/site-packages" + tail);
  const std::string home = env("HOME");
  if (!home.empty()) patterns.push_back(home + "/.local/lib/python3*/site-packages" + tail);
  const std::string pyenv = !env("PYENV_ROOT").empty() ? env("PYENV_ROOT") : home.empty() ? "" : home + "/.pyenv";
  if (!pyenv.empty()) patterns.push_back(pyenv + "/versions/*/lib/python3*/site-packages" + tail);
  for (const char* p : {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                        "/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages",
                        "/opt/conda/lib/python3*/site-packages"})
    patterns.push_back(p + tail);
  std::vector<std::string> found;
  for (const std::string& pattern : patterns) {
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i)
        if (is_dir(g.gl_pathv[i]) && std::find(found.begin(), found.end(), g.gl_pathv[i]) == found.end())
          found.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return found;
}

ModelPtr load_model(const std::string& xml, const std::string& model_path) {
  std::string path, looked;
  if (!model_path.empty()) {
    path = is_dir(model_path) ? model_path + "/" + xml : model_path;
    if (!is_file(path))
      throw InputError(fmt::format("env.model_path: {} is not a model file (or a directory holding {})", model_path, xml));
  } else {
    std::vector<std::string> dirs;
    if (const char* e = std::getenv("GMI_MUJOCO_ASSETS")) dirs.push_back(e);
#if defined(GMI_MUJOCO_ASSETS_DIR)
    if (*GMI_MUJOCO_ASSETS_DIR) dirs.push_back(GMI_MUJOCO_ASSETS_DIR);
#endif
    for (const auto& d : dirs) {
      looked += (looked.empty() ? "" : ", ") + d;
      if (path.empty() && is_file(d + "/" + xml)) path = d + "/" + xml;
    }
    // A Gymnasium installed after the build was configured (or moved): found where Python keeps it.
    if (path.empty())
      for (const auto& d : installed_gymnasium_assets())
        if (is_file(d + "/" + xml)) {
          path = d + "/" + xml;
          break;
        }
    if (path.empty())
      throw InputError(fmt::format(
          "env.model_path: cannot find {} ({}no Gymnasium installation in the usual Python package folders); "
          "install Gymnasium (`python3 -m pip install gymnasium`, as cmake/deps-debian.sh does), or set "
          "env.model_path or GMI_MUJOCO_ASSETS to a folder holding it",
          xml, looked.empty() ? "" : "looked in " + looked + ", and "));
  }
  char error[1000] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
  if (!m) throw InputError(fmt::format("{}: MuJoCo cannot load the model: {}", path, error));
  return ModelPtr(m, [](const mjModel* p) { mj_deleteModel(const_cast<mjModel*>(p)); });
}

DataPtr make_data(const mjModel* m) {
  mjData* d = mj_makeData(m);
  if (!d) throw Error("MuJoCo: mj_makeData failed (out of memory?)");
  return DataPtr(d);
}

}  // namespace gmi::envs::mujoco
