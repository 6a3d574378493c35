#pragma once
/// \file
/// \brief DeviceAnt-v5: Ant-v5 (Gymnasium `mujoco/ant_v5.py`, the host task in
/// kernels/envs/mujoco/ant.hpp) on the device pipeline: the same model, keyword arguments,
/// reward, termination and 105 observations (qpos[2:], qvel, the clipped contact forces of every
/// body but the world), in float, one env per thread.
#include <string>

#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/mujoco/options.hpp"
#include "kernels/envs/physics/simulation.hpp"

namespace gmi::envs {

struct DeviceAnt {
  static constexpr const char* kName = "DeviceAnt-v5";
  static constexpr const char* kHost = "Ant-v5";  ///< the host task whose model and settings it takes
  static constexpr int kObsDim = 105;
  static constexpr int kActDim = 8;
  static constexpr int kMainBody = 1;  ///< the torso: its x is the forward reward's anchor

  using Params = PhysicsParams;
  /// Throws gmi::InputError naming env.<key> for a keyword argument this task does not take.
  static void check_kwargs(const mujoco::Kwargs& k);
  static EnvSpec spec(const Params& p);
  /// Threads per block of the VecEnv kernels that step it (one env per thread).
  static int threads_per_block() { return physics::threads_per_block(); }
  DeviceAnt(int n, const Params& p);

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    sim.reset_noise(i, r, noise, true);
    sim.anchor(i) = sim.body_x(i, kMainBody);
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    sim.simulate(i, action);
    const float x_velocity = sim.forward_velocity(i, sim.body_x(i, kMainBody), dt);
    const float z = physics::row(sim.qpos, i)[2];
    const bool ok = z_lo <= z && z <= z_hi && sim.finite(i);
    const auto f = physics::row(sim.cfrc_ext, i);
    float contact = 0.0f;
    for (int k = 0; k < 6 * sim.model.nbody; ++k) {
      const float c = math::clamp(f[k], f_lo, f_hi);
      contact += c * c;
    }
    float ctrl = 0.0f;
    for (int k = 0; k < kActDim; ++k) ctrl += action[k] * action[k];
    terminated = !ok && terminate;
    return (forward_w * x_velocity + (ok ? healthy : 0.0f)) - (ctrl_w * ctrl + contact_w * contact);
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    const auto q = physics::row(sim.qpos, i), v = physics::row(sim.qvel, i), f = physics::row(sim.cfrc_ext, i);
    int o = 0;
    Simulation::put(obs, o, q, 2, sim.model.nq);
    Simulation::put(obs, o, v, 0, sim.model.nv);
    Simulation::put(obs, o, f, 6, 6 * sim.model.nbody, f_lo, f_hi);
  }

  template <class F>
  void for_each_state(F&& f) const {
    sim.for_each_state(f);
  }
  std::vector<StateArray> simulator_state() const { return sim.simulator_state(); }

  Simulation sim;
  float dt = 0.05f;  ///< timestep x frame_skip
  float forward_w = 1, ctrl_w = 0.5f, contact_w = 5e-4f, healthy = 1;
  float z_lo = 0.2f, z_hi = 1.0f, f_lo = -1, f_hi = 1, noise = 0.1f;
  bool terminate = true;
};

}  // namespace gmi::envs
