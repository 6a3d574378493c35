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
    Params p;
    KwargReader r(k, kName);
    GMI_MUJOCO_TAKE(r, p, frame_skip);
    GMI_MUJOCO_TAKE(r, p, forward_reward_weight);
    GMI_MUJOCO_TAKE(r, p, ctrl_cost_weight);
    GMI_MUJOCO_TAKE(r, p, reset_noise_scale);
    GMI_MUJOCO_TAKE(r, p, exclude_current_positions_from_observation);
    r.done();
    return p;
  }
  explicit HalfCheetah(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const { return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 1 : 0); }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, true); }
  void anchor(const mjModel*, const mjData* d, double a[2]) const { a[0] = d->qpos[0], a[1] = 0; }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = forward_velocity(*this, m, d, a, p.frame_skip);
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
