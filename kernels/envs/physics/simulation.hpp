#pragma once
/// \file
/// \brief What the MuJoCo tasks stepped on the device pipeline (kernels/physics/) share: the
/// model, each env's simulator state in (env, field) Views, one env step as Gymnasium's
/// MujocoEnv.do_simulation takes it (ctrl = action, frame_skip time steps, the contact forces
/// after them), reset noise from the counter-based generator, and the state a checkpoint keeps.
///
/// A task (ant.hpp) is a device environment for VecEnv<Env>: it holds a Simulation and its reward
/// settings as plain numbers, and reads what the host task of the same name (kernels/envs/mujoco/)
/// reads, from the device scratch instead of mjData.  Each env is one thread; a whole env step,
/// every time step and every integrator stage, runs inside VecEnv's step kernel.
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/mujoco/options.hpp"
#include "kernels/envs/vec_env.hpp"
#include "kernels/physics/batch.hpp"
#include "kernels/physics/integrator.hpp"

struct mjModel_;

namespace gmi::envs {

/// What a user sets for a device physics task: its host task's keyword arguments (env.*; those
/// that change the observation's size are refused), the model's location, the time limit.
struct PhysicsParams {
  mujoco::Kwargs kwargs;
  std::string model_path;
  int max_episode_steps = 1000;
};

struct Simulation {
  using Array = Kokkos::View<float**, MemSpace>;

  Simulation() = default;
  /// n envs of `model` (compiled by MuJoCo's C library) for the task `task` (named in errors).
  Simulation(const mjModel_* model, const std::string& task, int n, int frame_skip);

  physics::Model<float> model;
  Array qpos, qvel;     ///< (env, nq), (env, nv): the state every step starts from
  Array cfrc_ext;       ///< (env, 6 nbody): the contact forces after the last step (zero after a reset)
  View1<float> anchor;  ///< x of the point the next step's forward velocity is measured from
  Array ctrl, scratch;  ///< (env, nu) the last action; (env, layout) the pipeline's intermediates
  int frame_skip = 5;

  KOKKOS_INLINE_FUNCTION physics::EnvRef<float> env(int i) const {
    return {physics::row(qpos, i), physics::row(qvel, i), physics::row(ctrl, i), physics::row(scratch, i)};
  }

  /// ctrl <- action, frame_skip time steps, then the contact forces the step ended with.
  KOKKOS_INLINE_FUNCTION void simulate(int i, const float* action) const {
    const physics::EnvRef<float> e = env(i);
    for (int k = 0; k < model.nu; ++k) e.ctrl[k] = action[k];
    for (int s = 0; s < frame_skip; ++s) {
      if (model.constraints)
        physics::step<float, true>(model, e);
      else
        physics::step<float, false>(model, e);
    }
    physics::contact_forces(model, e, physics::row(cfrc_ext, i));
  }

  /// Gymnasium's reset noise: qpos = qpos0 + U(-s, s); qvel = U(-s, s), or s N(0, 1) with
  /// `normal_qvel`.  The draws come from the env's reset bits `r` as a key (philox blocks 0, 1, ...).
  /// Then what mj_resetData and mj_forward leave for an observation: no control and no contact
  /// forces; the bodies' poses, inertias about the centre of mass and velocities of the new state.
  KOKKOS_INLINE_FUNCTION void reset_noise(int i, const rng::Bits4& r, float s, bool normal_qvel) const {
    const physics::EnvRef<float> e = env(i);
    const std::uint64_t key = std::uint64_t(r.v[0]) | std::uint64_t(r.v[1]) << 32;
    const std::uint64_t hi = std::uint64_t(r.v[2]) | std::uint64_t(r.v[3]) << 32;
    rng::Bits4 b{};
    int used = 4, block = 0;
    auto next = [&]() {
      if (used == 4) b = rng::philox(key, block++, hi), used = 0;
      return b.v[used++];
    };
    for (int k = 0; k < model.nq; ++k) e.qpos[k] = model.qpos0(k) + rng::uniform(next(), -s, s);
    for (int k = 0; k < model.nv; k += 2) {
      float z0, z1;
      if (normal_qvel) {
        const std::uint32_t b0 = next(), b1 = next();
        rng::normal2(b0, b1, z0, z1);
        z0 *= s, z1 *= s;
      } else {
        z0 = rng::uniform(next(), -s, s);
        z1 = rng::uniform(next(), -s, s);
      }
      e.qvel[k] = z0;
      if (k + 1 < model.nv) e.qvel[k + 1] = z1;
    }
    for (int k = 0; k < model.nu; ++k) e.ctrl[k] = 0.0f;
    physics::kinematics(model, e);
    physics::com_pos(model, e);
    physics::rne_bias(model, e);
    const auto f = physics::row(cfrc_ext, i);
    for (int k = 0; k < 6 * model.nbody; ++k) f[k] = 0.0f;
  }

  /// Whether every qpos and qvel entry of env i is finite.
  KOKKOS_INLINE_FUNCTION bool finite(int i) const {
    const physics::EnvRef<float> e = env(i);
    bool ok = true;
    for (int k = 0; k < model.nq; ++k) ok = ok && math::isfinite(e.qpos[k]);
    for (int k = 0; k < model.nv; ++k) ok = ok && math::isfinite(e.qvel[k]);
    return ok;
  }

  /// Body b's position (world frame) after the last kinematics: the end of a reset, or the last
  /// integrator stage of a step, where mjData's xpos is after mj_step.
  KOKKOS_INLINE_FUNCTION float body_x(int i, int b) const {
    return physics::row(scratch, i)[model.layout.xpos + 3 * b];
  }

  /// The forward velocity of the step just taken, (x - anchor) / dt, and x becomes the anchor.
  KOKKOS_INLINE_FUNCTION float forward_velocity(int i, float x, float dt) const {
    const float v = (x - anchor(i)) / dt;
    anchor(i) = x;
    return v;
  }

  /// The mass-weighted centre of the bodies' inertial frames, x (Gymnasium's mass_center), after
  /// the last kinematics.
  KOKKOS_INLINE_FUNCTION float mass_center_x(int i) const {
    const auto xipos = physics::row(scratch, i).at(model.layout.xipos);
    float mass = 0.0f, x = 0.0f;
    for (int b = 0; b < model.nbody; ++b) {
      mass += model.body_mass(b);
      x += model.body_mass(b) * xipos[3 * b];
    }
    return x / mass;
  }

  /// Appends src[from, to) to the observation at obs[o], moving o on.
  KOKKOS_INLINE_FUNCTION static void put(float* obs, int& o, const physics::Strided<float>& src, int from, int to) {
    for (int k = from; k < to; ++k) obs[o++] = src[k];
  }
  /// The same, clipped to [lo, hi].
  KOKKOS_INLINE_FUNCTION static void put(float* obs, int& o, const physics::Strided<float>& src, int from, int to,
                                         float lo, float hi) {
    for (int k = from; k < to; ++k) obs[o++] = math::clamp(src[k], lo, hi);
  }

  /// f(name, view) for what a checkpoint keeps (the scratch is recomputed by every step).
  template <class F>
  void for_each_state(F&& f) const {
    f("qpos", qpos);
    f("qvel", qvel);
    f("cfrc_ext", cfrc_ext);
    f("anchor", anchor);
  }

  /// qpos, qvel and the anchor of every env, in double (`gmi_drl env`'s simulator state).
  std::vector<StateArray> simulator_state() const;

  /// Device memory one env of `model` takes: state, control, contact forces and the pipeline's
  /// scratch (dense constraint Jacobians for every candidate contact: ~100 KB for Humanoid); 0
  /// before Kokkos is initialised.
  static double bytes_per_env(const mjModel_* model, const std::string& task);
};

/// Observation and action sizes of the model for a task whose sizes are fixed at compile time:
/// throws gmi::InputError naming the task when the model has another shape.
void check_model_shape(const mjModel_* model, const std::string& task, int obs_dim, int expected_obs, int act_dim);

}  // namespace gmi::envs
