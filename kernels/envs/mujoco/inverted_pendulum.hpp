#pragma once
/// \file
/// \brief InvertedPendulum-v5 (Gymnasium `mujoco/inverted_pendulum_v5.py`): reward 1 while the
/// pole stays within 0.2 rad, terminated when it leaves (or the state is not finite); observations
/// qpos and qvel.
#include "kernels/envs/mujoco/task.hpp"

namespace gmi::envs::mujoco {

struct InvertedPendulum {
  static constexpr const char* kName = "InvertedPendulum-v5";
  static constexpr const char* kXml = "inverted_pendulum.xml";
  static constexpr int kMaxEpisodeSteps = 1000;
  static std::vector<std::string> terms() { return {"reward_survive"}; }

  struct Params {
    int frame_skip = 2;
    double reset_noise_scale = 0.01;
  };
  static Params params(const Kwargs& k) {
    Params p;
    KwargReader r(k, kName);
    GMI_MUJOCO_TAKE(r, p, frame_skip);
    GMI_MUJOCO_TAKE(r, p, reset_noise_scale);
    r.done();
    return p;
  }
  explicit InvertedPendulum(const Params& params) : p(params) {}
  Params p;

  int obs_dim(const mjModel* m) const { return m->nq + m->nv; }
  void reset(const mjModel* m, mjData* d, Noise& n) const { reset_noise(m, d, n, p.reset_noise_scale, false); }
  void anchor(const mjModel*, const mjData*, double a[2]) const { a[0] = a[1] = 0; }

  double step(const mjModel* m, mjData* d, const double* action, double*, double* terms, bool& terminated) const {
    simulate(m, d, action, p.frame_skip);
    bool finite = true;
    for (int k = 0; k < m->nq; ++k) finite = finite && std::isfinite(d->qpos[k]);
    for (int k = 0; k < m->nv; ++k) finite = finite && std::isfinite(d->qvel[k]);
    terminated = !finite || std::fabs(d->qpos[1]) > 0.2;
    terms[0] = terminated ? 0.0 : 1.0;
    return terms[0];
  }

  void observe(const mjModel* m, const mjData* d, float* out) const {
    out = put(out, d->qpos, m->nq);
    put(out, d->qvel, m->nv);
  }
};

}  // namespace gmi::envs::mujoco
