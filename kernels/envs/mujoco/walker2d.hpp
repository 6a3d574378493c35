#pragma once
/// \file
/// \brief Walker2d-v5 (Gymnasium `mujoco/walker2d_v5.py`, model walker2d_v5.xml): forward velocity
/// of the root's x, a healthy reward while z and the torso angle stay in range, control cost;
/// observations qpos[1:] and qvel clipped to [-10, 10].
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct Walker2d {
  static constexpr const char* kName = "Walker2d-v5";
  static constexpr const char* kXml = "walker2d_v5.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static std::vector<std::string> terms() { return {"reward_forward", "reward_ctrl", "reward_survive"}; }

  struct Params {
    int frame_skip = 4;
    double forward_reward_weight = 1.0, ctrl_cost_weight = 1e-3, healthy_reward = 1.0;
    bool terminate_when_unhealthy = true;
    Range healthy_z_range{0.8, 2.0}, healthy_angle_range{-1.0, 1.0};
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
    GMI_MUJOCO_TAKE(r, p, healthy_z_range);
    GMI_MUJOCO_TAKE(r, p, healthy_angle_range);
    GMI_MUJOCO_TAKE(r, p, reset_noise_scale);
    GMI_MUJOCO_TAKE(r, p, exclude_current_positions_from_observation);
    r.done();
    return p;
  }
  explicit Walker2d(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const { return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 1 : 0); }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, false); }
  void anchor(const mjModel*, const mjData* d, double a[2]) const { a[0] = d->qpos[0], a[1] = 0; }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = forward_velocity(*this, m, d, a, p.frame_skip);
    const bool ok = strictly_inside(d->qpos[1], p.healthy_z_range) && strictly_inside(d->qpos[2], p.healthy_angle_range);
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
