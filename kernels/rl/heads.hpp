#pragma once
/// \file
/// \brief Action distributions: categorical over logits and diagonal Gaussian with a
/// state-independent log-std.  Log-probabilities, entropies and their derivatives, per sample.
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"

namespace gmi::rl {

/// The groups of a categorical head's logits: one softmax over all of them (Discrete(n)), or one
/// per group of a MultiDiscrete(nvec) space, the groups' logits side by side
/// ([nvec[0] logits | nvec[1] logits | ...]) and one action index per group.  The log-probability
/// of an action is the sum of its groups', the entropy the sum of the groups' entropies.
struct Categories {
  static constexpr int kMaxGroups = 16;
  int count = 0;               ///< groups; 0 or 1: one group of every logit
  int size[kMaxGroups] = {};   ///< logits per group (count > 1)
  KOKKOS_INLINE_FUNCTION int groups() const { return count > 1 ? count : 1; }
  /// Logits of group g of a head with n logits in all.
  KOKKOS_INLINE_FUNCTION int size_of(int g, int n) const { return count > 1 ? size[g] : n; }
};

/// The Categories of a MultiDiscrete(nvec) head (empty nvec: one group); `what` names the space
/// in the error.
inline Categories categories(const std::vector<int>& nvec, const std::string& what) {
  Categories c;
  GMI_REQUIRE(int(nvec.size()) <= Categories::kMaxGroups,
              what + ": a MultiDiscrete action space of " + std::to_string(nvec.size()) + " groups; at most " +
                  std::to_string(Categories::kMaxGroups) + " are supported");
  c.count = int(nvec.size());
  for (int g = 0; g < c.count; ++g) {
    GMI_REQUIRE(nvec[g] > 0, what + ": a MultiDiscrete group of " + std::to_string(nvec[g]) + " actions");
    c.size[g] = nvec[g];
  }
  return c;
}

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

/// log pi(a) of a categorical head's logits y (n in all, in c's groups) for the action a (one index
/// per group, as floats).
template <class S>
KOKKOS_INLINE_FUNCTION S categorical_logp(const S* y, int n, const Categories& c, const S* a) {
  S logp = 0;
  for (int g = 0, at = 0; g < c.groups(); ++g) {
    const int k = c.size_of(g, n);
    logp += y[at + int(a[g])] - logsumexp(y + at, k);
    at += k;
  }
  return logp;
}

/// log pi(a) and the entropy of a categorical head's logits y (n in all, in c's groups) for the
/// action a (one index per group, as floats); each group's logsumexp and entropy into lse[g] and
/// ents[g] when they are set.
template <class S>
KOKKOS_INLINE_FUNCTION void categorical_logp_entropy(const S* y, int n, const Categories& c, const S* a, S& logp,
                                                     S& ent, S* lse = nullptr, S* ents = nullptr) {
  logp = 0;
  ent = 0;
  for (int g = 0, at = 0; g < c.groups(); ++g) {
    const int k = c.size_of(g, n);
    const S l = logsumexp(y + at, k);
    logp += y[at + int(a[g])] - l;
    const S h = categorical_entropy(y + at, k, l);
    ent += h;
    if (lse) lse[g] = l;
    if (ents) ents[g] = h;
    at += k;
  }
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
