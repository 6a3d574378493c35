#pragma once
/// \file
/// \brief MountainCarContinuous-v0 (Gymnasium 1.x `classic_control/continuous_mountain_car.py`:
/// force = action clipped to [-1, 1], terminated at the goal with 100 reward, and a control cost
/// 0.1 action^2 of the *unclipped* action on every step; 999-step time limit).
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/state.hpp"

namespace gmi::envs {

struct MountainCarContinuous {
  static constexpr const char* kName = "MountainCarContinuous-v0";
  static constexpr int kObsDim = 2;  // position, velocity
  static constexpr int kActDim = 1;  // force, Box(min_action, max_action)

  struct Params {
    float min_action = -1.0f;
    float max_action = 1.0f;
    float min_position = -1.2f;
    float max_position = 0.6f;
    float max_speed = 0.07f;      ///< |velocity| bound per step
    float goal_position = 0.45f;  ///< terminated when position >= goal_position ...
    float goal_velocity = 0.0f;   ///< ... and velocity >= goal_velocity
    float power = 0.0015f;        ///< velocity change per unit force per step
    float gravity = 0.0025f;      ///< velocity change per step: -gravity * cos(3 position)
    float goal_reward = 100.0f;   ///< added on the step that reaches the goal
    float action_cost = 0.1f;     ///< reward -= action_cost * action^2 (unclipped action)
    float reset_low = -0.6f;      ///< initial position ~ U(reset_low, reset_high), velocity 0
    float reset_high = -0.4f;
    int max_episode_steps = 999;
  };

  static EnvSpec spec(const Params& p) {
    EnvSpec s;
    s.name = kName;
    s.obs_dim = kObsDim;
    s.act_dim = kActDim;
    s.num_actions = 0;
    s.obs_low = {p.min_position, -p.max_speed};
    s.obs_high = {p.max_position, p.max_speed};
    s.act_low = {p.min_action};
    s.act_high = {p.max_action};
    s.max_episode_steps = p.max_episode_steps;
    return s;
  }

  MountainCarContinuous(int n, const Params& params) : p(params) { allocate_state(n); }

  KOKKOS_INLINE_FUNCTION void reset(int i, const rng::Bits4& r) const {
    position(i) = rng::uniform(r.v[0], p.reset_low, p.reset_high);
    velocity(i) = 0.0f;
  }

  KOKKOS_INLINE_FUNCTION float step(int i, const float* action, bool& terminated) const {
    const float a = action[0];
    const float force = math::min(math::max(a, p.min_action), p.max_action);
    float pos = position(i), vel = velocity(i);
    vel += force * p.power - p.gravity * math::cos(3.0f * pos);
    vel = math::clamp(vel, -p.max_speed, p.max_speed);
    pos += vel;
    pos = math::clamp(pos, p.min_position, p.max_position);
    if (pos == p.min_position && vel < 0.0f) vel = 0.0f;  // inelastic left wall
    position(i) = pos;
    velocity(i) = vel;
    terminated = pos >= p.goal_position && vel >= p.goal_velocity;
    return (terminated ? p.goal_reward : 0.0f) - a * a * p.action_cost;
  }

  KOKKOS_INLINE_FUNCTION void observe(int i, float* obs) const {
    obs[0] = position(i);
    obs[1] = velocity(i);
  }

  Params p;
  // Per-env state (SoA), declared once: members, allocation and checkpoint names.
#define GMI_MOUNTAIN_CAR_CONTINUOUS_STATE(X) X(float, position) X(float, velocity)
  GMI_ENV_STATE(MountainCarContinuous, GMI_MOUNTAIN_CAR_CONTINUOUS_STATE)
#undef GMI_MOUNTAIN_CAR_CONTINUOUS_STATE
};

}  // namespace gmi::envs
