#pragma once
/// \file
/// \brief DeviceHumanoid-v5: Humanoid-v5 (Gymnasium `mujoco/humanoid_v5.py`, the host task in
/// kernels/envs/mujoco/humanoid.hpp) on the device pipeline: the same model, keyword arguments,
/// reward, termination and 348 observations (qpos[2:], qvel, then for every body but the world
/// its inertia about the centre of mass (cinert) and velocity (cvel), the actuator forces on the
/// joints qfrc_actuator[6:], the contact forces cfrc_ext), in float, one env per thread.
#include <string>

#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/mujoco/options.hpp"
#include "kernels/envs/physics/simulation.hpp"

namespace gmi::envs {

struct DeviceHumanoid {
  static constexpr const char* kName = "DeviceHumanoid-v5";
  static constexpr const char* kHost = "Humanoid-v5";
  static constexpr int kObsDim = 348;
  static constexpr int kActDim = 17;
  static constexpr int kNv = 23;

  using Params = PhysicsParams;
  static void check_kwargs(const mujoco::Kwargs& k);
  static EnvSpec spec(const Params& p);
  /// Threads per block of the VecEnv kernels that step it (one env per thread).
  static int threads_per_block() { return physics::threads_per_block(); }
  DeviceHumanoid(int n, const Params& p);

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    sim.reset_noise(i, r, noise, false);
    sim.anchor(i) = sim.mass_center_x(i);
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    sim.simulate(i, action);
    const float x_velocity = sim.forward_velocity(i, sim.mass_center_x(i), dt);
    const float z = physics::row(sim.qpos, i)[2];
    const bool ok = z_lo < z && z < z_hi;
    const auto f = physics::row(sim.cfrc_ext, i);
    float contact = 0.0f;
    for (int k = 0; k < 6 * sim.model.nbody; ++k) contact += f[k] * f[k];
    contact = math::clamp(contact_w * contact, c_lo, c_hi);
    float ctrl = 0.0f;
    for (int k = 0; k < kActDim; ++k) ctrl += action[k] * action[k];
    terminated = !ok && terminate;
    return (forward_w * x_velocity + (ok ? healthy : 0.0f)) - (ctrl_w * ctrl + contact);
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    const physics::Model<float>& m = sim.model;
    const physics::EnvRef<float> e = sim.env(i);
    const int nb = m.nbody;
    int o = 0;
    Simulation::put(obs, o, e.qpos, 2, m.nq);
    Simulation::put(obs, o, e.qvel, 0, m.nv);
    Simulation::put(obs, o, e.at(m.layout.cinert), 10, 10 * nb);
    Simulation::put(obs, o, e.at(m.layout.cvel), 6, 6 * nb);
    // the actuators' joint forces of the last step (motors, without position or velocity bias:
    // the integrator stage they were computed at does not matter)
    float qa[kNv];
    for (int k = 0; k < kNv; ++k) qa[k] = 0.0f;
    const bool usable = physics::controls_usable(m, e);
    for (int u = 0; u < m.nu && m.actuation; ++u)
      qa[m.act_dof(u)] +=
          m.act_gear(u) * physics::actuator_force(m, e, u, usable ? physics::clamped_control(m, e, u) : 0.0f);
    for (int k = 6; k < kNv; ++k) obs[o++] = qa[k];
    Simulation::put(obs, o, physics::row(sim.cfrc_ext, i), 6, 6 * nb);
  }

  template <class F>
  void for_each_state(F&& f) const {
    sim.for_each_state(f);
  }
  std::vector<StateArray> simulator_state() const { return sim.simulator_state(); }

  Simulation sim;
  float dt = 0.015f;
  float forward_w = 1.25f, ctrl_w = 0.1f, contact_w = 5e-7f, healthy = 5;
  float c_lo = -1e30f, c_hi = 10, z_lo = 1, z_hi = 2, noise = 1e-2f;
  bool terminate = true;
};

}  // namespace gmi::envs
