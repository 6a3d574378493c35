#pragma once
/// \file
/// \brief The smooth dynamics of one env, as MuJoCo's documented pipeline computes them
/// (mujoco.readthedocs.io, Computation: "Forward dynamics"): kinematics, com-based inertias and
/// motion axes, the joint-space inertia M (composite rigid bodies, plus armature), the bias
/// forces c(q, v) (recursive Newton-Euler with gravity as a base acceleration), passive and
/// actuator forces, and the smooth acceleration M^-1 (f_passive + f_actuator - c).
///
/// Every function reads the model and one env's strided state and scratch (Layout offsets); they
/// run unchanged in a host thread and a CUDA thread.
#include "kernels/physics/model.hpp"
#include "kernels/physics/spatial.hpp"

namespace gmi::physics {

/// One env's state (qpos, qvel, ctrl) and scratch block.
template <class T>
struct EnvRef {
  Strided<T> qpos, qvel, ctrl, ws;
  KOKKOS_FORCEINLINE_FUNCTION Strided<T> at(int offset) const { return ws.at(offset); }
};

/// Positions and orientations of bodies, their inertial frames, joint anchors and axes.
template <class T>
KOKKOS_INLINE_FUNCTION void kinematics(const Model<T>& m, const EnvRef<T>& e) {
  const Layout& L = m.layout;
  const auto xpos = e.at(L.xpos), xquat = e.at(L.xquat), xmat = e.at(L.xmat), xipos = e.at(L.xipos),
             ximat = e.at(L.ximat), xanchor = e.at(L.xanchor), xaxis = e.at(L.xaxis);
  store3(xpos, 0, zero3<T>());
  store_quat(xquat, 0, Quat<T>{T(1), T(0), T(0), T(0)});
  store_mat(xmat, 0, to_mat(Quat<T>{T(1), T(0), T(0), T(0)}));
  for (int b = 1; b < m.nbody; ++b) {
    const int p = m.body_parent(b), j0 = m.body_jntadr(b), nj = m.body_jntnum(b);
    Vec3<T> pos;
    Quat<T> q;
    if (nj > 0 && m.jnt_type(j0) == kFree) {  // world pose straight from qpos (a child of the world)
      const int a = m.jnt_qposadr(j0);
      pos = load3(e.qpos.at(a), 0);
      q = normalized(load_quat(e.qpos, a + 3));
      store3(xanchor, j0, pos);
      store3(xaxis, j0, Vec3<T>{{T(0), T(0), T(1)}});
    } else {
      const Mat3<T> rp = load_mat(xmat, p);
      pos = load3(xpos, p) + rp * load3(m.body_pos, b);
      q = load_quat(xquat, 4 * p) * load_quat(m.body_quat, 4 * b);
      for (int j = j0; j < j0 + nj; ++j) {
        const Vec3<T> jp = load3(m.jnt_pos, j), ja = load3(m.jnt_axis, j);
        const int a = m.jnt_qposadr(j);
        const T dq = e.qpos[a] - m.qpos0(a);
        const Mat3<T> r = to_mat(q);
        const Vec3<T> anchor = r * jp + pos, axis = r * ja;
        store3(xanchor, j, anchor);
        store3(xaxis, j, axis);
        if (m.jnt_type(j) == kHinge) {  // rotate about the anchor, which stays where it is
          q = q * axis_angle(ja, dq);
          pos = anchor - to_mat(q) * jp;
        } else {  // slide
          pos = pos + dq * axis;
        }
      }
      q = normalized(q);
    }
    const Mat3<T> r = to_mat(q);
    store3(xpos, b, pos);
    store_quat(xquat, 4 * b, q);
    store_mat(xmat, b, r);
    store3(xipos, b, pos + r * load3(m.body_ipos, b));
    store_mat(ximat, b, r * to_mat(load_quat(m.body_iquat, 4 * b)));
  }
}

/// Centres of mass of subtrees, body inertias about their tree's centre of mass (cinert), and
/// each dof's motion axis there (cdof).
template <class T>
KOKKOS_INLINE_FUNCTION void com_pos(const Model<T>& m, const EnvRef<T>& e) {
  const Layout& L = m.layout;
  const auto xipos = e.at(L.xipos), ximat = e.at(L.ximat), com = e.at(L.subtree_com), cinert = e.at(L.cinert),
             xmat = e.at(L.xmat), xanchor = e.at(L.xanchor), xaxis = e.at(L.xaxis), cdof = e.at(L.cdof);
  for (int b = 0; b < m.nbody; ++b) store3(com, b, m.body_mass(b) * load3(xipos, b));
  store3(com, 0, zero3<T>());
  for (int b = m.nbody - 1; b > 0; --b) store3(com, m.body_parent(b), load3(com, m.body_parent(b)) + load3(com, b));
  for (int b = 0; b < m.nbody; ++b) {
    const T sm = m.body_subtreemass(b);
    store3(com, b, sm > T(1e-15) ? (T(1) / sm) * load3(com, b) : load3(xipos, b));
  }
  for (int b = 1; b < m.nbody; ++b) {
    const T mass = m.body_mass(b);
    const Vec3<T> d = load3(xipos, b) - load3(com, m.body_root(b));
    const Mat3<T> r = load_mat(ximat, b);
    const Vec3<T> in = load3(m.body_inertia, b);
    // R diag(in) R^T + m (|d|^2 E - d d^T)
    T I[3][3];
    const T dd = dot(d, d);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        I[i][j] = r(i, 0) * in[0] * r(j, 0) + r(i, 1) * in[1] * r(j, 1) + r(i, 2) * in[2] * r(j, 2) +
                  mass * ((i == j ? dd : T(0)) - d[i] * d[j]);
    const Strided<T> c = cinert.at(10 * b);
    c[0] = I[0][0], c[1] = I[1][1], c[2] = I[2][2], c[3] = I[0][1], c[4] = I[0][2], c[5] = I[1][2];
    c[6] = mass * d[0], c[7] = mass * d[1], c[8] = mass * d[2], c[9] = mass;
  }
  for (int b = 1; b < m.nbody; ++b) {
    const Vec3<T> c = load3(com, m.body_root(b));
    for (int j = m.body_jntadr(b); j < m.body_jntadr(b) + m.body_jntnum(b); ++j) {
      const int v = m.jnt_dofadr(j);
      const Vec3<T> off = c - load3(xanchor, j);
      switch (m.jnt_type(j)) {
        case kFree: {
          for (int k = 0; k < 3; ++k) {
            Vec3<T> u = zero3<T>();
            u[k] = T(1);
            store6(cdof, v + k, Spatial<T>{zero3<T>(), u});
          }
          const Mat3<T> r = load_mat(xmat, b);
          for (int k = 0; k < 3; ++k) {
            const Vec3<T> ax = column(r, k);
            store6(cdof, v + 3 + k, Spatial<T>{ax, cross(ax, off)});
          }
          break;
        }
        case kHinge: {
          const Vec3<T> ax = load3(xaxis, j);
          store6(cdof, v, Spatial<T>{ax, cross(ax, off)});
          break;
        }
        default:  // slide
          store6(cdof, v, Spatial<T>{zero3<T>(), load3(xaxis, j)});
      }
    }
  }
}

/// Joint-space inertia by composite rigid bodies, plus armature on the diagonal.
template <class T>
KOKKOS_INLINE_FUNCTION void crb(const Model<T>& m, const EnvRef<T>& e) {
  const Layout& L = m.layout;
  const auto cinert = e.at(L.cinert), crbs = e.at(L.crb), cdof = e.at(L.cdof), M = e.at(L.mass);
  for (int k = 0; k < 10 * m.nbody; ++k) crbs[k] = cinert[k];
  for (int b = m.nbody - 1; b > 0; --b) {
    const int p = m.body_parent(b);
    if (p > 0)
      for (int k = 0; k < 10; ++k) crbs[10 * p + k] += crbs[10 * b + k];
  }
  for (int i = 0; i < m.nv; ++i) {
    const Spatial<T> f = inertia_times(crbs, m.dof_body(i), load6(cdof, i));
    int up = 0;
    for (int j = i; j >= 0; j = m.dof_parent(j)) M[m.dof_madr(i) + up++] = dot(load6(cdof, j), f);
    M[m.dof_madr(i)] += m.dof_armature(i);
  }
}

/// c(q, v): recursive Newton-Euler with zero joint accelerations and gravity as the world's
/// acceleration; leaves the body velocities in cvel and writes -c into qfrc.
template <class T>
KOKKOS_INLINE_FUNCTION void rne_bias(const Model<T>& m, const EnvRef<T>& e) {
  const Layout& L = m.layout;
  const auto cdof = e.at(L.cdof), cvel = e.at(L.cvel), cacc = e.at(L.cacc), cfrc = e.at(L.cfrc),
             cinert = e.at(L.cinert), qfrc = e.at(L.qfrc);
  store6(cvel, 0, Spatial<T>{zero3<T>(), zero3<T>()});
  store6(cacc, 0, Spatial<T>{zero3<T>(), Vec3<T>{{-m.gravity[0], -m.gravity[1], -m.gravity[2]}}});
  for (int b = 1; b < m.nbody; ++b) {
    const int p = m.body_parent(b);
    Spatial<T> v = load6(cvel, p), a = load6(cacc, p);
    for (int j = m.body_jntadr(b); j < m.body_jntadr(b) + m.body_jntnum(b); ++j) {
      // A joint's axes move with the velocity of the body before that joint moves it (the free
      // joint's rotation axes: after its translation).
      const int d0 = m.jnt_dofadr(j);
      const int type = m.jnt_type(j);
      const int n = type == kFree ? 6 : 1;
      for (int d = d0; d < d0 + n; ++d) {
        if (type == kFree && d == d0 + 3) {  // the translation's velocity first
          for (int t = d0; t < d0 + 3; ++t) v = v + e.qvel[t] * load6(cdof, t);
        }
        a = a + e.qvel[d] * cross_motion(v, load6(cdof, d));  // the axis's rate times its velocity
      }
      for (int d = (type == kFree ? d0 + 3 : d0); d < d0 + n; ++d) v = v + e.qvel[d] * load6(cdof, d);
    }
    store6(cvel, b, v);
    store6(cacc, b, a);
    store6(cfrc, b, inertia_times(cinert, b, a) + cross_force(v, inertia_times(cinert, b, v)));
  }
  for (int b = m.nbody - 1; b > 0; --b) {
    const int p = m.body_parent(b);
    if (p > 0) store6(cfrc, p, load6(cfrc, p) + load6(cfrc, b));
  }
  for (int i = 0; i < m.nv; ++i) qfrc[i] = -dot(load6(cdof, i), load6(cfrc, m.dof_body(i)));
}

/// Control u clamped to its range (when the model clamps controls).
template <class T>
KOKKOS_INLINE_FUNCTION T clamped_control(const Model<T>& m, const EnvRef<T>& e, int u) {
  const T c = e.ctrl[u];
  return m.clamp_ctrl && m.act_ctrllimited(u) ? clamp(c, m.act_ctrlrange(2 * u), m.act_ctrlrange(2 * u + 1)) : c;
}

/// Whether the actuators use the controls: MuJoCo sets every control to zero when one of them,
/// after clamping, is NaN or beyond 1e10 in magnitude (mjWARN_BADCTRL); the state goes on.
template <class T>
KOKKOS_INLINE_FUNCTION bool controls_usable(const Model<T>& m, const EnvRef<T>& e) {
  for (int u = 0; u < m.nu; ++u)
    if (!(math::fabs(clamped_control(m, e, u)) <= T(1e10))) return false;
  return true;
}

/// Actuator u's force (before its gear) at control c: gain c + bias0 + bias1 length + bias2
/// velocity, clamped to its force range.
template <class T>
KOKKOS_INLINE_FUNCTION T actuator_force(const Model<T>& m, const EnvRef<T>& e, int u, T c) {
  const T gear = m.act_gear(u);
  T f = m.act_gain(u) * c + m.act_bias(3 * u) + m.act_bias(3 * u + 1) * gear * e.qpos[m.act_qposadr(u)] +
        m.act_bias(3 * u + 2) * gear * e.qvel[m.act_dof(u)];
  if (m.act_forcelimited(u)) f = clamp(f, m.act_forcerange(2 * u), m.act_forcerange(2 * u + 1));
  return f;
}

/// Adds joint springs, joint dampers and actuator forces to qfrc.
template <class T>
KOKKOS_INLINE_FUNCTION void passive_and_actuation(const Model<T>& m, const EnvRef<T>& e) {
  const auto qfrc = e.at(m.layout.qfrc);
  if (m.spring)
    for (int j = 0; j < m.njnt; ++j) {
      const T k = m.jnt_stiffness(j);
      if (k != T(0) && m.jnt_type(j) != kFree) {  // from_mujoco refuses springs on free joints
        const int a = m.jnt_qposadr(j);
        qfrc[m.jnt_dofadr(j)] -= k * (e.qpos[a] - m.qpos_spring(a));
      }
    }
  if (m.damper)
    for (int i = 0; i < m.nv; ++i) qfrc[i] -= m.dof_damping(i) * e.qvel[i];
  if (!m.actuation) return;
  const bool usable = controls_usable(m, e);
  for (int u = 0; u < m.nu; ++u)
    qfrc[m.act_dof(u)] += m.act_gear(u) * actuator_force(m, e, u, usable ? clamped_control(m, e, u) : T(0));
}

/// mass_lu <- L^T D L of M plus `diag_scale` times dof damping on the diagonal (Euler's implicit
/// damping; 0 otherwise): Featherstone's LTDL, the tree's sparsity, no fill-in.  M stays as it is.
template <class T>
KOKKOS_INLINE_FUNCTION void factor(const Model<T>& m, const EnvRef<T>& e, T diag_scale) {
  const auto M = e.at(m.layout.mass_lu), M0 = e.at(m.layout.mass);
  for (int k = 0; k < m.nM; ++k) M[k] = M0[k];
  if (diag_scale != T(0))
    for (int i = 0; i < m.nv; ++i) M[m.dof_madr(i)] += diag_scale * m.dof_damping(i);
  for (int k = m.nv - 1; k >= 0; --k) {
    const T dk = M[m.dof_madr(k)];
    int up_i = 1;
    for (int i = m.dof_parent(k); i >= 0; i = m.dof_parent(i), ++up_i) {
      const T a = M[m.dof_madr(k) + up_i] / dk;
      // row i, from i up: M(i, j) -= M(k, j) a, where M(k, j) sits up_i + (j's depth above i)
      int up_j = 0;
      for (int j = i; j >= 0; j = m.dof_parent(j), ++up_j)
        M[m.dof_madr(i) + up_j] -= M[m.dof_madr(k) + up_i + up_j] * a;
      M[m.dof_madr(k) + up_i] = a;
    }
  }
}

/// x <- (L^T D L)^-1 x, with the factor from factor().
template <class T>
KOKKOS_INLINE_FUNCTION void solve(const Model<T>& m, const EnvRef<T>& e, const Strided<T>& x) {
  const auto M = e.at(m.layout.mass_lu);
  for (int i = m.nv - 1; i >= 0; --i) {
    int up = 1;
    for (int j = m.dof_parent(i); j >= 0; j = m.dof_parent(j), ++up) x[j] -= M[m.dof_madr(i) + up] * x[i];
  }
  for (int i = 0; i < m.nv; ++i) x[i] /= M[m.dof_madr(i)];
  for (int i = 0; i < m.nv; ++i) {
    int up = 1;
    for (int j = m.dof_parent(i); j >= 0; j = m.dof_parent(j), ++up) x[i] -= M[m.dof_madr(i) + up] * x[j];
  }
}

/// y <- M x (M symmetric, kept as each dof's row up its ancestors).
template <class T>
KOKKOS_INLINE_FUNCTION void mul_mass(const Model<T>& m, const EnvRef<T>& e, const Strided<T>& x, const Strided<T>& y) {
  const auto M = e.at(m.layout.mass);
  for (int i = 0; i < m.nv; ++i) y[i] = M[m.dof_madr(i)] * x[i];
  for (int i = 0; i < m.nv; ++i) {
    int up = 1;
    for (int j = m.dof_parent(i); j >= 0; j = m.dof_parent(j), ++up) {
      const T mij = M[m.dof_madr(i) + up];
      y[i] += mij * x[j];
      y[j] += mij * x[i];
    }
  }
}

/// Smooth forward dynamics at (qpos, qvel, ctrl): qfrc = passive + actuator - bias and
/// qacc_smooth = M^-1 qfrc.
template <class T>
KOKKOS_INLINE_FUNCTION void smooth_forward(const Model<T>& m, const EnvRef<T>& e) {
  kinematics(m, e);
  com_pos(m, e);
  crb(m, e);
  rne_bias(m, e);
  passive_and_actuation(m, e);
  const auto qfrc = e.at(m.layout.qfrc), qacc = e.at(m.layout.qacc_smooth);
  for (int i = 0; i < m.nv; ++i) qacc[i] = qfrc[i];
  factor(m, e, T(0));
  solve(m, e, qacc);
}

}  // namespace gmi::physics
