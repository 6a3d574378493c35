#pragma once
/// \file
/// \brief The constraint solver of one env: MuJoCo's primal problem (Computation: "Constraint
/// solver") solved by Newton's method with an exact line search,
///   qacc = argmin_x 1/2 (x - qacc_smooth)^T M (x - qacc_smooth) + sum_i 1/2 D_i min(J_i x - aref_i, 0)^2
/// for unilateral rows (limits; contacts' pyramid facets later).  The problem is strictly convex,
/// so its minimiser is one point whatever the method: MuJoCo's solvers stop within their tolerance
/// of it, this one when a full Newton step keeps the active set (the exact minimiser of a
/// piecewise quadratic) or its gradient is at rounding level.
#include "kernels/physics/collision.hpp"

namespace gmi::physics {

/// In-place Cholesky of the dense n x n matrix H (lower triangle used); false if not positive.
template <class T>
KOKKOS_INLINE_FUNCTION bool cholesky(const Strided<T>& H, int n) {
  for (int j = 0; j < n; ++j) {
    T d = H[j * n + j];
    for (int k = 0; k < j; ++k) d -= H[j * n + k] * H[j * n + k];
    if (!(d > T(0))) return false;
    d = math::sqrt(d);
    H[j * n + j] = d;
    for (int i = j + 1; i < n; ++i) {
      T s = H[i * n + j];
      for (int k = 0; k < j; ++k) s -= H[i * n + k] * H[j * n + k];
      H[i * n + j] = s / d;
    }
  }
  return true;
}

/// x <- (L L^T)^-1 x with the factor from cholesky().
template <class T>
KOKKOS_INLINE_FUNCTION void cholesky_solve(const Strided<T>& H, int n, const Strided<T>& x) {
  for (int i = 0; i < n; ++i) {
    T s = x[i];
    for (int k = 0; k < i; ++k) s -= H[i * n + k] * x[k];
    x[i] = s / H[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    T s = x[i];
    for (int k = i + 1; k < n; ++k) s -= H[k * n + i] * x[k];
    x[i] = s / H[i * n + i];
  }
}

/// The derivative of the cost along dx at step a: phi'(a) = a0 + a a1 + sum over rows active at a
/// of D (jar + a jdx) jdx; also its slope there.
template <class T>
KOKKOS_INLINE_FUNCTION void line_slope(const Strided<T>& jar, const Strided<T>& jdx, const Strided<T>& D, int nefc,
                                       T a0, T a1, T a, T& slope, T& curvature) {
  slope = a0 + a * a1, curvature = a1;
  for (int r = 0; r < nefc; ++r) {
    const T v = jar[r] + a * jdx[r];
    if (v < T(0)) slope += D[r] * v * jdx[r], curvature += D[r] * jdx[r] * jdx[r];
  }
}

/// The step a > 0 minimising the cost along dx: the root of the increasing, piecewise-linear
/// phi'(a), by Newton steps kept inside a bracket (bisection where a step leaves it).
template <class T>
KOKKOS_INLINE_FUNCTION T line_search(const Strided<T>& jar, const Strided<T>& jdx, const Strided<T>& D, int nefc, T a0,
                                     T a1) {
  T lo = 0, hi = -1, a = 1;  // hi < 0: no upper bracket yet
  for (int it = 0; it < 60; ++it) {
    T s, c;
    line_slope(jar, jdx, D, nefc, a0, a1, a, s, c);
    if (s == T(0) || math::fabs(s) <= T(16) * epsilon<T>() * (math::fabs(a0) + a * c)) return a;
    if (s < T(0)) {
      lo = a;
    } else {
      hi = a;
    }
    T next = a - s / c;  // exact on the current piece
    if (!(next > lo) || (hi >= T(0) && !(next < hi))) next = hi >= T(0) ? T(0.5) * (lo + hi) : T(2) * a;
    if (next == a) return a;
    if (hi >= T(0) && hi - lo <= T(4) * epsilon<T>() * hi) return T(0.5) * (lo + hi);
    a = next;
  }
  return a;
}

/// jar_r = J_r x - aref_r for every row.
template <class T>
KOKKOS_INLINE_FUNCTION void residuals(const Model<T>& m, const EnvRef<T>& e, const Strided<T>& x, int nefc) {
  const Layout& L = m.layout;
  const auto J = e.at(L.efc_J), aref = e.at(L.efc_aref), jar = e.at(L.efc_jar);
  for (int r = 0; r < nefc; ++r) {
    T s = -aref[r];
    for (int k = 0; k < m.nv; ++k) s += J[r * m.nv + k] * x[k];
    jar[r] = s;
  }
}

/// qacc from qacc_smooth and the `nefc` rows; qfrc_constraint = J^T f, f = -D min(jar, 0).
template <class T>
KOKKOS_INLINE_FUNCTION void solve_constraints(const Model<T>& m, const EnvRef<T>& e, int nefc) {
  const Layout& L = m.layout;
  const int nv = m.nv;
  const auto x = e.at(L.qacc), qs = e.at(L.qacc_smooth), J = e.at(L.efc_J), D = e.at(L.efc_D), jar = e.at(L.efc_jar),
             jdx = e.at(L.efc_jdx), H = e.at(L.hess), g = e.at(L.grad), dx = e.at(L.dx), tmp = e.at(L.mdx),
             M = e.at(L.mass), fc = e.at(L.qfrc_constraint);
  for (int k = 0; k < nv; ++k) x[k] = qs[k];
  const T scale = T(1) / (m.meaninertia * T(nv > 1 ? nv : 1));
  int it = 0;
  for (; it < m.iterations; ++it) {
    residuals(m, e, x, nefc);
    // gradient M (x - qs) + J^T D min(jar, 0), Hessian M + J_active^T D J_active
    for (int k = 0; k < nv; ++k) dx[k] = x[k] - qs[k];
    mul_mass(m, e, dx, g);
    for (int k = 0; k < nv * nv; ++k) H[k] = T(0);
    for (int i = 0; i < nv; ++i) {
      int up = 0;
      for (int j = i; j >= 0; j = m.dof_parent(j), ++up) H[i * nv + j] = M[m.dof_madr(i) + up];
    }
    for (int r = 0; r < nefc; ++r) {
      if (!(jar[r] < T(0))) continue;
      const T f = D[r] * jar[r];
      for (int i = 0; i < nv; ++i) {
        const T ji = J[r * nv + i];
        if (ji == T(0)) continue;
        g[i] += f * ji;
        for (int k = 0; k <= i; ++k) H[i * nv + k] += D[r] * ji * J[r * nv + k];
      }
    }
    T gnorm = 0;
    for (int k = 0; k < nv; ++k) gnorm += g[k] * g[k];
    if (scale * math::sqrt(gnorm) < m.tolerance) break;
    if (!cholesky(H, nv)) break;  // not positive in rounding: keep the iterate (M alone is)
    for (int k = 0; k < nv; ++k) dx[k] = -g[k];
    cholesky_solve(H, nv, dx);
    // line search along dx: phi'(a) = dx^T M (x - qs) + a dx^T M dx + rows
    mul_mass(m, e, dx, tmp);
    T a0 = 0, a1 = 0;
    for (int k = 0; k < nv; ++k) a0 += tmp[k] * (x[k] - qs[k]), a1 += tmp[k] * dx[k];
    for (int r = 0; r < nefc; ++r) {
      T s = 0;
      for (int k = 0; k < nv; ++k) s += J[r * nv + k] * dx[k];
      jdx[r] = s;
    }
    const T a = line_search(jar, jdx, D, nefc, a0, a1);
    bool same_active = true;
    T decrease = -(a * a0 + T(0.5) * a * a * a1);  // the cost's decrease along the step
    for (int r = 0; r < nefc; ++r) {
      const T before = jar[r] < T(0) ? jar[r] : T(0), v = jar[r] + a * jdx[r], after = v < T(0) ? v : T(0);
      decrease -= T(0.5) * D[r] * (after * after - before * before);
      same_active = same_active && ((jar[r] < T(0)) == (v < T(0)));
    }
    T moved = 0, size = 0;
    for (int k = 0; k < nv; ++k) {
      x[k] += a * dx[k];
      moved = math::max(moved, math::fabs(a * dx[k]));
      size = math::max(size, math::fabs(x[k]));
    }
    // MuJoCo's test on the scaled improvement; and a step within the iterate's rounding ends it too
    // (in float, pyramid facets with almost no force can flip in and out forever; a floor on the
    // cost's rounding instead stopped up to 1e-2 short in forces: the cost is flat where the
    // iterate still moves)
    if (scale * decrease < m.tolerance || moved <= T(8) * epsilon<T>() * size) break;
    // a full Newton step that keeps the active set lands on the minimiser of the quadratic piece it
    // stays on, which is the minimiser (the line search returns 1 up to rounding there)
    if (same_active && math::fabs(a - T(1)) < T(1e-3)) break;
  }
  e.ws[L.solver_iterations] = math::max(e.ws[L.solver_iterations], T(it + 1));
  residuals(m, e, x, nefc);
  for (int k = 0; k < nv; ++k) fc[k] = T(0);
  for (int r = 0; r < nefc; ++r) {
    const T f = row_force(D, jar, r);
    if (f != T(0))
      for (int k = 0; k < nv; ++k) fc[k] += f * J[r * nv + k];
  }
}

/// Forward dynamics: the smooth part, then the constraint rows and the solver; leaves qacc and
/// qfrc_constraint.  kConstraints = false compiles the smooth part alone (a kernel for models
/// without constraints keeps its registers, and so its occupancy, to itself).
template <class T, bool kConstraints = true>
KOKKOS_INLINE_FUNCTION void forward(const Model<T>& m, const EnvRef<T>& e) {
  smooth_forward(m, e);
  const Layout& L = m.layout;
  const auto qacc = e.at(L.qacc), qs = e.at(L.qacc_smooth), fc = e.at(L.qfrc_constraint);
  int nefc = 0;  // make_contacts counts the contacts (contact_forces reads them only with constraints)
  if constexpr (kConstraints) nefc = m.constraints ? make_contacts(m, e, make_limits(m, e, 0)) : 0;
  if (nefc == 0) {
    for (int k = 0; k < m.nv; ++k) qacc[k] = qs[k], fc[k] = T(0);
    return;
  }
  if constexpr (kConstraints) solve_constraints(m, e, nefc);
}

}  // namespace gmi::physics
