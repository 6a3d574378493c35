#pragma once
/// \file
/// \brief Action distributions: categorical over logits and diagonal Gaussian with a
/// state-independent log-std.  Log-probabilities, entropies and their derivatives, per sample.
#include "kernels/core/kokkos.hpp"

namespace gmi::rl {

/// log(sum(exp(x))) of n values with stride 1.
template <class S>
KOKKOS_INLINE_FUNCTION S logsumexp(const S* x, int n) {
  S m = x[0];
  for (int j = 1; j < n; ++j) m = math::max(m, x[j]);
  S s = 0;
  for (int j = 0; j < n; ++j) s += math::exp(x[j] - m);
  return m + math::log(s);
}

/// Entropy of softmax(logits) given lse = logsumexp(logits).
template <class S>
KOKKOS_INLINE_FUNCTION S categorical_entropy(const S* logits, int n, S lse) {
  S h = 0;
  for (int j = 0; j < n; ++j) {
    const S lp = logits[j] - lse;
    h -= math::exp(lp) * lp;
  }
  return h;
}

/// Inverse-CDF sample from softmax(logits) with u in (0, 1).
template <class S>
KOKKOS_INLINE_FUNCTION int categorical_sample(const S* logits, int n, S lse, S u) {
  S c = 0;
  for (int j = 0; j < n - 1; ++j) {
    c += math::exp(logits[j] - lse);
    if (u <= c) return j;
  }
  return n - 1;
}

constexpr double kHalfLog2Pi = 0.91893853320467274178;  // 0.5 * log(2 pi)

/// Log-density of a under N(mean, exp(log_std)^2) per dimension, summed over d dimensions.
template <class S>
KOKKOS_INLINE_FUNCTION S gaussian_logp(const S* a, const S* mean, const S* log_std, int d) {
  S lp = 0;
  for (int j = 0; j < d; ++j) {
    const S z = (a[j] - mean[j]) * math::exp(-log_std[j]);
    lp += -S(0.5) * z * z - log_std[j] - S(kHalfLog2Pi);
  }
  return lp;
}

template <class S>
KOKKOS_INLINE_FUNCTION S gaussian_entropy(const S* log_std, int d) {
  S h = 0;
  for (int j = 0; j < d; ++j) h += S(0.5) + S(kHalfLog2Pi) + log_std[j];
  return h;
}

}  // namespace gmi::rl
