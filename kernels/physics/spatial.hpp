#pragma once
/// \file
/// \brief Small 3-D and spatial (6-D) algebra for the device physics pipeline: vectors,
/// quaternions (w, x, y, z; Hamilton product, as MuJoCo stores them), row-major 3x3 matrices,
/// and the motion/force cross products of rigid-body dynamics (Featherstone, "Rigid Body Dynamics
/// Algorithms", ch. 2).  Spatial vectors are (angular; linear) about a reference point, as in
/// MuJoCo's com-based quantities; a body inertia about that point is 10 numbers
/// (Ixx Iyy Izz Ixy Ixz Iyz, h = m (c - p), m).
#include "kernels/core/kokkos.hpp"

namespace gmi::physics {

/// A strided array: element k of one env's block at base[k * stride].  Each env's state and
/// scratch lie in an (env, field) View: on the GPU (LayoutLeft) the env index is fastest, so the
/// threads of a warp read consecutive addresses; on the host (LayoutRight) an env's block is
/// contiguous.
template <class T>
struct Strided {
  T* base = nullptr;
  int stride = 1;
  KOKKOS_FORCEINLINE_FUNCTION T& operator[](int k) const { return base[long(k) * stride]; }
  KOKKOS_FORCEINLINE_FUNCTION Strided at(int offset) const { return Strided{base + long(offset) * stride, stride}; }
};

template <class T>
struct Vec3 {
  T v[3];
  KOKKOS_FORCEINLINE_FUNCTION T& operator[](int k) { return v[k]; }
  KOKKOS_FORCEINLINE_FUNCTION const T& operator[](int k) const { return v[k]; }
};
template <class T>
struct Quat {
  T w, x, y, z;
};
template <class T>
struct Mat3 {
  T m[9];  // row major
  KOKKOS_FORCEINLINE_FUNCTION T& operator()(int r, int c) { return m[3 * r + c]; }
  KOKKOS_FORCEINLINE_FUNCTION const T& operator()(int r, int c) const { return m[3 * r + c]; }
};
/// (angular; linear)
template <class T>
struct Spatial {
  Vec3<T> a, l;
};

// ---- loads and stores from strided arrays (element index k of 3, 4, 9 or 6 numbers) ----------
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> load3(const Strided<T>& s, int k) {
  return Vec3<T>{{s[3 * k], s[3 * k + 1], s[3 * k + 2]}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void store3(const Strided<T>& s, int k, const Vec3<T>& v) {
  for (int i = 0; i < 3; ++i) s[3 * k + i] = v[i];
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Quat<T> load_quat(const Strided<T>& s, int k) {
  return Quat<T>{s[k], s[k + 1], s[k + 2], s[k + 3]};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void store_quat(const Strided<T>& s, int k, const Quat<T>& q) {
  s[k] = q.w, s[k + 1] = q.x, s[k + 2] = q.y, s[k + 3] = q.z;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Mat3<T> load_mat(const Strided<T>& s, int k) {
  Mat3<T> r;
  for (int i = 0; i < 9; ++i) r.m[i] = s[9 * k + i];
  return r;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void store_mat(const Strided<T>& s, int k, const Mat3<T>& r) {
  for (int i = 0; i < 9; ++i) s[9 * k + i] = r.m[i];
}
/// The same loads from a model's flat device array (element index k of 3; quaternion at offset k).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> load3(const Kokkos::View<T*, MemSpace>& v, int k) {
  return Vec3<T>{{v(3 * k), v(3 * k + 1), v(3 * k + 2)}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Quat<T> load_quat(const Kokkos::View<T*, MemSpace>& v, int k) {
  return Quat<T>{v(k), v(k + 1), v(k + 2), v(k + 3)};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Spatial<T> load6(const Strided<T>& s, int k) {
  return Spatial<T>{load3(s, 2 * k), load3(s, 2 * k + 1)};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void store6(const Strided<T>& s, int k, const Spatial<T>& v) {
  store3(s, 2 * k, v.a), store3(s, 2 * k + 1, v.l);
}

/// Machine epsilon of float or double.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr T epsilon() {
  return sizeof(T) == 4 ? T(1.1920929e-7) : T(2.220446049250313e-16);
}

template <class T>
KOKKOS_FORCEINLINE_FUNCTION T clamp(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// ---- 3-vectors ---------------------------------------------------------------------------------
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> operator+(const Vec3<T>& a, const Vec3<T>& b) {
  return Vec3<T>{{a[0] + b[0], a[1] + b[1], a[2] + b[2]}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> operator-(const Vec3<T>& a, const Vec3<T>& b) {
  return Vec3<T>{{a[0] - b[0], a[1] - b[1], a[2] - b[2]}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> operator*(T s, const Vec3<T>& a) {
  return Vec3<T>{{s * a[0], s * a[1], s * a[2]}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T dot(const Vec3<T>& a, const Vec3<T>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> cross(const Vec3<T>& a, const Vec3<T>& b) {
  return Vec3<T>{{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> zero3() {
  return Vec3<T>{{T(0), T(0), T(0)}};
}

// ---- matrices and quaternions ------------------------------------------------------------------
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> operator*(const Mat3<T>& r, const Vec3<T>& v) {
  return Vec3<T>{{r(0, 0) * v[0] + r(0, 1) * v[1] + r(0, 2) * v[2], r(1, 0) * v[0] + r(1, 1) * v[1] + r(1, 2) * v[2],
                  r(2, 0) * v[0] + r(2, 1) * v[1] + r(2, 2) * v[2]}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Mat3<T> operator*(const Mat3<T>& a, const Mat3<T>& b) {
  Mat3<T> r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) = a(i, 0) * b(0, j) + a(i, 1) * b(1, j) + a(i, 2) * b(2, j);
  return r;
}
/// Column c of r (the world direction of a body's local axis c).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Vec3<T> column(const Mat3<T>& r, int c) {
  return Vec3<T>{{r(0, c), r(1, c), r(2, c)}};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Quat<T> operator*(const Quat<T>& a, const Quat<T>& b) {
  return Quat<T>{a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                 a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Quat<T> normalized(const Quat<T>& q) {
  const T n = math::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  if (n < T(1e-15)) return Quat<T>{T(1), T(0), T(0), T(0)};
  const T s = T(1) / n;
  return Quat<T>{q.w * s, q.x * s, q.y * s, q.z * s};
}
/// Rotation by `angle` about the unit vector `axis`.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Quat<T> axis_angle(const Vec3<T>& axis, T angle) {
  const T s = math::sin(angle / 2);
  return Quat<T>{math::cos(angle / 2), axis[0] * s, axis[1] * s, axis[2] * s};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Mat3<T> to_mat(const Quat<T>& q) {
  const T ww = q.w * q.w, xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  const T xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z, wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
  Mat3<T> r;
  r(0, 0) = ww + xx - yy - zz, r(0, 1) = 2 * (xy - wz), r(0, 2) = 2 * (xz + wy);
  r(1, 0) = 2 * (xy + wz), r(1, 1) = ww - xx + yy - zz, r(1, 2) = 2 * (yz - wx);
  r(2, 0) = 2 * (xz - wy), r(2, 1) = 2 * (yz + wx), r(2, 2) = ww - xx - yy + zz;
  return r;
}
/// q rotated by the body-frame angular velocity w over time dt (q * exp(w dt)), normalised.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Quat<T> integrate(const Quat<T>& q, const Vec3<T>& w, T dt) {
  const T n = math::sqrt(dot(w, w));
  if (n < T(1e-15)) return normalized(q);
  return normalized(q * axis_angle((T(1) / n) * w, n * dt));
}

// ---- spatial algebra ---------------------------------------------------------------------------
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Spatial<T> operator+(const Spatial<T>& a, const Spatial<T>& b) {
  return Spatial<T>{a.a + b.a, a.l + b.l};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Spatial<T> operator*(T s, const Spatial<T>& a) {
  return Spatial<T>{s * a.a, s * a.l};
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T dot(const Spatial<T>& a, const Spatial<T>& b) {
  return dot(a.a, b.a) + dot(a.l, b.l);
}
/// Motion cross motion: the rate of change of motion vector m carried along by velocity v.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Spatial<T> cross_motion(const Spatial<T>& v, const Spatial<T>& m) {
  return Spatial<T>{cross(v.a, m.a), cross(v.a, m.l) + cross(v.l, m.a)};
}
/// Motion cross force: the rate of change of force (momentum) f carried along by velocity v.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Spatial<T> cross_force(const Spatial<T>& v, const Spatial<T>& f) {
  return Spatial<T>{cross(v.a, f.a) + cross(v.l, f.l), cross(v.a, f.l)};
}
/// Momentum of motion v for the 10-number inertia `in` about the same point:
/// (I w + h x v ; m v - h x w).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Spatial<T> inertia_times(const Strided<T>& in, int k, const Spatial<T>& v) {
  const Strided<T> i = in.at(10 * k);
  const Vec3<T>& w = v.a;
  const Vec3<T> h{{i[6], i[7], i[8]}};
  const Vec3<T> iw{{i[0] * w[0] + i[3] * w[1] + i[4] * w[2], i[3] * w[0] + i[1] * w[1] + i[5] * w[2],
                    i[4] * w[0] + i[5] * w[1] + i[2] * w[2]}};
  return Spatial<T>{iw + cross(h, v.l), i[9] * v.l - cross(h, w)};
}

}  // namespace gmi::physics
