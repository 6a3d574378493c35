#pragma once
/// \file
/// \brief A MuJoCo model as the device pipeline reads it: the kinematic tree, inertias, joints,
/// actuators and options of an mjModel compiled by MuJoCo's C library, copied once into flat
/// device arrays (read only during a step), and the layout of each env's scratch block.
///
/// What the pipeline computes is listed in kernels/physics/README.md; anything else a model asks
/// for is refused by from_mujoco() with one line naming it.
#include <string>

#include "kernels/core/kokkos.hpp"

struct mjModel_;

namespace gmi::physics {

enum JointType : int { kFree = 0, kBall = 1, kSlide = 2, kHinge = 3 };
enum class Integrator : int { kEuler = 0, kRK4 = 1 };

/// One contact's record in an env's scratch (offsets within it): first constraint row, condim,
/// the two bodies, position, frame (normal and first tangent; the second is their cross product),
/// friction along the tangents.
struct ContactRecord {
  static constexpr int kRow = 0, kCondim = 1, kBody1 = 2, kBody2 = 3, kPos = 4, kNormal = 7, kTangent = 10, kMu = 13;
  static constexpr int kSize = 15;
};

/// Offsets (in elements) of each quantity in one env's scratch block.
struct Layout {
  // per body (3, 4, 9, 3, 9, 3, 10, 10, 6, 6, 6 numbers)
  int xpos = 0, xquat = 0, xmat = 0, xipos = 0, ximat = 0, subtree_com = 0, cinert = 0, crb = 0, cvel = 0, cacc = 0,
      cfrc = 0;
  // per joint (3, 3); per geom (3, 9)
  int xanchor = 0, xaxis = 0, geom_xpos = 0, geom_xmat = 0;
  // per dof (6, 1, 1, 1, 1), the mass matrix and its factor (nM each)
  int cdof = 0, qfrc = 0, qacc = 0, qacc_smooth = 0, qfrc_constraint = 0, mass = 0, mass_lu = 0;
  // constraint rows (nefc_max each; J nefc_max x nv), and the solver's dense Hessian (nv x nv),
  // gradient, step and M times the step (nv each)
  int efc_J = 0, efc_aref = 0, efc_D = 0, efc_jar = 0, efc_jdx = 0;
  // contacts (ncon_max records of kContactRecord numbers, ContactRecord's fields) and their count;
  // the most passes of the Newton loop any solve took since it was last set to zero, the last one
  // (which may only find the gradient small) included; iterations + 1 at the limit (tests read it)
  int contacts = 0, ncon = 0, solver_iterations = 0;
  int hess = 0, grad = 0, dx = 0, mdx = 0;
  // the integrator: start-of-step state (nq, nv), RK4's weighted sums of position rates and
  // accelerations and its stage's position rate (nv each)
  int qpos0 = 0, qvel0 = 0, vel_sum = 0, acc_sum = 0, stage_rate = 0;
  int size = 0;
};

/// Flat device arrays, 3-vectors as 3 consecutive numbers, quaternions as 4 (w x y z).  Indices
/// follow mjModel: body 0 is the world, bodies are ordered parents first, a body's joints and
/// dofs are consecutive.
template <class T>
struct Model {
  template <class U>
  using View = Kokkos::View<U*, MemSpace>;

  int nbody = 0, njnt = 0, nq = 0, nv = 0, nu = 0;
  int nM = 0;  ///< mass-matrix entries kept: each dof's row from itself up its ancestor dofs
  T timestep = 0;
  T gravity[3] = {0, 0, 0};
  Integrator integrator = Integrator::kEuler;
  bool implicit_damping = false;  ///< Euler: joint damping integrated implicitly (MuJoCo's default)
  bool clamp_ctrl = true, spring = true, damper = true, actuation = true;
  bool autoreset = true;  ///< a bad state resets the env at a step's start (mjDSBL_AUTORESET off)
  bool constraints = false;  ///< any constraint row can exist (the solver runs)
  // the solver: MuJoCo's iteration limit and tolerance, on gradients scaled by 1 / (meaninertia nv)
  int iterations = 100;
  T tolerance = 1e-8, meaninertia = 1;
  int nefc_max = 0;  ///< rows an env can have at once
  int ncon_max = 0;  ///< contacts an env can have at once

  // bodies
  View<int> body_parent, body_root, body_jntadr, body_jntnum, body_dofadr, body_dofnum;
  View<T> body_pos, body_quat, body_ipos, body_iquat, body_mass, body_subtreemass, body_inertia;
  // joints
  View<int> jnt_type, jnt_qposadr, jnt_dofadr;
  View<T> jnt_pos, jnt_axis, jnt_stiffness;
  // dofs
  View<int> dof_body, dof_parent, dof_madr;  ///< dof_madr: start of the dof's row in the mass matrix
  View<T> dof_armature, dof_damping;
  View<T> qpos0, qpos_spring;
  // actuators: force = gain ctrl + bias0 + bias1 length + bias2 velocity on one joint's dof
  View<int> act_dof, act_qposadr, act_ctrllimited, act_forcelimited;
  View<T> act_gear, act_ctrlrange, act_forcerange, act_gain, act_bias;

  // limits (a limited hinge or slide joint, or a limited fixed tendon): value = sum of coef qpos
  // over its terms, range [lo, hi], margin, approximate inverse inertia, the reference's stiffness
  // K and damping B (from solref, timestep-safe), solimp (5 numbers)
  int nlim = 0;
  View<int> lim_termadr, lim_termnum, term_qposadr, term_dof;
  View<T> term_coef, lim_range, lim_margin, lim_diag, lim_K, lim_B, lim_solimp;

  // geoms (all of the model's; only those of collision pairs are moved) and the candidate
  // collision pairs: geom 1 (a plane) and geom 2, the narrow phase (PairType), condim (1 or 3),
  // friction along the two tangents, margin, reference K and B, solimp, and the sum of the two
  // bodies' translational inverse weights (MuJoCo's approximate inverse inertia of a contact)
  int ngeom = 0, npair = 0;
  T impratio = 1;
  View<int> geom_body, pair_g1, pair_g2, pair_type, pair_condim;
  View<T> geom_pos, geom_quat, geom_size, pair_friction, pair_margin, pair_K, pair_B, pair_solimp, pair_tran;

  Layout layout;
};

/// Builds the device model from `m`, compiled by MuJoCo's C library.  Throws gmi::InputError
/// naming `name` and the first feature of the model the pipeline does not compute.
template <class T>
Model<T> from_mujoco(const mjModel_* m, const std::string& name);

}  // namespace gmi::physics
