#pragma once
/// \file
/// \brief Pendulum-v1 (Gymnasium 1.x `classic_control/pendulum.py`: torque clipped to
/// [-max_torque, max_torque] inside step, reward = -(angle_normalize(th)^2 + 0.1 thdot^2 +
/// 0.001 u^2) from the pre-step state, semi-implicit Euler, never terminates, 200-step time limit).
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/state.hpp"

namespace gmi::envs {

struct Pendulum {
  static constexpr const char* kName = "Pendulum-v1";
  static constexpr int kObsDim = 3;  // cos th, sin th, thdot
  static constexpr int kActDim = 1;  // torque, Box(-max_torque, max_torque)

  struct Params {
    float max_speed = 8.0f;   ///< |thdot| bound [rad/s]
    float max_torque = 2.0f;  ///< action bound; larger actions are clipped in step
    float dt = 0.05f;         ///< seconds per step
    float gravity = 10.0f;    ///< Gymnasium's `g` argument (default 10.0)
    float mass = 1.0f;
    float length = 1.0f;
    float reset_theta = math::pi<float>;  ///< initial th ~ U(-b, b) [rad] (th = 0: upright)
    float reset_theta_dot = 1.0f;         ///< initial thdot ~ U(-b, b) [rad/s]
    int max_episode_steps = 200;
  };

  static EnvSpec spec(const Params& p) {
    EnvSpec s;
    s.name = kName;
    s.obs_dim = kObsDim;
    s.act_dim = kActDim;
    s.num_actions = 0;
    s.obs_high = {1.0f, 1.0f, p.max_speed};
    s.obs_low = {-1.0f, -1.0f, -p.max_speed};
    s.act_low = {-p.max_torque};
    s.act_high = {p.max_torque};
    s.max_episode_steps = p.max_episode_steps;
    return s;
  }

  Pendulum(int n, const Params& params) : p(params) { allocate_state(n); }

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    theta(i) = rng::uniform(r.v[0], -p.reset_theta, p.reset_theta);
    theta_dot(i) = rng::uniform(r.v[1], -p.reset_theta_dot, p.reset_theta_dot);
  }

  /// ((x + pi) mod 2 pi) - pi with Python's floored modulo (result in [-pi, pi)).
  KOKKOS_INLINE_FUNCTION static float angle_normalize(float x) {
    const float two_pi = 2.0f * math::pi<float>;
    float r = math::fmod(x + math::pi<float>, two_pi);
    if (r < 0.0f) r += two_pi;
    return r - math::pi<float>;
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    const float u = math::clamp(action[0], -p.max_torque, p.max_torque);
    const float th = theta(i), thd = theta_dot(i);
    const float an = angle_normalize(th);
    const float cost = an * an + 0.1f * thd * thd + 0.001f * (u * u);
    float newthd = thd + (3.0f * p.gravity / (2.0f * p.length) * math::sin(th) +
                          3.0f / (p.mass * p.length * p.length) * u) *
                             p.dt;
    newthd = math::clamp(newthd, -p.max_speed, p.max_speed);
    // theta is not wrapped (as in Gymnasium): only cos, sin and angle_normalize ever read it.
    theta(i) = th + newthd * p.dt;
    theta_dot(i) = newthd;
    terminated = false;
    return -cost;
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    obs[0] = math::cos(theta(i));
    obs[1] = math::sin(theta(i));
    obs[2] = theta_dot(i);
  }

  Params p;
  // Per-env state (SoA), declared once: members, allocation and checkpoint names.
#define GMI_PENDULUM_STATE(X) X(float, theta) X(float, theta_dot)
  GMI_ENV_STATE(Pendulum, GMI_PENDULUM_STATE)
#undef GMI_PENDULUM_STATE
};

}  // namespace gmi::envs
