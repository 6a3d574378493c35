#pragma once
/// \file
/// \brief Adam (Kingma & Ba 2015; torch.optim.Adam's update order) on flat buffers, fused with
/// global-norm gradient clipping (torch.nn.utils.clip_grad_norm_: scale by
/// max_norm / (norm + 1e-6) when that is below 1).  The norm is read from device memory, so a
/// whole optimiser step needs no host synchronisation.  A non-finite norm (NaN or Inf anywhere in
/// the gradient) skips the step: parameters and moments stay as they were.
#include <cmath>
#include <cstdint>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"

namespace gmi::optim {

struct AdamArgs {
  double lr = 2.5e-4;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-5;
  std::int64_t step = 1;      ///< 1-based step count (bias correction)
  double max_grad_norm = 0;   ///< <= 0: no clipping
};

/// Adam's step count in device memory, for launches captured once and replayed (CUDA graphs): a
/// step advances `count` on the device when it is taken (a finite norm; a skipped step does not
/// count), and the bias corrections of that count are computed there, into `coeffs` (2 scalars).
/// With `lr`, the learning rate is read there too (a schedule that changes between replays);
/// without, it is AdamArgs::lr.
struct AdamCounter {
  std::int64_t* count = nullptr;
  double* coeffs = nullptr;
  const double* lr = nullptr;
};

namespace detail {

/// Adam's constants in the parameters' precision; 1 - beta in double, then rounded, as torch does
/// (1 - float(0.999) would be 9.9998713e-4).
template <class S>
struct AdamConstants {
  S b1, b2, eps, omb1, omb2, max_norm;
  explicit AdamConstants(const AdamArgs& a)
      : b1(S(a.beta1)), b2(S(a.beta2)), eps(S(a.eps)), omb1(S(1.0 - a.beta1)), omb2(S(1.0 - a.beta2)),
        max_norm(S(a.max_grad_norm)) {}
};

/// One element's step: its gradient scaled by the global-norm clip, the moments, the parameter;
/// `step_size` = lr / (1 - beta1^t) and `inv_sqrt_bc2` = 1 / sqrt(1 - beta2^t) of the step t.
template <class S>
KOKKOS_INLINE_FUNCTION void adam_element(const AdamConstants<S>& k, S norm, S step_size, S inv_sqrt_bc2, S grad,
                                         S& param, S& m, S& v) {
  S scale = 1;
  if (k.max_norm > S(0)) {
    const S c = k.max_norm / (norm + S(1e-6));
    scale = c < S(1) ? c : S(1);
  }
  const S g = grad * scale;
  const S mi = k.b1 * m + k.omb1 * g;
  const S vi = k.b2 * v + k.omb2 * g * g;
  m = mi;
  v = vi;
  param -= step_size * mi / (math::sqrt(vi) * inv_sqrt_bc2 + k.eps);
}

/// The elementwise Adam step over its n parameters, with the bias corrections given (`step_size`,
/// `inv_sqrt_bc2`) or read from device memory (`coeffs`, where set).  A named functor, not a
/// KOKKOS_LAMBDA: an extended lambda in a header function that several files instantiate alike
/// gets one host helper per file, and the linker may keep a launch from a file whose helper was
/// never set (a call through a null pointer: gmi_drl bench on an H100, 2026-12-07).
template <class S>
struct AdamElements {
  AdamConstants<S> k;
  S step_size = 0, inv_sqrt_bc2 = 0;
  const double* coeffs = nullptr;
  const S* grad_norm = nullptr;
  const S* grads = nullptr;
  S* params = nullptr;
  S* m = nullptr;
  S* v = nullptr;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const S norm = *grad_norm;
    if (!math::isfinite(norm)) return;
    adam_element(k, norm, coeffs ? S(coeffs[0]) : step_size, coeffs ? S(coeffs[1]) : inv_sqrt_bc2, grads[i],
                 params[i], m[i], v[i]);
  }
};

}  // namespace detail

/// One Adam step of the host's step count `a.step` over n parameters.
template <class S>
void adam_step(const ExecSpace& space, std::size_t n, S* params, const S* grads, S* m, S* v,
               const S* grad_norm, const AdamArgs& a) {
  detail::AdamElements<S> f{detail::AdamConstants<S>(a)};
  f.step_size = S(a.lr / (1.0 - std::pow(a.beta1, double(a.step))));
  f.inv_sqrt_bc2 = S(1.0 / std::sqrt(1.0 - std::pow(a.beta2, double(a.step))));
  f.grad_norm = grad_norm, f.grads = grads, f.params = params, f.m = m, f.v = v;
  Kokkos::parallel_for("gmi::optim::adam_step", Range64(space, 0, std::int64_t(n)), f);
}

namespace detail {

/// One Adam step of the count in device memory: advance it and its bias corrections where the
/// norm is finite (one thread).
KOKKOS_INLINE_FUNCTION void advance(const AdamCounter& c, double norm, double lr, double beta1, double beta2) {
  if (!math::isfinite(norm)) return;
  const double t = double(++*c.count);
  c.coeffs[0] = (c.lr ? *c.lr : lr) / (1.0 - ::pow(beta1, t));
  c.coeffs[1] = 1.0 / math::sqrt(1.0 - ::pow(beta2, t));
}

/// grad_norm's reduction: sums of squares in double; its final step (one thread, on the device)
/// writes the norm and runs what follows it.
template <class S, class Poisoned, class After>
struct GradNorm {
  using value_type = double;
  const S* grads;
  S* norm;
  Poisoned poisoned;
  After after;
  AdamCounter counter;
  double lr, beta1, beta2;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, double& sum) const {
    const double g = double(grads[i]);
    sum += g * g;
  }
  KOKKOS_INLINE_FUNCTION void final(double& sum) const {
    const S nv = poisoned() ? S(NAN) : S(math::sqrt(sum));
    *norm = nv;
    if (counter.count) advance(counter, double(nv), lr, beta1, beta2);
    after(nv);
  }
};

}  // namespace detail

/// The global gradient norm in one kernel: *norm = ||grads||_2 (squares summed in double into
/// `sum`, one double of device scratch), or NaN where the device callable `poisoned()` says so
/// (a non-finite loss, an injected fault); then, in that kernel's final step, with a counter, the
/// step count and its bias corrections advance (detail::advance), and `after(norm)`
/// runs (one thread).  What adam_step_counted needs then is in device memory: a guard, a norm, a
/// count and a bookkeeping kernel become one.
template <class S, class Poisoned, class After>
void grad_norm(const ExecSpace& space, std::size_t n, const S* grads, S* norm, double* sum, Poisoned poisoned,
               After after, const AdamArgs& a = {}, const AdamCounter& counter = {}) {
  const detail::GradNorm<S, Poisoned, After> f{grads, norm, poisoned, after, counter, a.lr, a.beta1, a.beta2};
  Kokkos::parallel_reduce("gmi::optim::grad_norm", Range64(space, 0, std::int64_t(n)), f,
                          Kokkos::View<double, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(sum));
}

/// The elementwise Adam step with the bias corrections grad_norm left in `counter`.
template <class S>
void adam_step_counted(const ExecSpace& space, std::size_t n, S* params, const S* grads, S* m, S* v,
                       const S* grad_norm, const AdamArgs& a, const AdamCounter& counter) {
  GMI_REQUIRE(counter.coeffs != nullptr, "adam_step_counted: the counter has no bias corrections");
  detail::AdamElements<S> f{detail::AdamConstants<S>(a)};
  f.coeffs = counter.coeffs;
  f.grad_norm = grad_norm, f.grads = grads, f.params = params, f.m = m, f.v = v;
  Kokkos::parallel_for("gmi::optim::adam_step", Range64(space, 0, std::int64_t(n)), f);
}

}  // namespace gmi::optim
