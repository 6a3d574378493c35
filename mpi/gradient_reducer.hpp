#pragma once
/// \file
/// \brief The interface every gradient-reduction strategy implements (host-staged MPI, NCCL rings,
/// hierarchical, hybrid...).  Callers see only this header; MPI and NCCL stay inside mpi/.
#include <cstddef>
#include <string>

#include "kernels/core/kokkos.hpp"

namespace gmi::mpi {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  /// Replace `data` (n floats in device memory) by its mean over all GMIs.  Ordered after the
  /// work already queued on `space`; on return the result may still be in flight on `space`.
  virtual void allreduce_mean(const ExecSpace& space, float* data, std::size_t n) = 0;
  virtual std::string name() const = 0;
};

}  // namespace gmi::mpi
