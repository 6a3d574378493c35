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
  static Params params(const Kwargs& k) {
    check_kwargs(k, kName, {"frame_skip", "forward_reward_weight", "ctrl_cost_weight", "contact_cost_weight",
                            "contact_cost_range", "healthy_reward", "terminate_when_unhealthy", "healthy_z_range",
                            "reset_noise_scale", "exclude_current_positions_from_observation",
                            "include_cinert_in_observation", "include_cvel_in_observation",
                            "include_qfrc_actuator_in_observation", "include_cfrc_ext_in_observation"});
    Params p;
    take(k.frame_skip, p.frame_skip);
    take(k.forward_reward_weight, p.forward_reward_weight);
    take(k.ctrl_cost_weight, p.ctrl_cost_weight);
    take(k.contact_cost_weight, p.contact_cost_weight);
    take(k.contact_cost_range, p.contact_cost_range);
    take(k.healthy_reward, p.healthy_reward);
    take(k.terminate_when_unhealthy, p.terminate_when_unhealthy);
    take(k.healthy_z_range, p.healthy_z_range);
    take(k.reset_noise_scale, p.reset_noise_scale);
    take(k.exclude_current_positions_from_observation, p.exclude_current_positions_from_observation);
    take(k.include_cinert_in_observation, p.include_cinert_in_observation);
    take(k.include_cvel_in_observation, p.include_cvel_in_observation);
    take(k.include_qfrc_actuator_in_observation, p.include_qfrc_actuator_in_observation);
    take(k.include_cfrc_ext_in_observation, p.include_cfrc_ext_in_observation);
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
    double after[2];
    mass_center(m, d, after);
    const double x_velocity = (after[0] - a[0]) / (m->opt.timestep * p.frame_skip);
    a[0] = after[0], a[1] = after[1];
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
