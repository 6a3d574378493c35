#pragma once
/// \file
/// \brief CartPole-v1 (Gymnasium 1.x `classic_control/cartpole.py`, Euler integrator, reward 1 on
/// every step including the terminal one, 500-step time limit).
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/state.hpp"

namespace gmi::envs {

struct CartPole {
  static constexpr const char* kName = "CartPole-v1";
  static constexpr int kObsDim = 4;  // x, x_dot, theta, theta_dot
  static constexpr int kActDim = 1;  // 0: push left, 1: push right

  struct Params {
    float gravity = 9.8f;
    float masscart = 1.0f;
    float masspole = 0.1f;
    float length = 0.5f;          ///< half the pole's length [m]
    float force_mag = 10.0f;
    float tau = 0.02f;            ///< seconds per step
    float theta_threshold = 12.0f * 2.0f * math::pi<float> / 360.0f;  ///< [rad]
    float x_threshold = 2.4f;
    float reset_bound = 0.05f;    ///< initial state ~ U(-b, b) per component
    int max_episode_steps = 500;
  };

  static EnvSpec spec(const Params& p) {
    const float inf = INFINITY;
    EnvSpec s;
    s.name = kName;
    s.obs_dim = kObsDim;
    s.act_dim = kActDim;
    s.num_actions = 2;
    s.obs_high = {2.0f * p.x_threshold, inf, 2.0f * p.theta_threshold, inf};
    s.obs_low = {-s.obs_high[0], -inf, -s.obs_high[2], -inf};
    s.max_episode_steps = p.max_episode_steps;
    return s;
  }

  CartPole(int n, const Params& params) : p(params) { allocate_state(n); }

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    x(i) = rng::uniform(r.v[0], -p.reset_bound, p.reset_bound);
    x_dot(i) = rng::uniform(r.v[1], -p.reset_bound, p.reset_bound);
    theta(i) = rng::uniform(r.v[2], -p.reset_bound, p.reset_bound);
    theta_dot(i) = rng::uniform(r.v[3], -p.reset_bound, p.reset_bound);
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    const float total_mass = p.masspole + p.masscart;
    const float polemass_length = p.masspole * p.length;
    const float force = action[0] > 0.5f ? p.force_mag : -p.force_mag;
    float xs = x(i), xd = x_dot(i), th = theta(i), thd = theta_dot(i);
    const float c = math::cos(th), s = math::sin(th);
    const float temp = (force + polemass_length * thd * thd * s) / total_mass;
    const float thacc =
        (p.gravity * s - c * temp) / (p.length * (4.0f / 3.0f - p.masspole * c * c / total_mass));
    const float xacc = temp - polemass_length * thacc * c / total_mass;
    xs += p.tau * xd;
    xd += p.tau * xacc;
    th += p.tau * thd;
    thd += p.tau * thacc;
    x(i) = xs;
    x_dot(i) = xd;
    theta(i) = th;
    theta_dot(i) = thd;
    terminated = xs < -p.x_threshold || xs > p.x_threshold || th < -p.theta_threshold ||
                 th > p.theta_threshold;
    return 1.0f;
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    obs[0] = x(i);
    obs[1] = x_dot(i);
    obs[2] = theta(i);
    obs[3] = theta_dot(i);
  }

  Params p;
  // Per-env state (SoA), declared once: members, allocation and checkpoint names.
#define GMI_CARTPOLE_STATE(X) X(float, x) X(float, x_dot) X(float, theta) X(float, theta_dot)
  GMI_ENV_STATE(CartPole, GMI_CARTPOLE_STATE)
#undef GMI_CARTPOLE_STATE
};

}  // namespace gmi::envs
