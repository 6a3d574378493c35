#pragma once
/// \file
/// \brief Running mean and variance of vectors (Gymnasium's RunningMeanStd: mean 0, var 1,
/// count 1e-4 at start; Chan et al.'s parallel update), kept on the device.  Used for observation
/// normalisation and, with dim 1, for the discounted-return scale of reward normalisation.
#include <functional>

#include "kernels/core/kokkos.hpp"

namespace gmi::rl {

/// Feature k of a normalised observation: (x - mean_k) / sqrt(var_k + 1e-8), clipped to
/// [-clip, clip] (Gymnasium's NormalizeObservation and CleanRL's clip); `stats` is
/// RunningMeanStd::state() of an observation of `dim` features.
KOKKOS_INLINE_FUNCTION float normalize_feature(float x, const double* stats, int dim, int k,
                                               float clip) {
  return math::clamp(float((x - stats[k]) / math::sqrt(stats[dim + k] + 1e-8)), -clip, clip);
}

class RunningMeanStd {
 public:
  RunningMeanStd() = default;
  explicit RunningMeanStd(int dim);

  int dim() const { return dim_; }
  /// [mean(dim) | var(dim) | count(dim)] in double; checkpointed as is.
  View1<double> state() const { return state_; }

  /// Sums `n` host doubles in place over a group of processes (e.g. all GMIs).
  using HostSum = std::function<void(double* values, int n)>;
  /// Merge the statistics of n rows of X [n][dim] (float, row-major).  With `sum`, the batch
  /// statistics of every process in the group are merged as one batch (data parallelism: all
  /// GMIs keep identical statistics); `sum` is then called once, collectively.
  void update(const ExecSpace& space, const float* X, std::int64_t n, const HostSum& sum = {});
  /// out = clip((X - mean) / sqrt(var + 1e-8), -clip, clip) for n rows.
  void normalize(const ExecSpace& space, const float* X, float* out, std::int64_t n, float clip) const;

 private:
  int dim_ = 0;
  View1<double> state_;
};

}  // namespace gmi::rl
