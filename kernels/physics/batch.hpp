#pragma once
/// \file
/// \brief N copies of one MuJoCo model stepped on the device, one env per thread: state
/// (qpos, qvel, ctrl) and each env's scratch in (env, field) Views, a whole step (every
/// integrator stage and all of its dynamics) in one kernel, no host round trip.
#include "kernels/physics/model.hpp"
#include "kernels/physics/spatial.hpp"

namespace gmi::physics {

/// Row i of an (env, field) View, whatever its layout.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION Strided<T> row(const Kokkos::View<T**, MemSpace>& v, int i) {
  return Strided<T>{v.data() + std::size_t(i) * v.stride(0), int(v.stride(1))};
}

/// Threads per CUDA block of the kernels that step envs one per thread (Batch's and the device
/// tasks' VecEnv kernels): 32 by default, so a few thousand envs spread over every SM instead of
/// the quarter of them Kokkos' occupancy choice (blocks of 128 at this kernel's register count)
/// leaves them on; GMI_PHYSICS_BLOCK=<0|32..256, a multiple of 32> overrides it for
/// measurements (0: Kokkos' choice; larger teams than 256 exceed what this kernel's registers
/// allow a block on some GPUs).  Throws gmi::InputError naming the variable for other values.
int threads_per_block();

template <class T>
class Batch {
 public:
  using Array = Kokkos::View<T**, MemSpace>;

  Batch(Model<T> model, int n);

  int size() const { return n_; }
  const Model<T>& model() const { return model_; }

  /// `substeps` time steps of every env (a task's frame skip), one kernel.
  void step(const ExecSpace& space, int substeps = 1);
  /// The smooth forward dynamics at the current state, leaving qacc and every intermediate in
  /// scratch (what the step-by-step checks read).
  void forward(const ExecSpace& space);
  /// cfrc_ext <- every body's external (contact) force after the last step or forward, as MuJoCo's
  /// mj_rnePostConstraint leaves it (6 numbers per body: torque, force about its tree's centre of
  /// mass).
  void external_forces(const ExecSpace& space);

  Array qpos, qvel, ctrl;
  Array cfrc_ext;  ///< (env, 6 nbody), by external_forces()
  Array scratch;   ///< (env, Layout offset)

 private:
  Model<T> model_;
  int n_ = 0;
};

}  // namespace gmi::physics
