#pragma once
/// \file
/// \brief The step every algorithm takes after its backward pass (PPO's minibatch updates, each of
/// DQN's and SAC's optimisers): the non-finite guard, the average over GMIs, the global norm and
/// Adam with clipping.  Written once so that a skipped update means the same everywhere.
#include <cstddef>

#include "kernels/core/graph.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/core/error.hpp"
#include "kernels/optim/adam.hpp"
#include "mpi/gradient_reducer.hpp"
#include "src/algos/phases.hpp"

namespace gmi::algos {

/// One optimiser's slice of the flat buffers: parameters, gradients and Adam moments [0, n), and
/// one double of device scratch for its norm's sum of squares.
struct OptimizerSlice {
  float* params = nullptr;
  float* grads = nullptr;
  float* adam_m = nullptr;
  float* adam_v = nullptr;
  std::size_t n = 0;
  double* norm_sum = nullptr;
};

/// optimizer_step's default `after`: nothing.
struct NothingAfter {
  KOKKOS_INLINE_FUNCTION void operator()(float) const {}
};

/// \brief Guard, reduce, norm, Adam on `s`:
///  1. when `inject` (the fault hook) or `loss_sum()` (a device callable: the sum of this
///     update's loss terms) is not finite, the norm is NaN — with several GMIs grads[0] becomes
///     NaN before the reduction, so every GMI sees a non-finite norm and skips the same update;
///  2. the gradient is averaged over GMIs by `reducer` (nullptr: no reduction);
///  3. its global norm goes to `norm` (device memory), in one kernel that also advances
///     `counter` and runs `after(norm)` (a device callable, one thread: the caller's bookkeeping);
///  4. Adam (`a`) clips by that norm, and leaves parameters and moments alone when it is not
///     finite (kernels/optim/adam.hpp).
/// No host synchronisation; two kernels without a reducer.  With `phases` (benchmarks) the
/// reduction and the optimiser are timed as Phase::Reduction and Phase::Optimizer.  With
/// `counter`, Adam's step count lives in device memory (a.step unused); with `capture`, the step
/// is being captured into that sequence and the reduction runs between its graphs.
template <class LossSum, class After = NothingAfter>
void optimizer_step(const ExecSpace& space, const OptimizerSlice& s, bool inject, LossSum loss_sum,
                    mpi::GradientReducer* reducer, float* norm, const optim::AdamArgs& a,
                    PhaseClock* phases = nullptr, const optim::AdamCounter* counter = nullptr,
                    CapturedSequence* capture = nullptr, After after = {}) {
  GMI_REQUIRE(s.norm_sum, "optimizer_step: the slice has no scratch for its norm");
  float* g = s.grads;
  if (reducer) {
    Kokkos::parallel_for(
        "gmi::algos::nonfinite_guard", Range(space, 0, 1), KOKKOS_LAMBDA(const int) {
          if (inject || !math::isfinite(loss_sum())) g[0] = NAN;
        });
    const std::size_t n = s.n;
    const ExecSpace sp = space;
    auto reduce = [reducer, sp, g, n] { reducer->allreduce_mean(sp, g, n); };
    if (capture) capture->uncaptured(reduce);
    else reduce();
  }
  if (phases) phases->mark(space, Phase::Reduction);
  optim::grad_norm<float>(
      space, s.n, g, norm, s.norm_sum, KOKKOS_LAMBDA() { return inject || !math::isfinite(loss_sum()); }, after, a,
      counter ? *counter : optim::AdamCounter{});
  if (counter) optim::adam_step_counted<float>(space, s.n, s.params, g, s.adam_m, s.adam_v, norm, a, *counter);
  else optim::adam_step<float>(space, s.n, s.params, g, s.adam_m, s.adam_v, norm, a);
  if (phases) phases->mark(space, Phase::Optimizer);
}

}  // namespace gmi::algos
