#pragma once
/// \file
/// \brief A device environment's per-env state arrays, declared once.
///
/// In the environment's struct, after its Params:
///
///     #define GMI_CARTPOLE_STATE(X) X(float, x) X(float, x_dot) X(float, theta) X(float, theta_dot)
///       GMI_ENV_STATE(CartPole, GMI_CARTPOLE_STATE)
///     #undef GMI_CARTPOLE_STATE
///
/// declares one View1<type> member per (type, name) in that order (SoA, as if written out), and
///   allocate_state(n)   allocates each with n entries, labelled "gmi::envs::CartPole::x" (call it
///                       from the constructor);
///   for_each_state(f)   calls f("x", x) for each, in order: VecEnv saves, loads and checkpoints
///                       them under these names.
/// The names are the checkpoint's dataset names: renaming one breaks loading older checkpoints.
#include <string>

#include "kernels/core/kokkos.hpp"

#define GMI_ENV_STATE_DECLARE_(type, name) View1<type> name;
#define GMI_ENV_STATE_ALLOCATE_(type, name) name = View1<type>(prefix + #name, n);
#define GMI_ENV_STATE_VISIT_(type, name) f(#name, name);

#define GMI_ENV_STATE(Env, LIST)                          \
  LIST(GMI_ENV_STATE_DECLARE_)                            \
  /** Allocate every state array for n envs. */           \
  void allocate_state(int n) {                            \
    const std::string prefix = "gmi::envs::" #Env "::";   \
    LIST(GMI_ENV_STATE_ALLOCATE_)                         \
  }                                                       \
  /** Every state array, by name (checkpoints). */        \
  template <class F>                                      \
  void for_each_state(F&& f) const {                      \
    LIST(GMI_ENV_STATE_VISIT_)                            \
  }
