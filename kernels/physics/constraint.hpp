#pragma once
/// \file
/// \brief Constraint rows of one env, as MuJoCo makes them (Computation: "Constraint model",
/// "Solver parameters"): each row i has a Jacobian row J_i (dense, nv numbers), a reference
/// acceleration aref_i = -B (J_i v) - K imp (pos_i - margin_i) and a softness D_i = 1 / R_i,
/// R_i = (1 - imp) / imp * A_i, where imp is the impedance of solimp at the row's violation and
/// A_i MuJoCo's approximate inverse inertia of the row (from the model at qpos0).
///
/// So far: joint limits (hinge, slide) and fixed-tendon limits.  A unilateral row is active when
/// J_i qacc < aref_i (cost 1/2 D_i (J_i qacc - aref_i)^2, solver.hpp).
#include "kernels/physics/smooth.hpp"

namespace gmi::physics {

/// a^b for a > 0 (b = 1 and 2, the common solimp powers, exactly).
template <class T>
KOKKOS_INLINE_FUNCTION T power(T a, T b) {
  if (b == T(1)) return a;
  if (b == T(2)) return a * a;
  return math::exp(b * math::log(a));
}

/// MuJoCo's impedance at `pos` (violation pos - margin over solimp's width, shaped by its midpoint
/// and power), between solimp[0] (no violation) and solimp[1] (at the width and beyond).
template <class T>
KOKKOS_INLINE_FUNCTION T impedance(const T* solimp, T pos, T margin) {
  if (solimp[0] == solimp[1] || solimp[2] <= T(1e-15)) return T(0.5) * (solimp[0] + solimp[1]);
  T x = (pos - margin) / solimp[2];
  if (x < 0) x = -x;
  if (x >= T(1) || x <= T(0)) return x >= T(1) ? solimp[1] : solimp[0];
  const T mid = solimp[3], p = solimp[4];
  T y;
  if (p == T(1)) {
    y = x;
  } else if (x <= mid) {
    y = power(x, p) / power(mid, p - 1);
  } else {
    y = T(1) - power(T(1) - x, p) / power(T(1) - mid, p - 1);
  }
  return solimp[0] + y * (solimp[1] - solimp[0]);
}

/// A row's R = (1 - imp) / imp * A (A its approximate inverse inertia), at least 1e-15.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T regulariser(T imp, T A) {
  const T r = (T(1) - imp) * A / imp;
  return r > T(1e-15) ? r : T(1e-15);
}

/// A row's reference acceleration -B (J v) - K imp (pos - margin).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T reference(T K, T B, T imp, T jv, T pos, T margin) {
  return -B * jv - K * imp * (pos - margin);
}

/// The force of row r at the residual jar (J qacc - aref): -D jar where the row is active, else 0.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T row_force(const Strided<T>& D, const Strided<T>& jar, int r) {
  return jar[r] < T(0) ? -D[r] * jar[r] : T(0);
}

/// Limit rows for the violated sides of every limited joint and fixed tendon (value within its
/// margin of a range end), from row `row` on; returns the next free row.
template <class T>
KOKKOS_INLINE_FUNCTION int make_limits(const Model<T>& m, const EnvRef<T>& e, int row) {
  const Layout& L = m.layout;
  const auto J = e.at(L.efc_J), aref = e.at(L.efc_aref), D = e.at(L.efc_D);
  for (int s = 0; s < m.nlim; ++s) {
    T value = 0, vel = 0;
    for (int t = m.lim_termadr(s); t < m.lim_termadr(s) + m.lim_termnum(s); ++t) {
      value += m.term_coef(t) * e.qpos[m.term_qposadr(t)];
      vel += m.term_coef(t) * e.qvel[m.term_dof(t)];
    }
    const T margin = m.lim_margin(s);
    for (int side = -1; side <= 1; side += 2) {
      const T dist = side < 0 ? value - m.lim_range(2 * s) : m.lim_range(2 * s + 1) - value;
      if (!(dist < margin)) continue;
      const T sign = T(-side);  // the row's direction: +1 pushes up from the lower end
      for (int k = 0; k < m.nv; ++k) J[row * m.nv + k] = T(0);
      for (int t = m.lim_termadr(s); t < m.lim_termadr(s) + m.lim_termnum(s); ++t)
        J[row * m.nv + m.term_dof(t)] += sign * m.term_coef(t);
      const T imp = impedance(&m.lim_solimp(5 * s), dist, margin);
      D[row] = T(1) / regulariser(imp, m.lim_diag(s));
      aref[row] = reference(m.lim_K(s), m.lim_B(s), imp, sign * vel, dist, margin);
      ++row;
    }
  }
  return row;
}

}  // namespace gmi::physics
