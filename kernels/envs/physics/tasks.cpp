// The device physics tasks' host side (kernels/envs/physics/): their keyword arguments, specs and
// models, read as the host task of the same model reads them.
#include <mujoco/mujoco.h>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/ant.hpp"
#include "kernels/envs/mujoco/humanoid.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/envs/mujoco/mujoco_vec_env.hpp"
#include "kernels/envs/physics/ant.hpp"
#include "kernels/envs/physics/humanoid.hpp"

namespace gmi::envs {

namespace {
/// Refuses a keyword argument that would change the observation's size, fixed at compile time.
void refuse_shape(const std::optional<bool>& v, bool fixed, const char* key, const char* task) {
  if (v && *v != fixed)
    throw InputError(std::string("env.") + key + ": " + task + " observes what the default (" +
                     (fixed ? "true" : "false") + ") gives, its size fixed at compile time; use the host task for " +
                     "other observations");
}

/// The model of the device task Env, checked to have the shape Env is compiled for, and its host
/// task's parameters from the keyword arguments.
template <class Env, class Host>
mujoco::ModelPtr device_model(const typename Env::Params& p, typename Host::Params* host) {
  Env::check_kwargs(p.kwargs);
  *host = Host::params(p.kwargs, Env::kName);
  mujoco::ModelPtr m = mujoco::load_model(Host::kXml, p.model_path);
  check_model_shape(m.get(), Env::kName, Host(*host).obs_dim(m.get()), Env::kObsDim, Env::kActDim);
  return m;
}

/// The settings every device task takes alike from its host task's parameters: the env step's
/// duration, the reward weights, the healthy height range, the reset noise, termination.
template <class Env, class HostParams>
void take_settings(Env& env, const mjModel* m, const HostParams& p) {
  env.dt = float(m->opt.timestep * p.frame_skip);
  env.forward_w = float(p.forward_reward_weight), env.ctrl_w = float(p.ctrl_cost_weight);
  env.contact_w = float(p.contact_cost_weight), env.healthy = float(p.healthy_reward);
  env.z_lo = float(p.healthy_z_range[0]), env.z_hi = float(p.healthy_z_range[1]);
  env.noise = float(p.reset_noise_scale);
  env.terminate = p.terminate_when_unhealthy;
}

/// Env's spec: its host task's, from the same model, under Env's name.
template <class Env, class Host>
EnvSpec device_spec(const typename Env::Params& p) {
  typename Host::Params hp;
  const mujoco::ModelPtr m = device_model<Env, Host>(p, &hp);
  EnvSpec s = mujoco::MujocoVecEnv<Host>::spec_of(Host(hp), m.get(), p.max_episode_steps);
  s.name = Env::kName;
  s.reward_terms.clear();    // VecEnv keeps the return only
  s.host_bytes_per_env = 0;  // a device environment: nothing on the host (graphs capture its rollout)
  s.device_bytes_per_env = Simulation::bytes_per_env(m.get(), Env::kName);
  return s;
}
}  // namespace

void DeviceAnt::check_kwargs(const mujoco::Kwargs& k) {
  mujoco::Ant::params(k, kName);
  refuse_shape(k.exclude_current_positions_from_observation, true, "exclude_current_positions_from_observation", kName);
  refuse_shape(k.include_cfrc_ext_in_observation, true, "include_cfrc_ext_in_observation", kName);
}

EnvSpec DeviceAnt::spec(const Params& p) { return device_spec<DeviceAnt, mujoco::Ant>(p); }

DeviceAnt::DeviceAnt(int n, const Params& params) {
  mujoco::Ant::Params p;
  const mujoco::ModelPtr m = device_model<DeviceAnt, mujoco::Ant>(params, &p);
  sim = Simulation(m.get(), kName, n, p.frame_skip);
  take_settings(*this, m.get(), p);
  f_lo = float(p.contact_force_range[0]), f_hi = float(p.contact_force_range[1]);
}

void DeviceHumanoid::check_kwargs(const mujoco::Kwargs& k) {
  mujoco::Humanoid::params(k, kName);
  refuse_shape(k.exclude_current_positions_from_observation, true, "exclude_current_positions_from_observation", kName);
  refuse_shape(k.include_cinert_in_observation, true, "include_cinert_in_observation", kName);
  refuse_shape(k.include_cvel_in_observation, true, "include_cvel_in_observation", kName);
  refuse_shape(k.include_qfrc_actuator_in_observation, true, "include_qfrc_actuator_in_observation", kName);
  refuse_shape(k.include_cfrc_ext_in_observation, true, "include_cfrc_ext_in_observation", kName);
}

EnvSpec DeviceHumanoid::spec(const Params& p) { return device_spec<DeviceHumanoid, mujoco::Humanoid>(p); }

DeviceHumanoid::DeviceHumanoid(int n, const Params& params) {
  mujoco::Humanoid::Params p;
  const mujoco::ModelPtr m = device_model<DeviceHumanoid, mujoco::Humanoid>(params, &p);
  if (m->nv != kNv)
    throw InputError(std::string(kName) + ": the model has " + std::to_string(m->nv) +
                     " dofs; this device task is compiled for 23 (env.model_path names another model)");
  for (int u = 0; u < m->nu; ++u)  // the observed actuator forces are computed without state
    if (m->actuator_biasprm[mjNBIAS * u + 1] != 0 || m->actuator_biasprm[mjNBIAS * u + 2] != 0)
      throw InputError(std::string(kName) + ": actuator " + std::to_string(u) +
                       " of the model has a position or velocity bias; this task observes motors' forces only "
                       "(env.model_path names another model)");
  sim = Simulation(m.get(), kName, n, p.frame_skip);
  take_settings(*this, m.get(), p);
  c_lo = float(p.contact_cost_range[0]), c_hi = float(p.contact_cost_range[1]);
}

}  // namespace gmi::envs
