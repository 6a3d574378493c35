#pragma once
/// \file
/// \brief Ant-v5 (Gymnasium `mujoco/ant_v5.py`): forward velocity of the torso's x (body 1, from
/// xpos), a healthy reward while the state is finite and z in range, control and contact costs
/// (contact forces clipped); observations qpos[2:], qvel and the clipped cfrc_ext of every body
/// but the world.
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct Ant {
  static constexpr const char* kName = "Ant-v5";
  static constexpr const char* kXml = "ant.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static constexpr int kMainBody = 1;
  static std::vector<std::string> terms() { return {"reward_forward", "reward_ctrl", "reward_contact", "reward_survive"}; }

  struct Params {
    int frame_skip = 5;
    double forward_reward_weight = 1.0, ctrl_cost_weight = 0.5, contact_cost_weight = 5e-4, healthy_reward = 1.0;
    bool terminate_when_unhealthy = true;
    Range healthy_z_range{0.2, 1.0}, contact_force_range{-1.0, 1.0};
    double reset_noise_scale = 0.1;
    bool exclude_current_positions_from_observation = true, include_cfrc_ext_in_observation = true;
  };
  /// `env` names the task in errors (DeviceAnt-v5 takes these too).
  static Params params(const Kwargs& k, const char* env = kName) {
    Params p;
    KwargReader r(k, env);
    GMI_MUJOCO_TAKE(r, p, frame_skip);
    GMI_MUJOCO_TAKE(r, p, forward_reward_weight);
    GMI_MUJOCO_TAKE(r, p, ctrl_cost_weight);
    GMI_MUJOCO_TAKE(r, p, contact_cost_weight);
    GMI_MUJOCO_TAKE(r, p, healthy_reward);
    GMI_MUJOCO_TAKE(r, p, terminate_when_unhealthy);
    GMI_MUJOCO_TAKE(r, p, healthy_z_range);
    GMI_MUJOCO_TAKE(r, p, contact_force_range);
    GMI_MUJOCO_TAKE(r, p, reset_noise_scale);
    GMI_MUJOCO_TAKE(r, p, exclude_current_positions_from_observation);
    GMI_MUJOCO_TAKE(r, p, include_cfrc_ext_in_observation);
    r.done();
    return p;
  }
  explicit Ant(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const {
    return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 2 : 0) +
           (p.include_cfrc_ext_in_observation ? 6 * (m->nbody - 1) : 0);
  }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, true); }
  void anchor(const mjModel*, const mjData* d, double a[2]) const {
    a[0] = d->xpos[3 * kMainBody], a[1] = d->xpos[3 * kMainBody + 1];
  }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = forward_velocity(*this, m, d, a, p.frame_skip);
    bool ok = p.healthy_z_range[0] <= d->qpos[2] && d->qpos[2] <= p.healthy_z_range[1];
    for (int k = 0; k < m->nq && ok; ++k) ok = std::isfinite(d->qpos[k]);
    for (int k = 0; k < m->nv && ok; ++k) ok = std::isfinite(d->qvel[k]);
    double contact = 0;
    for (int k = 0; k < 6 * m->nbody; ++k) {
      const double f = clip(d->cfrc_ext[k], p.contact_force_range[0], p.contact_force_range[1]);
      contact += f * f;
    }
    const double forward = x_velocity * p.forward_reward_weight, survive = ok ? p.healthy_reward : 0.0;
    const double ctrl_cost = p.ctrl_cost_weight * sum_squares(action, m->nu), contact_cost = p.contact_cost_weight * contact;
    terms[0] = forward, terms[1] = -ctrl_cost, terms[2] = -contact_cost, terms[3] = survive;
    terminated = !ok && p.terminate_when_unhealthy;
    return (forward + survive) - (ctrl_cost + contact_cost);
  }

  void observe(const mjModel* m, const mjData* d, float* out) const {
    const int skip = p.exclude_current_positions_from_observation ? 2 : 0;
    out = put(out, d->qpos + skip, m->nq - skip);
    out = put(out, d->qvel, m->nv);
    if (p.include_cfrc_ext_in_observation)
      put(out, d->cfrc_ext + 6, 6 * (m->nbody - 1), p.contact_force_range[0], p.contact_force_range[1]);
  }
};

}  // namespace gmi::envs::mujoco
