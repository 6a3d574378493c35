#pragma once
/// \file
/// \brief Hopper-v5 (Gymnasium `mujoco/hopper_v5.py`): forward velocity of the root's x, a
/// healthy reward while z, the torso angle and every other state entry stay in range, control
/// cost; observations qpos[1:] and qvel clipped to [-10, 10].
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct Hopper {
  static constexpr const char* kName = "Hopper-v5";
  static constexpr const char* kXml = "hopper.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static std::vector<std::string> terms() { return {"reward_forward", "reward_ctrl", "reward_survive"}; }

  struct Params {
    int frame_skip = 4;
    double forward_reward_weight = 1.0, ctrl_cost_weight = 1e-3, healthy_reward = 1.0;
    bool terminate_when_unhealthy = true;
    Range healthy_state_range{-100.0, 100.0}, healthy_z_range{0.7, INFINITY}, healthy_angle_range{-0.2, 0.2};
    double reset_noise_scale = 5e-3;
    bool exclude_current_positions_from_observation = true;
  };
  static Params params(const Kwargs& k) {
    Params p;
    KwargReader r(k, kName);
    GMI_MUJOCO_TAKE(r, p, frame_skip);
    GMI_MUJOCO_TAKE(r, p, forward_reward_weight);
    GMI_MUJOCO_TAKE(r, p, ctrl_cost_weight);
    GMI_MUJOCO_TAKE(r, p, healthy_reward);
    GMI_MUJOCO_TAKE(r, p, terminate_when_unhealthy);
    GMI_MUJOCO_TAKE(r, p, healthy_state_range);
    GMI_MUJOCO_TAKE(r, p, healthy_z_range);
    GMI_MUJOCO_TAKE(r, p, healthy_angle_range);
    GMI_MUJOCO_TAKE(r, p, reset_noise_scale);
    GMI_MUJOCO_TAKE(r, p, exclude_current_positions_from_observation);
    r.done();
    return p;
  }
  explicit Hopper(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const { return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 1 : 0); }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, false); }
  void anchor(const mjModel*, const mjData* d, double a[2]) const { a[0] = d->qpos[0], a[1] = 0; }

  bool healthy(const mjModel* m, const mjData* d) const {
    const double z = d->qpos[1], angle = d->qpos[2];
    for (int k = 2; k < m->nq; ++k)
      if (!strictly_inside(d->qpos[k], p.healthy_state_range)) return false;
    for (int k = 0; k < m->nv; ++k)
      if (!strictly_inside(d->qvel[k], p.healthy_state_range)) return false;
    return strictly_inside(z, p.healthy_z_range) && strictly_inside(angle, p.healthy_angle_range);
  }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = forward_velocity(*this, m, d, a, p.frame_skip);
    const bool ok = healthy(m, d);
    terms[0] = p.forward_reward_weight * x_velocity;
    terms[1] = -p.ctrl_cost_weight * sum_squares(action, m->nu);
    terms[2] = ok ? p.healthy_reward : 0.0;
    terminated = !ok && p.terminate_when_unhealthy;
    return terms[0] + terms[2] + terms[1];
  }

  void observe(const mjModel* m, const mjData* d, float* out) const {
    const int skip = p.exclude_current_positions_from_observation ? 1 : 0;
    out = put(out, d->qpos + skip, m->nq - skip);
    put(out, d->qvel, m->nv, -10.0, 10.0);
  }
};

}  // namespace gmi::envs::mujoco
