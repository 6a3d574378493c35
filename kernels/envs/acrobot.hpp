#pragma once
/// \file
/// \brief Acrobot-v1 (Gymnasium 1.x `classic_control/acrobot.py`, "book" dynamics, one RK4 step
/// over dt, reward -1 on every step except the terminal one (0), 500-step time limit).
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/state.hpp"

namespace gmi::envs {

struct Acrobot {
  static constexpr const char* kName = "Acrobot-v1";
  static constexpr int kObsDim = 6;  // cos th1, sin th1, cos th2, sin th2, dth1, dth2
  static constexpr int kActDim = 1;  // 0, 1, 2: torque -1, 0, +1 on the joint between the links

  struct Params {
    float dt = 0.2f;              ///< seconds per step (one RK4 step)
    float link_length_1 = 1.0f;   ///< [m]
    float link_mass_1 = 1.0f;     ///< [kg]
    float link_mass_2 = 1.0f;     ///< [kg]
    float link_com_pos_1 = 0.5f;  ///< [m] centre of mass of link 1 from the fixed joint
    float link_com_pos_2 = 0.5f;  ///< [m] centre of mass of link 2 from the middle joint
    float link_moi = 1.0f;        ///< moment of inertia of either link
    float gravity = 9.8f;
    float max_vel_1 = 4.0f * math::pi<float>;  ///< |dtheta1| bound [rad/s]
    float max_vel_2 = 9.0f * math::pi<float>;  ///< |dtheta2| bound [rad/s]
    float reset_bound = 0.1f;                  ///< initial state ~ U(-b, b) per component
    int max_episode_steps = 500;
  };

  static EnvSpec spec(const Params& p) {
    EnvSpec s;
    s.name = kName;
    s.obs_dim = kObsDim;
    s.act_dim = kActDim;
    s.num_actions = 3;
    s.obs_high = {1.0f, 1.0f, 1.0f, 1.0f, p.max_vel_1, p.max_vel_2};
    s.obs_low = {-1.0f, -1.0f, -1.0f, -1.0f, -p.max_vel_1, -p.max_vel_2};
    s.max_episode_steps = p.max_episode_steps;
    return s;
  }

  Acrobot(int n, const Params& params) : p(params) { allocate_state(n); }

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    theta1(i) = rng::uniform(r.v[0], -p.reset_bound, p.reset_bound);
    theta2(i) = rng::uniform(r.v[1], -p.reset_bound, p.reset_bound);
    dtheta1(i) = rng::uniform(r.v[2], -p.reset_bound, p.reset_bound);
    dtheta2(i) = rng::uniform(r.v[3], -p.reset_bound, p.reset_bound);
  }

  /// Time derivative of s = (theta1, theta2, dtheta1, dtheta2) under torque a (`_dsdt`, "book").
  KOKKOS_INLINE_FUNCTION void dsdt(const float* s, float a, float* ds) const {
    const float m1 = p.link_mass_1, m2 = p.link_mass_2, l1 = p.link_length_1;
    const float lc1 = p.link_com_pos_1, lc2 = p.link_com_pos_2, I1 = p.link_moi, I2 = p.link_moi;
    const float g = p.gravity, half_pi = 0.5f * math::pi<float>;
    const float th1 = s[0], th2 = s[1], dth1 = s[2], dth2 = s[3];
    const float c2 = math::cos(th2), s2 = math::sin(th2);
    const float d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2.0f * l1 * lc2 * c2) + I1 + I2;
    const float d2 = m2 * (lc2 * lc2 + l1 * lc2 * c2) + I2;
    const float phi2 = m2 * lc2 * g * math::cos(th1 + th2 - half_pi);
    const float phi1 = -m2 * l1 * lc2 * dth2 * dth2 * s2 - 2.0f * m2 * l1 * lc2 * dth2 * dth1 * s2 +
                       (m1 * lc1 + m2 * l1) * g * math::cos(th1 - half_pi) + phi2;
    const float ddth2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dth1 * dth1 * s2 - phi2) /
                        (m2 * lc2 * lc2 + I2 - d2 * d2 / d1);
    const float ddth1 = -(d2 * ddth2 + phi1) / d1;
    ds[0] = dth1;
    ds[1] = dth2;
    ds[2] = ddth1;
    ds[3] = ddth2;
  }

  /// Gymnasium's `wrap`: shift by the period until m <= x <= M (both ends kept, as there).  One
  /// RK4 step from bounded velocities moves an angle by a few periods at most; a non-finite x is
  /// returned as is rather than looping forever on the device.
  KOKKOS_INLINE_FUNCTION static float wrap(float x, float m, float M) {
    if (!math::isfinite(x)) return x;
    const float diff = M - m;
    while (x > M) x -= diff;
    while (x < m) x += diff;
    return x;
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    const float torque = action[0] - 1.0f;  // AVAIL_TORQUE = [-1, 0, +1]
    const float h = p.dt, h2 = 0.5f * p.dt;
    float y[4] = {theta1(i), theta2(i), dtheta1(i), dtheta2(i)};
    float k1[4], k2[4], k3[4], k4[4], t[4];
    // `rk4(derivs, y0, [0, dt])`: a single classical Runge-Kutta step.
    dsdt(y, torque, k1);
    for (int k = 0; k < 4; ++k) t[k] = y[k] + h2 * k1[k];
    dsdt(t, torque, k2);
    for (int k = 0; k < 4; ++k) t[k] = y[k] + h2 * k2[k];
    dsdt(t, torque, k3);
    for (int k = 0; k < 4; ++k) t[k] = y[k] + h * k3[k];
    dsdt(t, torque, k4);
    for (int k = 0; k < 4; ++k) y[k] += h / 6.0f * (k1[k] + 2.0f * k2[k] + 2.0f * k3[k] + k4[k]);
    const float pi = math::pi<float>;
    const float th1 = wrap(y[0], -pi, pi), th2 = wrap(y[1], -pi, pi);
    theta1(i) = th1;
    theta2(i) = th2;
    dtheta1(i) = math::clamp(y[2], -p.max_vel_1, p.max_vel_1);
    dtheta2(i) = math::clamp(y[3], -p.max_vel_2, p.max_vel_2);
    // The tip is higher than one link length above the fixed joint.
    terminated = -math::cos(th1) - math::cos(th2 + th1) > 1.0f;
    return terminated ? 0.0f : -1.0f;
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    obs[0] = math::cos(theta1(i));
    obs[1] = math::sin(theta1(i));
    obs[2] = math::cos(theta2(i));
    obs[3] = math::sin(theta2(i));
    obs[4] = dtheta1(i);
    obs[5] = dtheta2(i);
  }

  Params p;
  // Per-env state (SoA), declared once: members, allocation and checkpoint names.
#define GMI_ACROBOT_STATE(X) X(float, theta1) X(float, theta2) X(float, dtheta1) X(float, dtheta2)
  GMI_ENV_STATE(Acrobot, GMI_ACROBOT_STATE)
#undef GMI_ACROBOT_STATE
};

}  // namespace gmi::envs
