#pragma once
/// \file
/// \brief Humanoid-v5 (Gymnasium `mujoco/humanoid_v5.py`): forward velocity of the mass centre's
/// x, a healthy reward while the root's z is in range, control cost (of mjData.ctrl) and a
/// clipped contact cost; observations qpos[2:], qvel, cinert, cvel (every body but the world),
/// qfrc_actuator[6:] and cfrc_ext.
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct Humanoid {
  static constexpr const char* kName = "Humanoid-v5";
  static constexpr const char* kXml = "humanoid.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static std::vector<std::string> terms() { return {"reward_forward", "reward_ctrl", "reward_contact", "reward_survive"}; }

  struct Params {
    int frame_skip = 5;
    double forward_reward_weight = 1.25, ctrl_cost_weight = 0.1, contact_cost_weight = 5e-7, healthy_reward = 5.0;
    Range contact_cost_range{-INFINITY, 10.0}, healthy_z_range{1.0, 2.0};
    bool terminate_when_unhealthy = true;
    double reset_noise_scale = 1e-2;
    bool exclude_current_positions_from_observation = true, include_cinert_in_observation = true,
         include_cvel_in_observation = true, include_qfrc_actuator_in_observation = true,
         include_cfrc_ext_in_observation = true;
  };
  /// `env` names the task in errors (DeviceHumanoid-v5 takes these too).
  static Params params(const Kwargs& k, const char* env = kName) {
    Params p;
    KwargReader r(k, env);
    GMI_MUJOCO_TAKE(r, p, frame_skip);
    GMI_MUJOCO_TAKE(r, p, forward_reward_weight);
    GMI_MUJOCO_TAKE(r, p, ctrl_cost_weight);
    GMI_MUJOCO_TAKE(r, p, contact_cost_weight);
    GMI_MUJOCO_TAKE(r, p, contact_cost_range);
    GMI_MUJOCO_TAKE(r, p, healthy_reward);
    GMI_MUJOCO_TAKE(r, p, terminate_when_unhealthy);
    GMI_MUJOCO_TAKE(r, p, healthy_z_range);
    GMI_MUJOCO_TAKE(r, p, reset_noise_scale);
    GMI_MUJOCO_TAKE(r, p, exclude_current_positions_from_observation);
    GMI_MUJOCO_TAKE(r, p, include_cinert_in_observation);
    GMI_MUJOCO_TAKE(r, p, include_cvel_in_observation);
    GMI_MUJOCO_TAKE(r, p, include_qfrc_actuator_in_observation);
    GMI_MUJOCO_TAKE(r, p, include_cfrc_ext_in_observation);
    r.done();
    return p;
  }
  explicit Humanoid(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const {
    const int bodies = m->nbody - 1;
    return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 2 : 0) +
           (p.include_cinert_in_observation ? 10 * bodies : 0) + (p.include_cvel_in_observation ? 6 * bodies : 0) +
           (p.include_qfrc_actuator_in_observation ? m->nv - 6 : 0) + (p.include_cfrc_ext_in_observation ? 6 * bodies : 0);
  }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, false); }
  void anchor(const mjModel* m, const mjData* d, double a[2]) const { mass_center(m, d, a); }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = forward_velocity(*this, m, d, a, p.frame_skip);
    const bool ok = strictly_inside(d->qpos[2], p.healthy_z_range);
    const double contact = clip(p.contact_cost_weight * sum_squares(d->cfrc_ext, 6 * m->nbody), p.contact_cost_range[0],
                                p.contact_cost_range[1]);
    const double forward = p.forward_reward_weight * x_velocity, survive = ok ? p.healthy_reward : 0.0;
    const double ctrl_cost = p.ctrl_cost_weight * sum_squares(d->ctrl, m->nu);
    terms[0] = forward, terms[1] = -ctrl_cost, terms[2] = -contact, terms[3] = survive;
    terminated = !ok && p.terminate_when_unhealthy;
    return (forward + survive) - (ctrl_cost + contact);
  }

  void observe(const mjModel* m, const mjData* d, float* out) const {
    const int skip = p.exclude_current_positions_from_observation ? 2 : 0, bodies = m->nbody - 1;
    out = put(out, d->qpos + skip, m->nq - skip);
    out = put(out, d->qvel, m->nv);
    if (p.include_cinert_in_observation) out = put(out, d->cinert + 10, 10 * bodies);
    if (p.include_cvel_in_observation) out = put(out, d->cvel + 6, 6 * bodies);
    if (p.include_qfrc_actuator_in_observation) out = put(out, d->qfrc_actuator + 6, m->nv - 6);
    if (p.include_cfrc_ext_in_observation) put(out, d->cfrc_ext + 6, 6 * bodies);
  }
};

}  // namespace gmi::envs::mujoco
