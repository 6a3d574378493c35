// The MuJoCo environments in a build without MuJoCo: their names exist (so a config naming one
// gets this explanation, not "unknown environment"), everything else says how to get them.
#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/envs.hpp"

namespace gmi::envs::mujoco {
namespace {
[[noreturn]] void unavailable(const std::string& name) {
  throw InputError(name + ": this gmi_drl was built without MuJoCo (pip install mujoco gymnasium, or set "
                          "MUJOCO_ROOT, then configure again)");
}
}  // namespace

bool available() { return false; }

std::vector<std::string> names() {
  return {"Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "InvertedPendulum-v5", "Swimmer-v5"};
}

bool is_mujoco(const std::string& name) {
  for (const auto& n : names())
    if (n == name) return true;
  return false;
}

EnvSpec spec(const std::string& name, const EnvOverrides&) { unavailable(name); }

void check_kwargs_for(const std::string& name, const Kwargs& k) {
  k.for_each([&](const char* key, bool set) {
    if (set && !is_mujoco(name)) throw InputError(std::string("env.") + key + ": " + name + " has no such setting");
  });
}

std::unique_ptr<VecEnvBase> make(const std::string& name, int, std::uint64_t, std::uint64_t, const EnvOverrides&) {
  unavailable(name);
}

}  // namespace gmi::envs::mujoco
