// The device model from an mjModel: what the pipeline computes is copied, anything else refused.
#include "kernels/physics/model.hpp"

#include <fmt/format.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/core/error.hpp"

namespace gmi::physics {

namespace {

template <class U, class S>
Kokkos::View<U*, MemSpace> upload(const char* label, const S* src, std::size_t n) {
  Kokkos::View<U*, MemSpace> v(std::string("gmi::physics::") + label, n);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < n; ++i) h(i) = U(src[i]);
  Kokkos::deep_copy(v, h);
  return v;
}
template <class U>
Kokkos::View<U*, MemSpace> upload(const char* label, const std::vector<U>& src) {
  return upload<U>(label, src.data(), src.size());
}

/// One refusal: the model, the feature, and what the pipeline does instead.
struct Refuse {
  const std::string& name;
  [[noreturn]] void operator()(const std::string& what) const {
    throw InputError(
        fmt::format("physics: model '{}': {} is not computed by the device pipeline "
                    "(kernels/physics/README.md lists what is)",
                    name, what));
  }
};

bool any_nonzero(const mjtNum* a, mjtSize n0) {
  const std::size_t n = std::size_t(n0);
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != 0) return true;
  return false;
}

void check_options(const mjModel* m, const Refuse& refuse) {
  const mjOption& o = m->opt;
  if (o.integrator != mjINT_EULER && o.integrator != mjINT_RK4)
    refuse(fmt::format("integrator {} (Euler and RK4 are)", o.integrator));
  const bool on = !(o.disableflags & mjDSBL_CONSTRAINT);
  if (on && !(o.disableflags & mjDSBL_CONTACT)) {
    if (m->npair > 0 || m->nexclude > 0) refuse("an explicit contact pair or exclusion");
    if (o.cone != mjCONE_PYRAMIDAL) refuse("the elliptic friction cone");
    if (o.enableflags & mjENBL_OVERRIDE) refuse("overridden contact parameters");
  }
  if (on && m->neq > 0 && !(o.disableflags & mjDSBL_EQUALITY)) refuse("an equality constraint");
  if (on && !(o.disableflags & mjDSBL_FRICTIONLOSS) &&
      (any_nonzero(m->dof_frictionloss, m->nv) || any_nonzero(m->tendon_frictionloss, m->ntendon)))
    refuse("friction loss");
  if (on && o.noslip_iterations > 0) refuse("the noslip solver");
  if (on && (o.enableflags & mjENBL_DIAGEXACT)) refuse("the exact constraint diagonal (mjENBL_DIAGEXACT)");
  if (o.density != 0 || o.viscosity != 0 || any_nonzero(o.wind, 3)) refuse("fluid forces (density, viscosity, wind)");
  if (o.enableflags & mjENBL_SLEEP) refuse("sleeping");
  if (m->nmocap > 0) refuse("a mocap body");
  if (m->nplugin > 0) refuse("a plugin");
  if (m->nflex > 0) refuse("a flex");
  if (m->flg_surfacevel) refuse("a geom's surface velocity");
  if (o.disableactuator != 0) refuse("disabled actuator groups (opt.disableactuator)");
  if (o.enableflags & mjENBL_SPECULATIVE) refuse("speculative contacts");
  if (any_nonzero(m->tendon_armature, m->ntendon)) refuse("tendon armature");
  if (m->na > 0) refuse("actuator activation state");
  if (any_nonzero(m->body_gravcomp, m->nbody)) refuse("gravity compensation");
  for (int t = 0; t < m->ntendon; ++t)
    if (m->tendon_stiffness[t] != 0 || m->tendon_damping[t] != 0 ||
        any_nonzero(m->tendon_stiffnesspoly + mjNPOLY * t, mjNPOLY) ||
        any_nonzero(m->tendon_dampingpoly + mjNPOLY * t, mjNPOLY))
      refuse(fmt::format("tendon {}'s spring or damper", t));
}

void check_joints(const mjModel* m, const Refuse& refuse) {
  for (int j = 0; j < m->njnt; ++j) {
    const int type = m->jnt_type[j];
    if (type == mjJNT_BALL) refuse(fmt::format("ball joint {}", j));
    if (type == mjJNT_FREE && (m->body_parentid[m->jnt_bodyid[j]] != 0 || m->body_jntnum[m->jnt_bodyid[j]] != 1))
      refuse(fmt::format("free joint {} below another body or beside other joints", j));
    if (type == mjJNT_FREE && (m->jnt_stiffness[j] != 0 || any_nonzero(m->jnt_pos + 3 * j, 3)))
      refuse(fmt::format("free joint {} with a spring or an anchor off the body origin", j));
    if (any_nonzero(m->jnt_stiffnesspoly + mjNPOLY * j, mjNPOLY) || m->jnt_plasticadr[j] >= 0)
      refuse(fmt::format("joint {}'s nonlinear or plastic spring", j));
    if (m->jnt_actfrclimited[j]) refuse(fmt::format("joint {}'s actuator force range", j));
  }
  for (int i = 0; i < m->nv; ++i)
    if (any_nonzero(m->dof_dampingpoly + mjNPOLY * i, mjNPOLY)) refuse(fmt::format("dof {}'s nonlinear damping", i));
}

/// Stiffness K and damping B of a row's reference acceleration from solref and solimp (in place:
/// solref and solimp made safe as MuJoCo makes them: one format, time constant at least two time
/// steps, impedances within [1e-4, 0.9999]).
std::pair<double, double> reference_gains(const mjModel* m, double* solref, double* solimp) {
  if ((solref[0] > 0) != (solref[1] > 0)) solref[0] = 0.02, solref[1] = 1;  // mixed format: MuJoCo's default
  if (!(m->opt.disableflags & mjDSBL_REFSAFE) && solref[0] > 0) solref[0] = std::max(solref[0], 2 * m->opt.timestep);
  for (int k : {0, 1, 3}) solimp[k] = std::min(mjMAXIMP, std::max(mjMINIMP, solimp[k]));
  solimp[2] = std::max(0.0, solimp[2]);
  solimp[4] = std::max(1.0, solimp[4]);
  const double dmax = solimp[1];
  const double K = solref[0] > 0 ? 1 / std::max(mjMINVAL, dmax * dmax * solref[0] * solref[0] * solref[1] * solref[1])
                                 : -solref[0] / std::max(mjMINVAL, dmax * dmax);
  const double B = solref[1] > 0 ? 2 / std::max(mjMINVAL, dmax * solref[0]) : -solref[1] / std::max(mjMINVAL, dmax);
  return {K, B};
}

/// The limits of joints and fixed tendons as rows' sources (Model::lim_*).
template <class T>
void add_limits(const mjModel* m, Model<T>& d, const Refuse& refuse) {
  std::vector<int> termadr, termnum, qposadr, dof;
  std::vector<T> coef, range, margin, diag, K, B, solimp;
  auto source = [&](double lo, double hi, double mg, double dA, const mjtNum* sref, const mjtNum* simp) {
    double r[2] = {sref[0], sref[1]}, i[5] = {simp[0], simp[1], simp[2], simp[3], simp[4]};
    const auto [k, b] = reference_gains(m, r, i);
    range.push_back(T(lo)), range.push_back(T(hi)), margin.push_back(T(mg)), diag.push_back(T(dA));
    K.push_back(T(k)), B.push_back(T(b));
    for (double v : i) solimp.push_back(T(v));
  };
  if (!(m->opt.disableflags & mjDSBL_LIMIT)) {
    for (int j = 0; j < m->njnt; ++j) {
      if (!m->jnt_limited[j]) continue;  // free and ball joints are refused before
      termadr.push_back(int(qposadr.size())), termnum.push_back(1);
      qposadr.push_back(m->jnt_qposadr[j]), dof.push_back(m->jnt_dofadr[j]), coef.push_back(T(1));
      source(m->jnt_range[2 * j], m->jnt_range[2 * j + 1], m->jnt_margin[j], m->dof_invweight0[m->jnt_dofadr[j]],
             m->jnt_solref + mjNREF * j, m->jnt_solimp + mjNIMP * j);
    }
    for (int t = 0; t < m->ntendon; ++t) {
      if (!m->tendon_limited[t]) continue;
      termadr.push_back(int(qposadr.size())), termnum.push_back(m->tendon_num[t]);
      for (int w = m->tendon_adr[t]; w < m->tendon_adr[t] + m->tendon_num[t]; ++w) {
        if (m->wrap_type[w] != mjWRAP_JOINT) refuse(fmt::format("tendon {}'s limit on a spatial tendon", t));
        const int j = m->wrap_objid[w];
        qposadr.push_back(m->jnt_qposadr[j]), dof.push_back(m->jnt_dofadr[j]), coef.push_back(T(m->wrap_prm[w]));
      }
      source(m->tendon_range[2 * t], m->tendon_range[2 * t + 1], m->tendon_margin[t], m->tendon_invweight0[t],
             m->tendon_solref_lim + mjNREF * t, m->tendon_solimp_lim + mjNIMP * t);
    }
  }
  d.nlim = int(termadr.size());
  d.lim_termadr = upload("lim_termadr", termadr), d.lim_termnum = upload("lim_termnum", termnum);
  d.term_qposadr = upload("term_qposadr", qposadr), d.term_dof = upload("term_dof", dof);
  d.term_coef = upload("term_coef", coef), d.lim_range = upload("lim_range", range);
  d.lim_margin = upload("lim_margin", margin), d.lim_diag = upload("lim_diag", diag);
  d.lim_K = upload("lim_K", K), d.lim_B = upload("lim_B", B), d.lim_solimp = upload("lim_solimp", solimp);
  d.nefc_max = 2 * d.nlim;
}

/// The candidate collision pairs, as MuJoCo's broad phase filters them before any geometry: two
/// bodies welded apart, not both without dofs, not parent and child (unless filtering is off or
/// one is the world), contype of one matching conaffinity of the other; the plane first.
template <class T>
void add_pairs(const mjModel* m, Model<T>& d, const Refuse& refuse) {
  std::vector<int> g1s, g2s, types, condims;
  std::vector<T> friction, margin, K, B, solimp, tran;
  const int dis = m->opt.disableflags;
  const bool on = !(dis & mjDSBL_CONSTRAINT) && !(dis & mjDSBL_CONTACT);
  for (int a = 0; on && a < m->ngeom; ++a)
    for (int b = a + 1; b < m->ngeom; ++b) {
      const int w1 = m->body_weldid[m->geom_bodyid[a]], w2 = m->body_weldid[m->geom_bodyid[b]];
      if (w1 == w2 || (m->body_dofnum[w1] == 0 && m->body_dofnum[w2] == 0)) continue;
      if (!(dis & mjDSBL_FILTERPARENT) && w1 != 0 && w2 != 0 &&
          (w1 == m->body_weldid[m->body_parentid[w2]] || w2 == m->body_weldid[m->body_parentid[w1]]))
        continue;
      if (!(m->geom_contype[a] & m->geom_conaffinity[b]) && !(m->geom_contype[b] & m->geom_conaffinity[a])) continue;
      int g1 = a, g2 = b;
      if (m->geom_type[g1] > m->geom_type[g2]) std::swap(g1, g2);
      const int t1 = m->geom_type[g1], t2 = m->geom_type[g2];
      const bool round2 = t2 == mjGEOM_SPHERE || t2 == mjGEOM_CAPSULE;
      if (!round2 || (t1 != mjGEOM_PLANE && t1 != mjGEOM_SPHERE && t1 != mjGEOM_CAPSULE))
        refuse(fmt::format("collision between geoms {} and {} (types {} and {}; planes, spheres and capsules are)", g1,
                           g2, t1, t2));
      const int type = t1 == mjGEOM_PLANE    ? (t2 == mjGEOM_SPHERE ? 0 : 1)
                       : t1 == mjGEOM_SPHERE ? (t2 == mjGEOM_SPHERE ? 2 : 3)
                                             : 4;  // PairType
      // parameters mixed as MuJoCo mixes them: the higher priority wins, else condim max,
      // solref/solimp weighted by solmix, friction max
      const int pr1 = m->geom_priority[g1], pr2 = m->geom_priority[g2];
      int condim;
      double sref[2], simp[5], fri[3];
      if (pr1 != pr2) {
        const int g = pr1 > pr2 ? g1 : g2;
        condim = m->geom_condim[g];
        for (int k = 0; k < 2; ++k) sref[k] = m->geom_solref[mjNREF * g + k];
        for (int k = 0; k < 5; ++k) simp[k] = m->geom_solimp[mjNIMP * g + k];
        for (int k = 0; k < 3; ++k) fri[k] = m->geom_friction[3 * g + k];
      } else {
        condim = std::max(m->geom_condim[g1], m->geom_condim[g2]);
        const double s1 = m->geom_solmix[g1], s2 = m->geom_solmix[g2];
        const double mix = (s1 >= mjMINVAL && s2 >= mjMINVAL) ? s1 / (s1 + s2)
                           : (s1 < mjMINVAL && s2 < mjMINVAL) ? 0.5
                           : (s1 < mjMINVAL)                  ? 0.0
                                                              : 1.0;
        const mjtNum *r1 = m->geom_solref + mjNREF * g1, *r2 = m->geom_solref + mjNREF * g2;
        for (int k = 0; k < 2; ++k)
          sref[k] = (r1[0] > 0 && r2[0] > 0) ? mix * r1[k] + (1 - mix) * r2[k] : std::min(r1[k], r2[k]);
        for (int k = 0; k < 5; ++k)
          simp[k] = mix * m->geom_solimp[mjNIMP * g1 + k] + (1 - mix) * m->geom_solimp[mjNIMP * g2 + k];
        for (int k = 0; k < 3; ++k) fri[k] = std::max(m->geom_friction[3 * g1 + k], m->geom_friction[3 * g2 + k]);
      }
      if (condim != 1 && condim != 3) refuse(fmt::format("condim {} of geoms {} and {} (1 and 3 are)", condim, g1, g2));
      if (m->geom_gap[g1] + m->geom_gap[g2] != 0) refuse(fmt::format("a contact gap (geoms {} and {})", g1, g2));
      if (m->geom_adhesion[g1] != 0 || m->geom_adhesion[g2] != 0) refuse("adhesion");
      const auto [k, bgain] = reference_gains(m, sref, simp);
      g1s.push_back(g1), g2s.push_back(g2), condims.push_back(condim);
      types.push_back(type);
      friction.push_back(T(std::max(mjMINMU, fri[0]))), friction.push_back(T(std::max(mjMINMU, fri[0])));
      margin.push_back(T(m->geom_margin[g1] + m->geom_margin[g2]));
      K.push_back(T(k)), B.push_back(T(bgain));
      for (double v : simp) solimp.push_back(T(v));
      tran.push_back(T(m->body_invweight0[2 * m->geom_bodyid[g1]] + m->body_invweight0[2 * m->geom_bodyid[g2]]));
      const int most = (type == 1 || type == 4) ? 2 : 1;  // contacts a pair can make at once
      d.nefc_max += most * (condim == 1 ? 1 : 4);
      d.ncon_max += most;
    }
  d.npair = int(g1s.size());
  d.ngeom = int(m->ngeom);
  d.impratio = T(m->opt.impratio);
  d.geom_body = upload<int>("geom_body", m->geom_bodyid, m->ngeom);
  d.geom_pos = upload<T>("geom_pos", m->geom_pos, 3 * m->ngeom);
  d.geom_quat = upload<T>("geom_quat", m->geom_quat, 4 * m->ngeom);
  d.geom_size = upload<T>("geom_size", m->geom_size, 3 * m->ngeom);
  d.pair_g1 = upload("pair_g1", g1s), d.pair_g2 = upload("pair_g2", g2s), d.pair_type = upload("pair_type", types);
  d.pair_condim = upload("pair_condim", condims), d.pair_friction = upload("pair_friction", friction);
  d.pair_margin = upload("pair_margin", margin), d.pair_K = upload("pair_K", K), d.pair_B = upload("pair_B", B);
  d.pair_solimp = upload("pair_solimp", solimp), d.pair_tran = upload("pair_tran", tran);
}

void check_actuators(const mjModel* m, const Refuse& refuse) {
  if (m->nactuator != m->nu) refuse("actuators with other than one control each");
  for (int u = 0; u < m->nu; ++u) {
    const int j = m->actuator_trnid[2 * u];
    if (m->actuator_trntype[u] != mjTRN_JOINT || m->jnt_type[j] == mjJNT_FREE || m->jnt_type[j] == mjJNT_BALL)
      refuse(fmt::format("actuator {}'s transmission (a hinge or slide joint is)", u));
    if (m->actuator_dyntype[u] != mjDYN_NONE) refuse(fmt::format("actuator {}'s activation dynamics", u));
    if (m->actuator_gaintype[u] != mjGAIN_FIXED) refuse(fmt::format("actuator {}'s gain type", u));
    if (m->actuator_biastype[u] != mjBIAS_NONE && m->actuator_biastype[u] != mjBIAS_AFFINE)
      refuse(fmt::format("actuator {}'s bias type", u));
    if (m->actuator_ctrlnum[u] != 1 || m->actuator_ctrladr[u] != u || m->actuator_outnum[u] != 1 ||
        m->actuator_outadr[u] != u)
      refuse(fmt::format("actuator {}'s controls or outputs (one each, in order, are)", u));
    if (m->actuator_damping[u] != 0 || m->actuator_armature[u] != 0 || m->actuator_delay[u] != 0 ||
        any_nonzero(m->actuator_dampingpoly + mjNPOLY * u, mjNPOLY))
      refuse(fmt::format("actuator {}'s damping, armature or delay", u));
    if (any_nonzero(m->actuator_gear + 6 * u + 1, 5))
      refuse(fmt::format("actuator {}'s gear beyond its first entry", u));
  }
}

/// Scratch offsets for one env of `m`.
Layout layout_of(int nbody, int njnt, int ngeom, int nq, int nv, int nM, int nefc, int ncon) {
  Layout L;
  int at = 0;
  auto take = [&](int& field, int n) { field = at, at += n; };
  take(L.xpos, 3 * nbody), take(L.xquat, 4 * nbody), take(L.xmat, 9 * nbody), take(L.xipos, 3 * nbody);
  take(L.ximat, 9 * nbody), take(L.subtree_com, 3 * nbody), take(L.cinert, 10 * nbody), take(L.crb, 10 * nbody);
  take(L.cvel, 6 * nbody), take(L.cacc, 6 * nbody), take(L.cfrc, 6 * nbody);
  take(L.xanchor, 3 * njnt), take(L.xaxis, 3 * njnt), take(L.geom_xpos, 3 * ngeom), take(L.geom_xmat, 9 * ngeom);
  take(L.cdof, 6 * nv), take(L.qfrc, nv), take(L.qacc, nv), take(L.qacc_smooth, nv);
  take(L.qfrc_constraint, nv), take(L.mass, nM), take(L.mass_lu, nM);
  take(L.efc_J, nefc * nv), take(L.efc_aref, nefc), take(L.efc_D, nefc), take(L.efc_jar, nefc), take(L.efc_jdx, nefc);
  take(L.contacts, ncon * ContactRecord::kSize), take(L.ncon, 1), take(L.solver_iterations, 1);
  take(L.hess, nv * nv), take(L.grad, nv),
      take(L.dx, nv), take(L.mdx, nv);
  take(L.qpos0, nq), take(L.qvel0, nv), take(L.vel_sum, nv), take(L.acc_sum, nv), take(L.stage_rate, nv);
  L.size = at;
  return L;
}

}  // namespace

template <class T>
Model<T> from_mujoco(const mjModel_* mm, const std::string& name) {
  const mjModel* m = mm;
  const Refuse refuse{name};
  check_options(m, refuse);
  check_joints(m, refuse);
  check_actuators(m, refuse);

  Model<T> d;
  d.nbody = int(m->nbody), d.njnt = int(m->njnt), d.nq = int(m->nq), d.nv = int(m->nv), d.nu = int(m->nu);
  const int dis = m->opt.disableflags;
  d.timestep = T(m->opt.timestep);
  for (int k = 0; k < 3; ++k) d.gravity[k] = (dis & mjDSBL_GRAVITY) ? T(0) : T(m->opt.gravity[k]);
  d.integrator = m->opt.integrator == mjINT_RK4 ? Integrator::kRK4 : Integrator::kEuler;
  d.implicit_damping = !(dis & mjDSBL_EULERDAMP) && !(dis & mjDSBL_DAMPER);
  d.clamp_ctrl = !(dis & mjDSBL_CLAMPCTRL), d.spring = !(dis & mjDSBL_SPRING), d.damper = !(dis & mjDSBL_DAMPER);
  d.actuation = !(dis & mjDSBL_ACTUATION);
  d.autoreset = !(dis & mjDSBL_AUTORESET);

  const std::size_t nb = m->nbody, nj = m->njnt, nv = m->nv, nu = m->nu;
  d.body_parent = upload<int>("body_parent", m->body_parentid, nb);
  d.body_root = upload<int>("body_root", m->body_rootid, nb);
  d.body_jntadr = upload<int>("body_jntadr", m->body_jntadr, nb);
  d.body_jntnum = upload<int>("body_jntnum", m->body_jntnum, nb);
  d.body_dofadr = upload<int>("body_dofadr", m->body_dofadr, nb);
  d.body_dofnum = upload<int>("body_dofnum", m->body_dofnum, nb);
  d.body_pos = upload<T>("body_pos", m->body_pos, 3 * nb);
  d.body_quat = upload<T>("body_quat", m->body_quat, 4 * nb);
  d.body_ipos = upload<T>("body_ipos", m->body_ipos, 3 * nb);
  d.body_iquat = upload<T>("body_iquat", m->body_iquat, 4 * nb);
  d.body_mass = upload<T>("body_mass", m->body_mass, nb);
  d.body_subtreemass = upload<T>("body_subtreemass", m->body_subtreemass, nb);
  d.body_inertia = upload<T>("body_inertia", m->body_inertia, 3 * nb);
  d.jnt_type = upload<int>("jnt_type", m->jnt_type, nj);
  d.jnt_qposadr = upload<int>("jnt_qposadr", m->jnt_qposadr, nj);
  d.jnt_dofadr = upload<int>("jnt_dofadr", m->jnt_dofadr, nj);
  d.jnt_pos = upload<T>("jnt_pos", m->jnt_pos, 3 * nj);
  d.jnt_axis = upload<T>("jnt_axis", m->jnt_axis, 3 * nj);
  d.jnt_stiffness = upload<T>("jnt_stiffness", m->jnt_stiffness, nj);
  d.dof_body = upload<int>("dof_body", m->dof_bodyid, nv);
  d.dof_parent = upload<int>("dof_parent", m->dof_parentid, nv);
  d.dof_armature = upload<T>("dof_armature", m->dof_armature, nv);
  d.dof_damping = upload<T>("dof_damping", m->dof_damping, nv);
  d.qpos0 = upload<T>("qpos0", m->qpos0, m->nq);
  d.qpos_spring = upload<T>("qpos_spring", m->qpos_spring, m->nq);

  // each dof's mass-matrix row: itself, then its ancestors up to the root
  std::vector<int> madr(nv);
  int nM = 0;
  for (std::size_t i = 0; i < nv; ++i) {
    madr[i] = nM;
    for (int j = int(i); j >= 0; j = m->dof_parentid[j]) ++nM;
  }
  d.nM = nM;
  d.dof_madr = upload("dof_madr", madr);

  std::vector<int> act_dof(nu), act_qposadr(nu), ctrllimited(nu), forcelimited(nu);
  std::vector<T> gear(nu), gain(nu), bias(3 * nu);
  for (std::size_t u = 0; u < nu; ++u) {
    const int j = m->actuator_trnid[2 * u];
    act_dof[u] = m->jnt_dofadr[j], act_qposadr[u] = m->jnt_qposadr[j];
    ctrllimited[u] = m->actuator_ctrllimited[u], forcelimited[u] = m->actuator_forcelimited[u];
    gear[u] = T(m->actuator_gear[6 * u]), gain[u] = T(m->actuator_gainprm[mjNGAIN * u]);
    const bool affine = m->actuator_biastype[u] == mjBIAS_AFFINE;
    for (int k = 0; k < 3; ++k) bias[3 * u + k] = affine ? T(m->actuator_biasprm[mjNBIAS * u + k]) : T(0);
  }
  d.act_dof = upload("act_dof", act_dof), d.act_qposadr = upload("act_qposadr", act_qposadr);
  d.act_ctrllimited = upload("act_ctrllimited", ctrllimited),
  d.act_forcelimited = upload("act_forcelimited", forcelimited);
  d.act_gear = upload("act_gear", gear), d.act_gain = upload("act_gain", gain), d.act_bias = upload("act_bias", bias);
  d.act_ctrlrange = upload<T>("act_ctrlrange", m->actuator_ctrlrange, 2 * nu);
  d.act_forcerange = upload<T>("act_forcerange", m->actuator_forcerange, 2 * nu);

  add_limits(m, d, refuse);
  add_pairs(m, d, refuse);
  d.constraints = !(dis & mjDSBL_CONSTRAINT) && d.nefc_max > 0;
  d.iterations = m->opt.iterations, d.tolerance = T(m->opt.tolerance), d.meaninertia = T(m->stat.meaninertia);
  d.layout = layout_of(d.nbody, d.njnt, d.ngeom, d.nq, d.nv, d.nM, d.nefc_max, d.ncon_max);
  return d;
}

template Model<float> from_mujoco<float>(const mjModel_*, const std::string&);
template Model<double> from_mujoco<double>(const mjModel_*, const std::string&);

}  // namespace gmi::physics
