#pragma once
/// \file
/// \brief What the MuJoCo tasks share (one header per task beside this one): stepping the
/// simulation as Gymnasium's MujocoEnv does, reset noise from the counter-based generator, reward
/// and observation helpers, and checking the keyword arguments a task takes.
///
/// A task is a struct with kName, kXml, kMaxEpisodeSteps, terms() (the names of its reward terms,
/// Gymnasium's `info` keys), Params (v5 defaults) built by params(Kwargs), and
///   int obs_dim(m); void reset(m, d, noise); void anchor(m, d, a[2]);
///   double step(m, d, action, anchor, terms, terminated); void observe(m, d, out).
/// The "anchor" is the position the next step's forward velocity is measured from, kept per env
/// so that a checkpoint holds it (Gymnasium reads it from mjData before stepping, where xpos lags
/// qpos by one substep).
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/envs/mujoco/options.hpp"

namespace gmi::envs::mujoco {

/// Draws for one reset: episode k of global env g, from philox(seed, {k << 8 | block, tag}).
class Noise {
 public:
  Noise(std::uint64_t seed, std::uint64_t episode, std::uint64_t env) : seed_(seed), episode_(episode), env_(env) {}
  /// Uniform in [lo, hi), 53 random bits.
  double uniform(double lo, double hi);
  /// Standard normal (Box-Muller).
  double normal();

 private:
  std::uint32_t next();
  std::uint64_t seed_, episode_, env_;
  std::uint32_t bits_[4] = {0, 0, 0, 0};
  int used_ = 4, block_ = 0;
};

/// Gymnasium's MujocoEnv.do_simulation: ctrl = action, frame_skip mj_steps, then
/// mj_rnePostConstraint (cfrc_ext, cacc, cfrc_int for the next observation).
inline void simulate(const mjModel* m, mjData* d, const double* action, int frame_skip) {
  for (int k = 0; k < m->nu; ++k) d->ctrl[k] = action[k];
  for (int s = 0; s < frame_skip; ++s) mj_step(m, d);
  mj_rnePostConstraint(m, d);
}

/// qpos = qpos0 + U(-s, s); qvel = U(-s, s), or s * N(0, 1) with `normal_qvel` (HalfCheetah, Ant).
inline void reset_noise(const mjModel* m, mjData* d, Noise& n, double s, bool normal_qvel) {
  for (int k = 0; k < m->nq; ++k) d->qpos[k] = m->qpos0[k] + n.uniform(-s, s);
  for (int k = 0; k < m->nv; ++k) d->qvel[k] = normal_qvel ? s * n.normal() : n.uniform(-s, s);
}

inline double sum_squares(const double* x, int n) {
  double s = 0;
  for (int k = 0; k < n; ++k) s += x[k] * x[k];
  return s;
}
inline double clip(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }
inline bool strictly_inside(double x, const Range& r) { return r[0] < x && x < r[1]; }

/// Append n values (clipped to [lo, hi]) to the observation being written.
inline float* put(float* out, const double* x, int n, double lo = -INFINITY, double hi = INFINITY) {
  for (int k = 0; k < n; ++k) *out++ = float(clip(x[k], lo, hi));
  return out;
}

/// Reads the keyword arguments a task takes into its Params, each named once:
///   KwargReader r(kwargs, kName);
///   GMI_MUJOCO_TAKE(r, params, frame_skip);  // Kwargs::frame_skip, if set, into params.frame_skip
///   r.done();
/// done() throws gmi::InputError naming env.<key> for a set argument the task did not take (and
/// the ones it takes, in the order taken).
class KwargReader {
 public:
  KwargReader(const Kwargs& k, const char* env) : k_(k), env_(env) {}
  const Kwargs& kwargs() const { return k_; }
  template <class T>
  void take(const char* name, const std::optional<T>& v, T& field) {
    taken_.push_back(name);
    if (v) field = *v;
  }
  void done() const;

 private:
  const Kwargs& k_;
  const char* env_;
  std::vector<const char*> taken_;
};

/// Kwargs::name into params.name (a task's Params use the keyword arguments' names).
#define GMI_MUJOCO_TAKE(reader, params, name) (reader).take(#name, (reader).kwargs().name, (params).name)

/// The forward velocity of a step and the anchor moved on: (x of task.anchor() after the step -
/// x before) / (the model's timestep x frame_skip), as Gymnasium measures it.
template <class Task>
double forward_velocity(const Task& task, const mjModel* m, const mjData* d, double a[2], int frame_skip) {
  const double before = a[0];
  task.anchor(m, d, a);
  return (a[0] - before) / (m->opt.timestep * frame_skip);
}

/// The mass-weighted centre of the bodies' inertial frames, x and y (Gymnasium's mass_center).
inline void mass_center(const mjModel* m, const mjData* d, double out[2]) {
  double mass = 0, x = 0, y = 0;
  for (int b = 0; b < m->nbody; ++b) {
    mass += m->body_mass[b];
    x += m->body_mass[b] * d->xipos[3 * b];
    y += m->body_mass[b] * d->xipos[3 * b + 1];
  }
  out[0] = x / mass;
  out[1] = y / mass;
}

}  // namespace gmi::envs::mujoco
