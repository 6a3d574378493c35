#pragma once
/// \file
/// \brief Contacts of one env, as MuJoCo makes them (Computation: "Collision detection",
/// "Contact"): every candidate geom pair of the model (filtered once on the host by contype,
/// conaffinity, weld and parent rules, model.cpp) is tested each step; a contact closer than its
/// margin becomes constraint rows: one (the normal) for condim 1, four pyramid facets
/// J_n +- mu_k J_tk for condim 3, each with the contact's reference acceleration and softness.
///
/// Narrow phase: plane-sphere, plane-capsule (a capsule is its two end spheres), sphere-sphere,
/// sphere-capsule and capsule-capsule (closest points of the segments; two contacts where the axes
/// are parallel), the geoms of MuJoCo's locomotion models.
#include "kernels/physics/constraint.hpp"

namespace gmi::physics {

enum PairType : int { kPlaneSphere = 0, kPlaneCapsule = 1, kSphereSphere = 2, kSphereCapsule = 3, kCapsuleCapsule = 4 };

/// World poses of the geoms of collision pairs: geom_xpos, geom_xmat from their bodies.
template <class T>
KOKKOS_INLINE_FUNCTION void geom_poses(const Model<T>& m, const EnvRef<T>& e) {
  const Layout& L = m.layout;
  const auto xpos = e.at(L.xpos), xmat = e.at(L.xmat), gpos = e.at(L.geom_xpos), gmat = e.at(L.geom_xmat);
  for (int g = 0; g < m.ngeom; ++g) {
    const int b = m.geom_body(g);
    const Mat3<T> r = load_mat(xmat, b);
    store3(gpos, g, load3(xpos, b) + r * load3(m.geom_pos, g));
    store_mat(gmat, g, r * to_mat(load_quat(m.geom_quat, 4 * g)));
  }
}

/// row <- the translational Jacobian of the point p fixed to body b (velocity of p = row qvel),
/// added with weight w (the dofs of b's chain only).
template <class T>
KOKKOS_INLINE_FUNCTION void add_point_jacobian(const Model<T>& m, const EnvRef<T>& e, int b, const Vec3<T>& p, T w,
                                               const Strided<T>& jx, const Strided<T>& jy, const Strided<T>& jz) {
  while (b > 0 && m.body_dofnum(b) == 0) b = m.body_parent(b);
  if (b == 0) return;
  const Vec3<T> off = p - load3(e.at(m.layout.subtree_com), m.body_root(b));
  const auto cdof = e.at(m.layout.cdof);
  for (int d = m.body_dofadr(b) + m.body_dofnum(b) - 1; d >= 0; d = m.dof_parent(d)) {
    const Spatial<T> c = load6(cdof, d);
    const Vec3<T> v = c.l + cross(c.a, off);
    jx[d] += w * v[0], jy[d] += w * v[1], jz[d] += w * v[2];
  }
}

/// The contact frame from its normal and an optional tangent hint (zero: none), as MuJoCo
/// completes it: the hint (else world y, or z if the normal is close to y) made orthogonal to
/// the normal, and their cross product.
template <class T>
KOKKOS_INLINE_FUNCTION void contact_frame(const Vec3<T>& n, Vec3<T> t, Vec3<T>& t1, Vec3<T>& t2) {
  if (dot(t, t) < T(0.25)) t = (n[1] < T(0.5) && n[1] > T(-0.5)) ? Vec3<T>{{0, 1, 0}} : Vec3<T>{{0, 0, 1}};
  t = t - dot(n, t) * n;
  const T len = math::sqrt(dot(t, t));
  t1 = len > T(1e-15) ? (T(1) / len) * t : Vec3<T>{{1, 0, 0}};
  t2 = cross(n, t1);
}

/// Rows of one contact between the geoms of pair `p` at `pos` with normal `n` (from geom 1 to
/// geom 2), depth `dist`, tangent hint `hint`; from row `row` on; returns the next free row.
template <class T>
KOKKOS_INLINE_FUNCTION int contact_rows(const Model<T>& m, const EnvRef<T>& e, int p, const Vec3<T>& pos,
                                        const Vec3<T>& n, T dist, const Vec3<T>& hint, int row) {
  const Layout& L = m.layout;
  const int nv = m.nv;
  const auto J = e.at(L.efc_J), aref = e.at(L.efc_aref), D = e.at(L.efc_D);
  // the point's relative Jacobian (body 2 minus body 1) in world axes, in the solver's scratch
  const auto jx = e.at(L.grad), jy = e.at(L.dx), jz = e.at(L.mdx);
  for (int k = 0; k < nv; ++k) jx[k] = jy[k] = jz[k] = T(0);
  add_point_jacobian(m, e, m.geom_body(m.pair_g2(p)), pos, T(1), jx, jy, jz);
  add_point_jacobian(m, e, m.geom_body(m.pair_g1(p)), pos, T(-1), jx, jy, jz);
  Vec3<T> t1, t2;
  contact_frame(n, hint, t1, t2);
  const T margin = m.pair_margin(p);
  const T imp = impedance(&m.pair_solimp(5 * p), dist, margin);
  const T tran = m.pair_tran(p), mu0 = m.pair_friction(2 * p);
  const int condim = m.pair_condim(p);
  // R = (1 - imp) / imp * A, A = tran for the normal; for a pyramid A = tran (1 + mu0^2) and then
  // every facet gets 2 mu^2 R with mu = mu0 / sqrt(impratio) (the elliptic cone's friction match)
  T R = regulariser(imp, condim == 1 ? tran : tran * (T(1) + mu0 * mu0));
  if (condim > 1) R = T(2) * mu0 * mu0 * (R / m.impratio);
  const T K = m.pair_K(p), B = m.pair_B(p);
  const int rows = condim == 1 ? 1 : 4;
  {  // the contact's record, for the forces it exerts (contact_forces)
    const int c = int(e.ws[L.ncon]);
    e.ws[L.ncon] = T(c + 1);
    const Strided<T> rec = e.at(L.contacts + c * ContactRecord::kSize);
    rec[ContactRecord::kRow] = T(row), rec[ContactRecord::kCondim] = T(condim);
    rec[ContactRecord::kBody1] = T(m.geom_body(m.pair_g1(p))),
    rec[ContactRecord::kBody2] = T(m.geom_body(m.pair_g2(p)));
    store3(rec.at(ContactRecord::kPos), 0, pos), store3(rec.at(ContactRecord::kNormal), 0, n);
    store3(rec.at(ContactRecord::kTangent), 0, t1);
    rec[ContactRecord::kMu] = m.pair_friction(2 * p), rec[ContactRecord::kMu + 1] = m.pair_friction(2 * p + 1);
  }
  for (int r = 0; r < rows; ++r) {
    // facet r: normal + s mu_k tangent_k, k = r / 2, s = +1 for even r
    const Vec3<T> t = (r / 2 == 0) ? t1 : t2;
    const T mu = condim == 1 ? T(0) : (r % 2 == 0 ? T(1) : T(-1)) * m.pair_friction(2 * p + r / 2);
    const Vec3<T> dirn = n + mu * t;
    T vel = 0;
    for (int k = 0; k < nv; ++k) {
      const T j = dirn[0] * jx[k] + dirn[1] * jy[k] + dirn[2] * jz[k];
      J[(row + r) * nv + k] = j;
      vel += j * e.qvel[k];
    }
    D[row + r] = T(1) / R;
    aref[row + r] = reference(K, B, imp, vel, dist, margin);
  }
  return row + rows;
}

/// A sphere of radius `rad` at `c` against the plane of geom g1 (its z axis the normal): rows if
/// the sphere is closer than the pair's margin.
template <class T>
KOKKOS_INLINE_FUNCTION int plane_sphere(const Model<T>& m, const EnvRef<T>& e, int p, const Vec3<T>& c, T rad,
                                        const Vec3<T>& hint, int row) {
  const Layout& L = m.layout;
  const int g1 = m.pair_g1(p);
  const Vec3<T> n = column(load_mat(e.at(L.geom_xmat), g1), 2);
  const T cdist = dot(c - load3(e.at(L.geom_xpos), g1), n);
  const T dist = cdist - rad;
  if (!(dist < m.pair_margin(p))) return row;  // detected within margin + gap, included below margin
  const Vec3<T> pos = c - (dist / 2 + rad) * n;
  return contact_rows(m, e, p, pos, n, dist, hint, row);
}

/// Two spheres (radius r1 at c1 on geom 1, r2 at c2 on geom 2): rows if closer than the margin;
/// the normal from c1 to c2 (where the centres coincide: the cross product of the geoms' z axes).
template <class T>
KOKKOS_INLINE_FUNCTION int sphere_sphere(const Model<T>& m, const EnvRef<T>& e, int p, const Vec3<T>& c1, T r1,
                                         const Vec3<T>& z1, const Vec3<T>& c2, T r2, const Vec3<T>& z2, int row) {
  Vec3<T> n = c2 - c1;
  const T len = math::sqrt(dot(n, n));
  const T dist = len - r1 - r2;
  if (!(dist < m.pair_margin(p))) return row;
  if (len < T(1e-15)) {
    n = cross(z1, z2);
    const T l = math::sqrt(dot(n, n));
    n = l > T(1e-15) ? (T(1) / l) * n : Vec3<T>{{1, 0, 0}};
  } else {
    n = (T(1) / len) * n;
  }
  return contact_rows(m, e, p, c1 + (r1 + dist / 2) * n, n, dist, zero3<T>(), row);
}

/// x clipped to [-1, 1] (a position along a capsule's segment, in half lengths).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T clamp1(T x) {
  return clamp(x, T(-1), T(1));
}

/// Two capsules (segments c1 + x1 a1, c2 + x2 a2 with a the axis times the half length): the
/// spheres at the segments' closest points; where the axes are parallel, at the ends' projections
/// (up to two contacts), as MuJoCo does.
template <class T>
KOKKOS_INLINE_FUNCTION int capsule_capsule(const Model<T>& m, const EnvRef<T>& e, int p, const Vec3<T>& c1,
                                           const Vec3<T>& z1, T r1, T h1, const Vec3<T>& c2, const Vec3<T>& z2, T r2,
                                           T h2, int row) {
  const Vec3<T> a1 = h1 * z1, a2 = h2 * z2, dif = c1 - c2;
  const T ma = dot(a1, a1), mb = -dot(a1, a2), mc = dot(a2, a2), u = -dot(a1, dif), v = dot(a2, dif);
  const T det = ma * mc - mb * mb;
  // parallel below MuJoCo's 1e-15, or below rounding in float (det is then noise, not zero)
  const T det_min = T(16) * epsilon<T>() * ma * mc;
  if (math::fabs(det) >= (det_min > T(1e-15) ? det_min : T(1e-15))) {
    T x1 = (mc * u - mb * v) / det, x2 = (ma * v - mb * u) / det;
    if (x1 > T(1)) {
      x1 = 1, x2 = (v - mb) / mc;
    } else if (x1 < T(-1)) {
      x1 = -1, x2 = (v + mb) / mc;
    }
    if (x2 > T(1)) {
      x2 = 1, x1 = clamp1((u - mb) / ma);
    } else if (x2 < T(-1)) {
      x2 = -1, x1 = clamp1((u + mb) / ma);
    }
    return sphere_sphere(m, e, p, c1 + x1 * a1, r1, z1, c2 + x2 * a2, r2, z2, row);
  }
  // parallel: the ends of capsule 1 against their projections on capsule 2, then, while fewer than
  // two contacts, the ends of capsule 2 against theirs on capsule 1
  const int start = row;
  row = sphere_sphere(m, e, p, c1 + a1, r1, z1, c2 + clamp1((v - mb) / mc) * a2, r2, z2, row);
  row = sphere_sphere(m, e, p, c1 - a1, r1, z1, c2 + clamp1((v + mb) / mc) * a2, r2, z2, row);
  const int per = m.pair_condim(p) == 1 ? 1 : 4;
  if (row - start >= 2 * per) return row;
  row = sphere_sphere(m, e, p, c1 + clamp1((u - mb) / ma) * a1, r1, z1, c2 + a2, r2, z2, row);
  if (row - start >= 2 * per) return row;
  return sphere_sphere(m, e, p, c1 + clamp1((u + mb) / ma) * a1, r1, z1, c2 - a2, r2, z2, row);
}

/// Rows of every contact of the env's candidate pairs, from row `row` on; returns the next free row.
template <class T>
KOKKOS_INLINE_FUNCTION int make_contacts(const Model<T>& m, const EnvRef<T>& e, int row) {
  e.ws[m.layout.ncon] = T(0);
  if (m.npair == 0) return row;
  geom_poses(m, e);
  const Layout& L = m.layout;
  const auto gpos = e.at(L.geom_xpos), gmat = e.at(L.geom_xmat);
  for (int p = 0; p < m.npair; ++p) {
    const int g1 = m.pair_g1(p), g2 = m.pair_g2(p);
    const Vec3<T> c = load3(gpos, g2), z = column(load_mat(gmat, g2), 2);
    const T rad = m.geom_size(3 * g2), half = m.geom_size(3 * g2 + 1);
    switch (m.pair_type(p)) {
      case kPlaneSphere:
        row = plane_sphere(m, e, p, c, rad, zero3<T>(), row);
        break;
      case kPlaneCapsule:  // its two end spheres, frames aligned with its axis
        row = plane_sphere(m, e, p, c + half * z, rad, z, row);
        row = plane_sphere(m, e, p, c - half * z, rad, z, row);
        break;
      default: {
        const Vec3<T> c1 = load3(gpos, g1), z1 = column(load_mat(gmat, g1), 2);
        const T r1 = m.geom_size(3 * g1);
        if (m.pair_type(p) == kSphereSphere) {
          row = sphere_sphere(m, e, p, c1, r1, z1, c, rad, z, row);
        } else if (m.pair_type(p) == kSphereCapsule) {  // the sphere against the capsule's nearest point
          const T x = dot(z, c1 - c);
          row = sphere_sphere(m, e, p, c1, r1, z1, c + clamp(x, -half, half) * z, rad, z, row);
        } else {
          row = capsule_capsule(m, e, p, c1, z1, r1, m.geom_size(3 * g1 + 1), c, z, rad, half, row);
        }
      }
    }
  }
  return row;
}

/// cfrc_ext, as MuJoCo's mj_rnePostConstraint computes it after a step: every body's external
/// force from the contacts of the last forward pass (for RK4, its last stage), as (torque; force)
/// about the centre of mass of the body's tree, from the rows' forces f = -D min(jar, 0) (a
/// pyramid's facets decoded into normal sum(f) and tangents mu_k (f_2k - f_2k+1)); the world's
/// stays zero.  `out` holds 6 numbers per body.
template <class T>
KOKKOS_INLINE_FUNCTION void contact_forces(const Model<T>& m, const EnvRef<T>& e, const Strided<T>& out) {
  const Layout& L = m.layout;
  for (int k = 0; k < 6 * m.nbody; ++k) out[k] = T(0);
  if (!m.constraints) return;
  const auto D = e.at(L.efc_D), jar = e.at(L.efc_jar), com = e.at(L.subtree_com);
  const int ncon = int(e.ws[L.ncon]);
  for (int c = 0; c < ncon; ++c) {
    const Strided<T> rec = e.at(L.contacts + c * ContactRecord::kSize);
    const int row = int(rec[ContactRecord::kRow]), condim = int(rec[ContactRecord::kCondim]);
    T f[4] = {0, 0, 0, 0};
    for (int r = 0; r < (condim == 1 ? 1 : 4); ++r) f[r] = row_force(D, jar, row + r);
    const Vec3<T> n = load3(rec.at(ContactRecord::kNormal), 0), t1 = load3(rec.at(ContactRecord::kTangent), 0),
                  pos = load3(rec.at(ContactRecord::kPos), 0);
    Vec3<T> F = (f[0] + f[1] + f[2] + f[3]) * n;
    if (condim > 1)
      F = F + (rec[ContactRecord::kMu] * (f[0] - f[1])) * t1 +
          (rec[ContactRecord::kMu + 1] * (f[2] - f[3])) * cross(n, t1);
    for (int side = 0; side < 2; ++side) {
      const int b = int(rec[side == 0 ? ContactRecord::kBody1 : ContactRecord::kBody2]);
      if (b == 0) continue;
      const T s = side == 0 ? T(-1) : T(1);
      const Vec3<T> torque = cross(pos - load3(com, m.body_root(b)), F);
      for (int k = 0; k < 3; ++k) out[6 * b + k] += s * torque[k], out[6 * b + 3 + k] += s * F[k];
    }
  }
}

}  // namespace gmi::physics
