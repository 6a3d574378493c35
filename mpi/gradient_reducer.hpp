#pragma once
/// \file
/// \brief The interface every gradient-reduction strategy implements (mpi/reducers.hpp: host-staged
/// MPI, NCCL rings, hierarchical, hybrid).  Callers see only this header; MPI and NCCL stay
/// inside mpi/.
#include <cstddef>
#include <string>

#include "kernels/core/kokkos.hpp"

namespace gmi::mpi {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  /// Replace `data` (n floats in device memory) by its mean over all GMIs; every GMI ends with
  /// the same bits.  Ordered after the work already queued on `space`; on return the result may
  /// still be in flight on `space`.
  virtual void allreduce_mean(const ExecSpace& space, float* data, std::size_t n) = 0;
  /// Device memory for the reducer's largest buffer that allreduce_mean reduces in place without
  /// first copying it (HAR's intra-GPU step reads it from the other GMIs of the GPU): a caller
  /// that computes its gradient there saves a copy.  nullptr when the strategy has none.
  virtual float* buffer() { return nullptr; }
  /// Sum of `n` host doubles over all GMIs, in place (statistics and decisions that must agree).
  virtual void allreduce_sum_host(double* values, int n) = 0;
  /// Number of GMIs taking part.
  virtual int size() const = 0;
  virtual std::string name() const = 0;
};

}  // namespace gmi::mpi
