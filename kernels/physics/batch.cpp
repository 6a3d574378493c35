// The device pipeline's kernels (kernels/physics/batch.hpp).
#include "kernels/physics/batch.hpp"

#include <cstdlib>
#include <string>

#include "kernels/core/error.hpp"
#include "kernels/physics/integrator.hpp"

namespace gmi::physics {

int threads_per_block() {
  static const int block = [] {
    const char* v = std::getenv("GMI_PHYSICS_BLOCK");
    if (v == nullptr) return 32;
    char* end = nullptr;
    const long b = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || b < 0 || b > 256 || b % 32 != 0)
      throw InputError("GMI_PHYSICS_BLOCK: expected 0 (Kokkos' choice) or a multiple of 32 up to 256, got '" +
                       std::string(v) + "'");
    return int(b);
  }();
  return block;
}

template <class T>
Batch<T>::Batch(Model<T> model, int n) : model_(std::move(model)), n_(n) {
  const Model<T>& m = model_;
  qpos = Array("gmi::physics::qpos", n, m.nq);
  qvel = Array("gmi::physics::qvel", n, m.nv);
  ctrl = Array("gmi::physics::ctrl", n, m.nu);
  scratch = Array("gmi::physics::scratch", n, m.layout.size);
  cfrc_ext = Array("gmi::physics::cfrc_ext", n, 6 * m.nbody);
}

/// `substeps` steps of every env in one kernel, compiled with or without the constraint code.
template <class T, bool kConstraints>
void step_kernel(const ExecSpace& space, const Model<T>& m, const typename Batch<T>::Array& qp,
                 const typename Batch<T>::Array& qv, const typename Batch<T>::Array& c,
                 const typename Batch<T>::Array& ws, int n, int substeps) {
  parallel_for_blocks(
      kConstraints ? "gmi::physics::Batch::step" : "gmi::physics::Batch::step_smooth", space, n, threads_per_block(),
      KOKKOS_LAMBDA(const int i) {
        const EnvRef<T> e{row(qp, i), row(qv, i), row(c, i), row(ws, i)};
        for (int s = 0; s < substeps; ++s) physics::step<T, kConstraints>(m, e);
      });
}

template <class T>
void Batch<T>::step(const ExecSpace& space, int substeps) {
  if (model_.constraints)
    step_kernel<T, true>(space, model_, qpos, qvel, ctrl, scratch, n_, substeps);
  else
    step_kernel<T, false>(space, model_, qpos, qvel, ctrl, scratch, n_, substeps);
}

template <class T>
void Batch<T>::forward(const ExecSpace& space) {
  const Model<T> m = model_;
  const Array qp = qpos, qv = qvel, c = ctrl, ws = scratch;
  parallel_for_blocks(
      "gmi::physics::Batch::forward", space, n_, threads_per_block(), KOKKOS_LAMBDA(const int i) {
        const EnvRef<T> e{row(qp, i), row(qv, i), row(c, i), row(ws, i)};
        physics::forward(m, e);
      });
}

template <class T>
void Batch<T>::external_forces(const ExecSpace& space) {
  const Model<T> m = model_;
  const Array qp = qpos, qv = qvel, c = ctrl, ws = scratch, out = cfrc_ext;
  parallel_for_blocks(
      "gmi::physics::Batch::external_forces", space, n_, threads_per_block(), KOKKOS_LAMBDA(const int i) {
        const EnvRef<T> e{row(qp, i), row(qv, i), row(c, i), row(ws, i)};
        contact_forces(m, e, row(out, i));
      });
}

template class Batch<float>;
template class Batch<double>;

}  // namespace gmi::physics
