// The device physics pipeline (kernels/physics) step by step against mj_step of MuJoCo's C library:
// states from resets and along random-action trajectories of the C library, one step of the
// pipeline (double and float) from each, compared with one mj_step from the same state.  Also the
// smooth quantities behind a step (body poses, qfrc_smooth, qacc_smooth) and the refusals of what
// the pipeline does not compute.
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/physics/batch.hpp"

namespace gmi::physics {
namespace {

struct ModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
using OwnedModel = std::unique_ptr<mjModel, ModelDeleter>;

/// Gymnasium's model named by `spec`: "ant.xml", then options after colons: "euler" (its
/// integrator replaced by Euler), "limits" (contacts off, limits and the rest of the constraint
/// solver on), "full" (the model as it is: contacts and limits); with neither the whole
/// constraint solver is off.
OwnedModel smooth_model(const std::string& spec) {
  const auto colon = spec.find(':');
  auto shared = envs::mujoco::load_model(spec.substr(0, colon), "");
  OwnedModel m(mj_copyModel(nullptr, shared.get()));
  const std::string opts = colon == std::string::npos ? "" : spec.substr(colon);
  if (opts.find(":full") == std::string::npos)
    m->opt.disableflags |= opts.find(":limits") != std::string::npos ? mjDSBL_CONTACT : mjDSBL_CONSTRAINT;
  if (opts.find(":euler") != std::string::npos) m->opt.integrator = mjINT_EULER;
  return m;
}

/// A state of the C library: qpos, qvel, ctrl.
struct State {
  std::vector<double> qpos, qvel, ctrl;
};

/// `count` states: resets with noise, then every 7th state along random-action trajectories, from
/// step `first` of each on (later states: an Ant that has landed on the floor).
std::vector<State> states_of(const mjModel* m, int count, unsigned seed, int first = 0) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  mjData* d = mj_makeData(m);
  std::vector<State> out;
  while (int(out.size()) < count) {
    mj_resetData(m, d);
    for (int i = 0; i < m->nq; ++i) d->qpos[i] += 0.1 * u(g);
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = 0.5 * u(g);
    mj_normalizeQuat(m, d->qpos);
    for (int t = 0; t < first + 60 && int(out.size()) < count; ++t) {
      for (int k = 0; k < m->nu; ++k) {
        const double lo = m->actuator_ctrllimited[k] ? m->actuator_ctrlrange[2 * k] : -1;
        const double hi = m->actuator_ctrllimited[k] ? m->actuator_ctrlrange[2 * k + 1] : 1;
        d->ctrl[k] = lo + (hi - lo) * 0.5 * (u(g) + 1.0) * 1.2 - 0.1 * (hi - lo);  // some beyond the range
      }
      if (t >= first && t % 7 == 0)
        out.push_back(State{{d->qpos, d->qpos + m->nq}, {d->qvel, d->qvel + m->nv}, {d->ctrl, d->ctrl + m->nu}});
      mj_step(m, d);
    }
  }
  mj_deleteData(d);
  return out;
}

template <class T>
void put(typename Batch<T>::Array v, int i, const std::vector<double>& x, typename Batch<T>::Array::HostMirror& h) {
  for (std::size_t k = 0; k < x.size(); ++k) h(i, k) = T(x[k]);
}

/// A batch of `m`, one env per state, set to the states.
template <class T>
Batch<T> batch_at(const mjModel* m, const std::vector<State>& states) {
  const int n = int(states.size());
  Batch<T> batch(from_mujoco<T>(m, "test"), n);
  auto hq = Kokkos::create_mirror_view(batch.qpos), hv = Kokkos::create_mirror_view(batch.qvel),
       hc = Kokkos::create_mirror_view(batch.ctrl);
  for (int i = 0; i < n; ++i) {
    put<T>(batch.qpos, i, states[i].qpos, hq), put<T>(batch.qvel, i, states[i].qvel, hv);
    put<T>(batch.ctrl, i, states[i].ctrl, hc);
  }
  Kokkos::deep_copy(batch.qpos, hq), Kokkos::deep_copy(batch.qvel, hv), Kokkos::deep_copy(batch.ctrl, hc);
  return batch;
}

/// The largest |a - b| / (atol + rtol |b|) over all entries: <= 1 passes.
struct Worst {
  double ratio = 0, a = 0, b = 0;
  int state = -1, index = -1;
  void see(double x, double ref, double atol, double rtol, int s, int k) {
    const double r = std::fabs(x - ref) / (atol + rtol * std::fabs(ref));
    if (!(r <= ratio)) *this = Worst{std::isnan(r) ? 1e300 : r, x, ref, s, k};
  }
};

/// Tolerances for one step: |error| <= atol + rtol |reference|, and for velocities also
/// + dv times the state's largest velocity change in the step (the part an acceleration error
/// scales with); positions, which move by the time step times the new velocities, also + h dv
/// times that change.
struct Tol {
  double qpos_atol, qpos_rtol, qvel_atol, qvel_rtol, dv = 0;
};

/// One pipeline step from each state against one mj_step; returns the worst entries.
template <class T>
std::pair<Worst, Worst> compare_step(const mjModel* m, const std::vector<State>& states, const Tol& tol) {
  const int n = int(states.size());
  Batch<T> batch = batch_at<T>(m, states);
  ExecSpace space;
  batch.step(space, 1);
  space.fence();
  auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), batch.qpos);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), batch.qvel);
  mjData* d = mj_makeData(m);
  Worst wq, wv;
  int touching = 0;
  for (int i = 0; i < n; ++i) {
    mj_resetData(m, d);
    std::copy(states[i].qpos.begin(), states[i].qpos.end(), d->qpos);
    std::copy(states[i].qvel.begin(), states[i].qvel.end(), d->qvel);
    std::copy(states[i].ctrl.begin(), states[i].ctrl.end(), d->ctrl);
    mj_step(m, d);
    touching += d->ncon > 0;
    double dv = 0;
    for (int k = 0; k < m->nv; ++k) dv = std::max(dv, std::fabs(d->qvel[k] - states[i].qvel[k]));
    const double pos_dv = m->opt.timestep * tol.dv * dv;  // positions move by h times the new velocity
    for (int k = 0; k < m->nq; ++k) wq.see(hq(i, k), d->qpos[k], tol.qpos_atol + pos_dv, tol.qpos_rtol, i, k);
    for (int k = 0; k < m->nv; ++k) wv.see(hv(i, k), d->qvel[k], tol.qvel_atol + tol.dv * dv, tol.qvel_rtol, i, k);
  }
  mj_deleteData(d);
  if (!(m->opt.disableflags & (mjDSBL_CONSTRAINT | mjDSBL_CONTACT))) {
    std::printf("  %d of %d states with contacts after the step\n", touching, n);
    EXPECT_GE(touching, n / 8) << "too few states exercise contacts";
  }
  return {wq, wv};
}

std::string describe(const char* what, const Worst& w) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: worst %.3g of tolerance at state %d, index %d: %.9g vs mj_step %.9g", what,
                w.ratio, w.state, w.index, w.a, w.b);
  return buf;
}

/// The forward dynamics at each state against mj_forward's: body positions, qfrc_smooth, qacc_smooth.
template <class T>
std::vector<Worst> compare_forward(const mjModel* m, const std::vector<State>& states, double atol, double rtol) {
  const int n = int(states.size());
  Batch<T> batch = batch_at<T>(m, states);
  ExecSpace space;
  batch.forward(space);
  space.fence();
  auto ws = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), batch.scratch);
  const Layout& L = batch.model().layout;
  mjData* d = mj_makeData(m);
  std::vector<Worst> w(5);
  for (int i = 0; i < n; ++i) {
    mj_resetData(m, d);
    std::copy(states[i].qpos.begin(), states[i].qpos.end(), d->qpos);
    std::copy(states[i].qvel.begin(), states[i].qvel.end(), d->qvel);
    std::copy(states[i].ctrl.begin(), states[i].ctrl.end(), d->ctrl);
    mj_forward(m, d);
    for (int k = 0; k < 3 * m->nbody; ++k) w[0].see(ws(i, L.xpos + k), d->xpos[k], atol, rtol, i, k);
    for (int k = 0; k < m->nv; ++k) w[1].see(ws(i, L.qfrc + k), d->qfrc_smooth[k], atol, rtol, i, k);
    for (int k = 0; k < m->nv; ++k) w[2].see(ws(i, L.qacc_smooth + k), d->qacc_smooth[k], atol, rtol, i, k);
    for (int k = 0; k < m->nv; ++k) w[3].see(ws(i, L.qacc + k), d->qacc[k], atol, rtol, i, k);
    for (int k = 0; k < m->nv; ++k) w[4].see(ws(i, L.qfrc_constraint + k), d->qfrc_constraint[k], atol, rtol, i, k);
  }
  mj_deleteData(d);
  return w;
}

/// Where a model's sampled states start along their trajectories: with contacts ("full"), after
/// 1.2 s of simulated time, by when the bodies have fallen onto the floor.
int first_step(const std::string& spec) {
  if (spec.find(":full") == std::string::npos) return 0;
  OwnedModel m = smooth_model(spec);
  return int(1.2 / m->opt.timestep);
}

class SmoothStep : public ::testing::TestWithParam<const char*> {};

/// The model for the double-precision checks: a model with MuJoCo's PGS solver (Humanoid) gets
/// Newton instead, since PGS stops after its iteration limit ~1e-8 short of the constraint
/// problem's minimiser, which the pipeline finds (the float checks keep the model's PGS).
OwnedModel exact_model(const std::string& spec) {
  OwnedModel m = smooth_model(spec);
  if (m->opt.solver == mjSOL_PGS) m->opt.solver = mjSOL_NEWTON;
  return m;
}

// Double precision: the same computation as MuJoCo's up to rounding, so the step agrees to 1e-9.
TEST_P(SmoothStep, DoubleMatchesMjStep) {
  OwnedModel m = exact_model(GetParam());
  const auto states = states_of(m.get(), 48, 1, first_step(GetParam()));
  const auto [wq, wv] = compare_step<double>(m.get(), states, Tol{1e-9, 1e-9, 1e-9, 1e-9});
  std::printf("%s double  %s\n%s double  %s\n", GetParam(), describe("qpos", wq).c_str(), GetParam(),
              describe("qvel", wv).c_str());
  EXPECT_LE(wq.ratio, 1.0) << describe("qpos", wq);
  EXPECT_LE(wv.ratio, 1.0) << describe("qvel", wv);
}

TEST_P(SmoothStep, DoubleForwardMatchesMjForward) {
  OwnedModel m = exact_model(GetParam());
  const auto states = states_of(m.get(), 48, 2, first_step(GetParam()));
  const auto w = compare_forward<double>(m.get(), states, 1e-9, 1e-9);
  const char* what[] = {"xpos", "qfrc_smooth", "qacc_smooth", "qacc", "qfrc_constraint"};
  for (int k = 0; k < 5; ++k) {
    std::printf("%s double  %s\n", GetParam(), describe(what[k], w[k]).c_str());
    EXPECT_LE(w[k].ratio, 1.0) << describe(what[k], w[k]);
  }
}

// Single precision, what the pipeline runs on the GPU.  Positions: 1e-6 (1 + |q|), about 8 float
// ulps, since a step adds h v (small) to q and rounds a few times, plus h times the velocities'
// allowance below for the velocity they move with.  Velocities: 1e-6 (1 + |v|) for
// the same roundings, plus 1e-4 of the step's largest velocity change: that change is h qacc, and
// qacc solves M qacc = f with M's condition number up to ~1e3 in these models (light armatures
// beside an 8 kg torso), so its relative float error is about 1e3 eps = 1.2e-4 at worst (measured:
// at most 0.2 of this tolerance, humanoid).
TEST_P(SmoothStep, FloatMatchesMjStep) {
  OwnedModel m = smooth_model(GetParam());
  const auto states = states_of(m.get(), 48, 3, first_step(GetParam()));
  const auto [wq, wv] = compare_step<float>(m.get(), states, Tol{1e-6, 1e-6, 1e-6, 1e-6, 1e-4});
  std::printf("%s float  %s\n%s float  %s\n", GetParam(), describe("qpos", wq).c_str(), GetParam(),
              describe("qvel", wv).c_str());
  EXPECT_LE(wq.ratio, 1.0) << describe("qpos", wq);
  EXPECT_LE(wv.ratio, 1.0) << describe("qvel", wv);
}

// Many steps in one launch (a task's frame skip) are those steps one at a time, with and without
// contacts.
TEST(Physics, SubstepsInOneLaunchAreSingleSteps) {
  for (const char* spec : {"ant.xml", "ant.xml:full"}) {
    OwnedModel m = smooth_model(spec);
    const auto states = states_of(m.get(), 8, 4, first_step(spec));
    Batch<float> a = batch_at<float>(m.get(), states), b = batch_at<float>(m.get(), states);
    ExecSpace space;
    a.step(space, 5);
    for (int s = 0; s < 5; ++s) b.step(space, 1);
    space.fence();
    auto qa = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.qpos),
         qb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.qpos);
    auto va = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.qvel),
         vb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.qvel);
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < m->nq; ++k) EXPECT_EQ(qa(i, k), qb(i, k)) << spec << " " << i << " " << k;
      for (int k = 0; k < m->nv; ++k) EXPECT_EQ(va(i, k), vb(i, k)) << spec << " " << i << " " << k;
    }
  }
}

// The float solver stops on its own tests, never at the iteration limit, along 100 time steps of
// random controls from states on the floor (the limit would mean a stopping rule that float
// rounding never satisfies, as the old floor on the cost's rounding was).
TEST(Physics, FloatSolverStopsBeforeItsIterationLimit) {
  for (const char* spec : {"ant.xml:full", "humanoid.xml:full", "hopper.xml:full"}) {
    OwnedModel m = smooth_model(spec);
    const auto states = states_of(m.get(), 48, 8, first_step(spec));
    Batch<float> batch = batch_at<float>(m.get(), states);
    ExecSpace space;
    std::mt19937 g(9);
    std::uniform_real_distribution<float> u(-1.2f, 1.2f);
    auto hc = Kokkos::create_mirror_view(batch.ctrl);
    for (int t = 0; t < 20; ++t) {
      for (int i = 0; i < batch.size(); ++i)
        for (int k = 0; k < m->nu; ++k) hc(i, k) = u(g) * float(m->actuator_ctrlrange[2 * k + 1]);
      Kokkos::deep_copy(batch.ctrl, hc);
      batch.step(space, 5);
    }
    space.fence();
    auto ws = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), batch.scratch);
    float most = 0;
    for (int i = 0; i < batch.size(); ++i) most = std::max(most, ws(i, batch.model().layout.solver_iterations));
    std::printf("%s float: at most %.0f Newton passes per solve (limit %d)\n", spec, most, m->opt.iterations);
    EXPECT_GT(most, 0.0f) << spec << ": no solve ran";
    // measured 5-7; a solve that needs 20 has lost Newton's convergence (the limit is 50-100)
    EXPECT_LE(most, 20.0f) << spec << ": a solve took more than 20 Newton passes";
  }
}

// A bad control (NaN, or beyond 1e10 after clamping) sets every control to zero for the step, as
// MuJoCo does (mjWARN_BADCTRL), instead of spreading NaN through the state.
TEST(Physics, BadControlsActAsZeroAsInMuJoCo) {
  for (const char* spec : {"ant.xml:full", "humanoid.xml:full"}) {
    OwnedModel m = exact_model(spec);
    auto states = states_of(m.get(), 8, 6, first_step(spec));
    for (std::size_t i = 0; i < states.size(); ++i) states[i].ctrl[i % m->nu] = i % 2 ? NAN : -INFINITY;
    const auto [wq, wv] = compare_step<double>(m.get(), states, Tol{1e-9, 1e-9, 1e-9, 1e-9});
    EXPECT_LE(wq.ratio, 1.0) << spec << " " << describe("qpos", wq);
    EXPECT_LE(wv.ratio, 1.0) << spec << " " << describe("qvel", wv);
    // without control clamping a control beyond 1e10 is bad too (a limited one is clamped first)
    m->opt.disableflags |= mjDSBL_CLAMPCTRL;
    for (std::size_t i = 0; i < states.size(); ++i) states[i].ctrl[i % m->nu] = i % 2 ? 2e10 : -0.5;
    const auto [cq, cv] = compare_step<double>(m.get(), states, Tol{1e-9, 1e-9, 1e-9, 1e-9});
    EXPECT_LE(cq.ratio, 1.0) << spec << " unclamped " << describe("qpos", cq);
    EXPECT_LE(cv.ratio, 1.0) << spec << " unclamped " << describe("qvel", cv);
  }
}

// A bad position or velocity (NaN, or beyond 1e10), or one that makes a bad acceleration, resets
// the state to qpos0 at rest with no control before the step, as mj_step does.
TEST(Physics, BadStatesResetAsInMuJoCo) {
  for (const char* spec : {"ant.xml:full", "ant.xml:euler", "humanoid.xml:full"}) {
    OwnedModel m = exact_model(spec);
    auto states = states_of(m.get(), 6, 7, first_step(spec));
    states[0].qvel[3] = NAN;
    states[1].qpos[0] = 2e10;
    states[2].qvel[m->nv - 1] = 1e9;  // usable itself, but its acceleration is not
    states[3].qpos[m->nq - 1] = -INFINITY;
    const auto [wq, wv] = compare_step<double>(m.get(), states, Tol{1e-9, 1e-9, 1e-9, 1e-9});
    EXPECT_LE(wq.ratio, 1.0) << spec << " " << describe("qpos", wq);
    EXPECT_LE(wv.ratio, 1.0) << spec << " " << describe("qvel", wv);
  }
  // With the model's automatic reset disabled, MuJoCo steps the bad state on (NaN stays NaN).
  OwnedModel m = exact_model("ant.xml:full");
  m->opt.disableflags |= mjDSBL_AUTORESET;
  auto states = states_of(m.get(), 2, 7, first_step("ant.xml:full"));
  states[0].qvel[3] = NAN;
  Batch<double> batch = batch_at<double>(m.get(), states);
  ExecSpace space;
  batch.step(space, 1);
  space.fence();
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), batch.qvel);
  mjData* d = mj_makeData(m.get());
  std::copy(states[0].qpos.begin(), states[0].qpos.end(), d->qpos);
  std::copy(states[0].qvel.begin(), states[0].qvel.end(), d->qvel);
  mj_step(m.get(), d);
  EXPECT_TRUE(std::isnan(d->qvel[3])) << "MuJoCo reset the state although the model disables it";
  EXPECT_TRUE(std::isnan(hv(0, 3))) << "the pipeline reset the state although the model disables it";
  EXPECT_FALSE(std::isnan(hv(1, 3)));
  mj_deleteData(d);
}

// Contact forces after a step (what the tasks observe and pay for) are mj_rnePostConstraint's
// cfrc_ext after mj_step: Ant standing on the floor, RK4 (forces of the step's last stage) and Euler.
template <class T>
void check_external_forces(const char* spec, double atol, double rtol) {
  OwnedModel m = exact_model(spec);
  const auto states = states_of(m.get(), 96, 5, first_step(spec));
  const int n = int(states.size());
  Batch<T> batch = batch_at<T>(m.get(), states);
  ExecSpace space;
  batch.step(space, 1);
  batch.external_forces(space);
  space.fence();
  auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), batch.cfrc_ext);
  mjData* d = mj_makeData(m.get());
  Worst w;
  int touching = 0;
  for (int i = 0; i < n; ++i) {
    mj_resetData(m.get(), d);
    std::copy(states[i].qpos.begin(), states[i].qpos.end(), d->qpos);
    std::copy(states[i].qvel.begin(), states[i].qvel.end(), d->qvel);
    std::copy(states[i].ctrl.begin(), states[i].ctrl.end(), d->ctrl);
    mj_step(m.get(), d);
    mj_rnePostConstraint(m.get(), d);
    touching += d->ncon > 0;
    for (int k = 0; k < 6 * m->nbody; ++k) w.see(f(i, k), d->cfrc_ext[k], atol, rtol, i, k);
  }
  mj_deleteData(d);
  std::printf("%s %s  %s (%d of %d states touching)\n", spec, sizeof(T) == 8 ? "double" : "float",
              describe("cfrc_ext", w).c_str(), touching, n);
  EXPECT_GE(touching, n / 8);  // a random-action Ant touches the floor in about a quarter of its states
  EXPECT_LE(w.ratio, 1.0) << describe("cfrc_ext", w);
}

TEST(Physics, ExternalForcesAreMjRnePostConstraints) {
  check_external_forces<double>("ant.xml:full", 1e-7, 1e-7);
  check_external_forces<double>("ant.xml:full:euler", 1e-7, 1e-7);
  // float: a contact force is D times a violation, so its error is the acceleration's relative
  // error (1e-4 of the tolerances above) scaled by the force
  check_external_forces<float>("ant.xml:full", 1e-3, 1e-3);
  check_external_forces<double>("humanoid.xml:full", 1e-7, 1e-7);  // capsules against capsules too
}

/// The message of the InputError from_mujoco throws for `m`, or "" if it accepts it.
std::string refusal(const mjModel* m) {
  try {
    from_mujoco<float>(m, "the model");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// What the pipeline does not compute is refused with one line naming it, never run wrong.
TEST(Physics, RefusesWhatItDoesNotCompute) {
  OwnedModel boxes = smooth_model("ant.xml:full");  // a box against the floor
  boxes->geom_type[1] = mjGEOM_BOX;
  EXPECT_NE(refusal(boxes.get()).find("collision between geoms"), std::string::npos) << refusal(boxes.get());
  OwnedModel elliptic = smooth_model("ant.xml:full");
  elliptic->opt.cone = mjCONE_ELLIPTIC;
  EXPECT_NE(refusal(elliptic.get()).find("elliptic"), std::string::npos) << refusal(elliptic.get());
  OwnedModel swimmer = smooth_model("swimmer.xml");
  EXPECT_NE(refusal(swimmer.get()).find("fluid forces"), std::string::npos) << refusal(swimmer.get());
  OwnedModel implicit = smooth_model("ant.xml");
  implicit->opt.integrator = mjINT_IMPLICITFAST;
  EXPECT_NE(refusal(implicit.get()).find("integrator 3"), std::string::npos) << refusal(implicit.get());
  for (const char* spec : {"ant.xml", "ant.xml:full", "humanoid.xml:limits", "humanoid.xml:full"}) {
    OwnedModel ok = smooth_model(spec);
    EXPECT_EQ(refusal(ok.get()), "") << spec;
  }
  OwnedModel groups = smooth_model("ant.xml:full");
  groups->opt.disableactuator = 1;
  EXPECT_NE(refusal(groups.get()).find("disabled actuator groups"), std::string::npos) << refusal(groups.get());
  OwnedModel armature = smooth_model("humanoid.xml:full");
  armature->tendon_armature[0] = 0.1;
  EXPECT_NE(refusal(armature.get()).find("tendon armature"), std::string::npos) << refusal(armature.get());
  OwnedModel speculative = smooth_model("ant.xml:full");
  speculative->opt.enableflags |= mjENBL_SPECULATIVE;
  EXPECT_NE(refusal(speculative.get()).find("speculative"), std::string::npos) << refusal(speculative.get());
  const std::string msg = refusal(swimmer.get());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  EXPECT_NE(msg.find("'the model'"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Gymnasium, SmoothStep,
                         ::testing::Values("ant.xml:full", "ant.xml:full:euler", "walker2d.xml:full", "hopper.xml:full",
                                           "humanoid.xml:full", "half_cheetah.xml:full", "ant.xml", "ant.xml:euler",
                                           "ant.xml:limits", "ant.xml:limits:euler", "humanoid.xml",
                                           "humanoid.xml:euler", "humanoid.xml:limits", "half_cheetah.xml:limits",
                                           "hopper.xml:limits", "walker2d.xml:limits", "reacher.xml:limits",
                                           "half_cheetah.xml", "hopper.xml", "walker2d.xml", "inverted_pendulum.xml",
                                           "inverted_double_pendulum.xml", "reacher.xml", "pusher.xml"));

}  // namespace
}  // namespace gmi::physics
