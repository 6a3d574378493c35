#pragma once
/// \file
/// \brief Swimmer-v5 (Gymnasium `mujoco/swimmer_v5.py`): forward velocity of the root's x minus
/// control cost, never terminates; observations qpos[2:] and qvel.
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct Swimmer {
  static constexpr const char* kName = "Swimmer-v5";
  static constexpr const char* kXml = "swimmer.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static std::vector<std::string> terms() { return {"reward_forward", "reward_ctrl"}; }

  struct Params {
    int frame_skip = 4;
    double forward_reward_weight = 1.0, ctrl_cost_weight = 1e-4, reset_noise_scale = 0.1;
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
  explicit Swimmer(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const { return m->nq + m->nv - (p.exclude_current_positions_from_observation ? 2 : 0); }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, false); }
  void anchor(const mjModel*, const mjData* d, double a[2]) const { a[0] = d->qpos[0], a[1] = d->qpos[1]; }

  double step(const mjModel* m, mjData* d, const double* action, double a[2], double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    const double x_velocity = forward_velocity(*this, m, d, a, p.frame_skip);
    terms[0] = p.forward_reward_weight * x_velocity;
    terms[1] = -p.ctrl_cost_weight * sum_squares(action, m->nu);
    terminated = false;
    return terms[0] + terms[1];
  }

  void observe(const mjModel* m, const mjData* d, float* out) const {
    const int skip = p.exclude_current_positions_from_observation ? 2 : 0;
    out = put(out, d->qpos + skip, m->nq - skip);
    put(out, d->qvel, m->nv);
  }
};

}  // namespace gmi::envs::mujoco
