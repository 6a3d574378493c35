// The device physics tasks' shared host code (kernels/envs/physics/simulation.hpp).
#include "kernels/envs/physics/simulation.hpp"

#include <mujoco/mujoco.h>

#include "kernels/core/error.hpp"

namespace gmi::envs {

Simulation::Simulation(const mjModel_* m, const std::string& task, int n, int skip)
    : model(physics::from_mujoco<float>(m, task)), frame_skip(skip) {
  const std::string p = "gmi::envs::" + task + "::";
  qpos = Array(p + "qpos", n, model.nq);
  qvel = Array(p + "qvel", n, model.nv);
  cfrc_ext = Array(p + "cfrc_ext", n, 6 * model.nbody);
  anchor = View1<float>(p + "anchor", n);
  ctrl = Array(p + "ctrl", n, model.nu);
  scratch = Array(p + "scratch", n, model.layout.size);
}

double Simulation::bytes_per_env(const mjModel_* m, const std::string& task) {
  // the device model gives the scratch's layout; before Kokkos starts (a config checked at start-up)
  // there is none to make, and nothing asks for the memory then
  if (!Kokkos::is_initialized()) return 0;
  const physics::Model<float> d = physics::from_mujoco<float>(m, task);
  return 4.0 * (d.nq + d.nv + d.nu + 6 * d.nbody + 1 + d.layout.size);
}

std::vector<StateArray> Simulation::simulator_state() const {
  const ExecSpace space;
  auto in_double = [&](const char* name, const auto& view) {
    StateArray a = save_state_array(space, name, view, false);
    const auto& f = std::get<std::vector<float>>(a.values);
    a.values = std::vector<double>(f.begin(), f.end());
    return a;
  };
  return {in_double("qpos", qpos), in_double("qvel", qvel), in_double("anchor", anchor)};
}

void check_model_shape(const mjModel_* m, const std::string& task, int obs_dim, int expected_obs, int act_dim) {
  if (obs_dim != expected_obs || m->nu != act_dim)
    throw InputError(task + ": the model has " + std::to_string(obs_dim) + " observations and " +
                     std::to_string(m->nu) + " actuators; this device task is compiled for " +
                     std::to_string(expected_obs) + " and " + std::to_string(act_dim) +
                     " (env.model_path names another model)");
}

}  // namespace gmi::envs
