#pragma once
/// \file
/// \brief One time step of one env: MuJoCo's semi-implicit Euler (velocity first, then positions
/// with the new velocity; joint damping implicit) or its 4-stage Runge-Kutta, whose stages each
/// run the whole forward dynamics.
#include "kernels/physics/solver.hpp"

namespace gmi::physics {

/// qpos <- qpos0 (+) vel dt: slide and hinge coordinates add, a free joint's position adds and its
/// quaternion turns by the body-frame angular velocity.
template <class T>
KOKKOS_INLINE_FUNCTION void integrate_pos(const Model<T>& m, const Strided<T>& qpos, const Strided<T>& qpos0,
                                          const Strided<T>& vel, T dt) {
  for (int j = 0; j < m.njnt; ++j) {
    const int a = m.jnt_qposadr(j), v = m.jnt_dofadr(j);
    if (m.jnt_type(j) == kFree) {
      for (int k = 0; k < 3; ++k) qpos[a + k] = qpos0[a + k] + dt * vel[v + k];
      store_quat(qpos, a + 3, integrate(load_quat(qpos0, a + 3), load3(vel.at(v + 3), 0), dt));
    } else {
      qpos[a] = qpos0[a] + dt * vel[v];
    }
  }
}

/// Whether every one of x[0, n) is finite and within 1e10 in magnitude (MuJoCo's mju_isBad).
template <class T>
KOKKOS_INLINE_FUNCTION bool usable(const Strided<T>& x, int n) {
  for (int k = 0; k < n; ++k)
    if (!(math::fabs(x[k]) <= T(1e10))) return false;
  return true;
}

/// mj_resetData as far as a step reads it: qpos0, no velocity, no control.
template <class T>
KOKKOS_INLINE_FUNCTION void reset_state(const Model<T>& m, const EnvRef<T>& e) {
  for (int k = 0; k < m.nq; ++k) e.qpos[k] = m.qpos0(k);
  for (int k = 0; k < m.nv; ++k) e.qvel[k] = T(0);
  for (int k = 0; k < m.nu; ++k) e.ctrl[k] = T(0);
}

/// The forward dynamics; with `check` (the start of mj_step) and the model's automatic reset on, a
/// bad position or velocity resets the state first (mj_checkPos, mj_checkVel), and a bad
/// acceleration resets it and runs the dynamics again (mj_checkAcc).  One call site of forward(),
/// so that a step kernel holds the dynamics once per integrator.
template <class T, bool kConstraints>
KOKKOS_INLINE_FUNCTION void checked_forward(const Model<T>& m, const EnvRef<T>& e, bool check) {
  const bool reset = check && m.autoreset;
  if (reset && (!usable(e.qpos, m.nq) || !usable(e.qvel, m.nv))) reset_state(m, e);
  for (int pass = 0;; ++pass) {
    forward<T, kConstraints>(m, e);
    if (!reset || pass > 0 || usable(e.at(m.layout.qacc), m.nv)) return;
    reset_state(m, e);
  }
}

template <class T, bool kConstraints>
KOKKOS_INLINE_FUNCTION void euler_step(const Model<T>& m, const EnvRef<T>& e) {
  const T h = m.timestep;
  checked_forward<T, kConstraints>(m, e, true);
  const auto qacc = e.at(m.layout.qacc);
  if (m.implicit_damping) {  // (M + h D) qacc = qfrc_smooth + qfrc_constraint
    const auto qfrc = e.at(m.layout.qfrc), fc = e.at(m.layout.qfrc_constraint);
    for (int i = 0; i < m.nv; ++i) qacc[i] = qfrc[i] + fc[i];
    factor(m, e, h);
    solve(m, e, qacc);
  }
  for (int i = 0; i < m.nv; ++i) e.qvel[i] += h * qacc[i];
  integrate_pos(m, e.qpos, e.qpos, e.qvel, h);
}

/// The inverse of the exponential map's differential, applied to w at u (rotation vectors):
/// w + u x w / 2 + (1 - (|u|/2) cot(|u|/2)) / |u|^2  u x (u x w).
template <class T>
KOKKOS_INLINE_FUNCTION Vec3<T> dexp_inv(const Vec3<T>& u, const Vec3<T>& w) {
  const T t2 = dot(u, u);
  T coef;
  if (t2 < T(1e-2)) {  // series: 1/12 + t^2/720 + t^4/30240, error below t^6/1.2e6
    coef = T(1) / 12 + t2 / 720 + t2 * t2 / 30240;
  } else {
    const T t = math::sqrt(t2), x = t / 2;
    coef = (T(1) - x * math::cos(x) / math::sin(x)) / t2;
  }
  const Vec3<T> uw = cross(u, w);
  return w + T(0.5) * uw + coef * cross(u, uw);
}

/// Classic 4-stage Runge-Kutta (stages at 0, h/2, h/2, h; weights 1/6, 1/3, 1/3, 1/6) on the
/// configuration manifold, as MuJoCo 4 integrates: a free joint's orientation moves by the
/// exponential map, and each stage's body angular velocity w_s becomes the rate of the stage's
/// rotation vector u_s = c_s h k_{s-1} through k_s = dexp_inv(u_s, w_s) (Runge-Kutta-Munthe-Kaas),
/// which keeps the method 4th order where stage velocities in different frames do not commute.
template <class T, bool kConstraints>
KOKKOS_INLINE_FUNCTION void rk4_step(const Model<T>& m, const EnvRef<T>& e) {
  const Layout& L = m.layout;
  const T h = m.timestep;
  const auto q0 = e.at(L.qpos0), v0 = e.at(L.qvel0), vs = e.at(L.vel_sum), as = e.at(L.acc_sum), k = e.at(L.stage_rate),
             qacc = e.at(L.qacc);
  const T c[4] = {T(0), h / 2, h / 2, h};
  const T w[4] = {T(1) / 6, T(1) / 3, T(1) / 3, T(1) / 6};
  for (int s = 0; s < 4; ++s) {
    checked_forward<T, kConstraints>(m, e, s == 0);  // stage 1: the step's start, checked as mj_step does
    if (s == 0) {                                    // the start state (after any reset)
      for (int i = 0; i < m.nq; ++i) q0[i] = e.qpos[i];
      for (int i = 0; i < m.nv; ++i) v0[i] = e.qvel[i], vs[i] = T(0), as[i] = T(0);
    }
    for (int j = 0; j < m.njnt; ++j) {  // k_s from the stage's velocity and k_{s-1}
      const int d = m.jnt_dofadr(j);
      if (m.jnt_type(j) == kFree) {
        for (int i = d; i < d + 3; ++i) k[i] = e.qvel[i];
        const Vec3<T> u = c[s] * load3(k.at(d + 3), 0);  // k still holds stage s-1's rate
        store3(k.at(d + 3), 0, dexp_inv(s == 0 ? zero3<T>() : u, load3(e.qvel.at(d + 3), 0)));
      } else {
        k[d] = e.qvel[d];
      }
    }
    for (int i = 0; i < m.nv; ++i) vs[i] += w[s] * k[i], as[i] += w[s] * qacc[i];
    if (s == 3) break;
    integrate_pos(m, e.qpos, q0, k, c[s + 1]);
    for (int i = 0; i < m.nv; ++i) e.qvel[i] = v0[i] + c[s + 1] * qacc[i];
  }
  integrate_pos(m, e.qpos, q0, vs, h);
  for (int i = 0; i < m.nv; ++i) e.qvel[i] = v0[i] + h * as[i];
}

/// One time step; kConstraints = false: a model without constraint rows (Model::constraints).
template <class T, bool kConstraints = true>
KOKKOS_INLINE_FUNCTION void step(const Model<T>& m, const EnvRef<T>& e) {
  if (m.integrator == Integrator::kRK4)
    rk4_step<T, kConstraints>(m, e);
  else
    euler_step<T, kConstraints>(m, e);
}

}  // namespace gmi::physics
