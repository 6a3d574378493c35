#pragma once
/// \file
/// \brief Adam (Kingma & Ba 2015; torch.optim.Adam's update order) on flat buffers, fused with
/// global-norm gradient clipping (torch.nn.utils.clip_grad_norm_: scale by
/// max_norm / (norm + 1e-6) when that is below 1).  The norm is read from device memory, so a
/// whole optimiser step needs no host synchronisation.  A non-finite norm (NaN or Inf anywhere in
/// the gradient) skips the step: parameters and moments stay as they were.
#include <cstdint>

#include "kernels/core/kokkos.hpp"

namespace gmi::optim {

struct AdamArgs {
  double lr = 2.5e-4;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-5;
  std::int64_t step = 1;      ///< 1-based step count (bias correction)
  double max_grad_norm = 0;   ///< <= 0: no clipping
};

template <class S>
void adam_step(const ExecSpace& space, std::size_t n, S* params, const S* grads, S* m, S* v,
               const S* grad_norm, const AdamArgs& a) {
  // 1 - beta in double, then rounded, as torch does (1 - float(0.999) would be 9.9998713e-4).
  const S b1 = S(a.beta1), b2 = S(a.beta2), eps = S(a.eps);
  const S omb1 = S(1.0 - a.beta1), omb2 = S(1.0 - a.beta2);
  const S step_size = S(a.lr / (1.0 - std::pow(a.beta1, double(a.step))));
  const S inv_sqrt_bc2 = S(1.0 / std::sqrt(1.0 - std::pow(a.beta2, double(a.step))));
  const S max_norm = S(a.max_grad_norm);
  Kokkos::parallel_for(
      "gmi::optim::adam_step",
      Range64(space, 0, std::int64_t(n)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const S norm = *grad_norm;
        if (!math::isfinite(norm)) return;
        S scale = 1;
        if (max_norm > S(0)) {
          const S c = max_norm / (norm + S(1e-6));
          scale = c < S(1) ? c : S(1);
        }
        const S g = grads[i] * scale;
        const S mi = b1 * m[i] + omb1 * g;
        const S vi = b2 * v[i] + omb2 * g * g;
        m[i] = mi;
        v[i] = vi;
        params[i] -= step_size * mi / (math::sqrt(vi) * inv_sqrt_bc2 + eps);
      });
}

}  // namespace gmi::optim
