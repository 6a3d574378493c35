#pragma once
/// \file
/// \brief HalfCheetah-v5 (Gymnasium `mujoco/half_cheetah_v5.py`): forward velocity of the root's x
/// minus control cost, never terminates; observations qpos[1:] and qvel; reset noise uniform on
/// qpos, normal on qvel.
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct HalfCheetah {
  static constexpr const char* kName = "HalfCheetah-v5";
  static constexpr const char* kXml = "half_cheetah.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static std::vector<std::string> terms() { return {"reward_forward", "reward_ctrl"}; }

  struct Params {
    int frame_skip = 5;
    double forward_reward_weight = 1.0, ctrl_cost_weight = 0.1, reset_noise_scale = 0.1;
    bool exclude_current_positions_from_observation = true;
  };
  static Params params(const Kwargs& k) {
    check_kwargs(k, kName, {"frame_skip", "forward_reward_weight", "ctrl_cost_weight", "reset_noise_scale",
                            "exclude_current_positions_from_observation"});
    Params p;
    take(k.frame_skip, p.frame_skip);
    take(k.forward_reward_weight, p.forward_reward_weight);
    take(k.ctrl_cost_weight, p.ctrl_cost_weight);
    take(k.reset_noise_scale, p.reset_noise_scale);
    take(k.exclude_current_positions_from_observation, p.exclude_current_positions_from_observation);
    return p;
  }
  explicit HalfCheetah(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const { return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 1 : 0); }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, true); }
  void anchor(const mjModel*, const mjData* d, double a[2]) const { a[0] = d->qpos[0], a[1] = 0; }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = (d->qpos[0] - a[0]) / (m->opt.timestep * p.frame_skip);
    anchor(m, d, a);
    terms[0] = p.forward_reward_weight * x_velocity;
    terms[1] = -p.ctrl_cost_weight * sum_squares(action, m->nu);
    terminated = false;
    return terms[0] + terms[1];
  }

  void observe(const mjModel* m, const mjData* d, float* out) const {
    const int skip = p.exclude_current_positions_from_observation ? 1 : 0;
    out = put(out, d->qpos + skip, m->nq - skip);
    put(out, d->qvel, m->nv);
  }
};

}  // namespace gmi::envs::mujoco
