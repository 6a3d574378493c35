#pragma once
/// \file
/// \brief The GMIs of one GPU reading each other's device buffers directly, without a host hop:
/// CUDA IPC memory handles on GPU builds (works with and without MPS), an MPI shared-memory
/// window on host builds (the same algorithm, so CI exercises it).  Each GMI publishes its buffer,
/// the GPU's leader sums them in one kernel, every GMI copies the sum back: two MPI barriers on
/// the GPU communicator per call and a double buffer instead of a third.  On GPU builds the
/// streams are ordered by CUDA interprocess events (the barriers only make sure an event is
/// recorded before anyone waits on it), so no stream is drained; host builds drain instead.
#include <mpi.h>

#include <cstddef>
#include <memory>

#include "kernels/core/kokkos.hpp"

namespace gmi::mpi {

class GpuShared {
 public:
  /// Collective over `gpu_comm` (the GMIs of one GPU); buffers of `capacity` floats.
  GpuShared(MPI_Comm gpu_comm, std::size_t capacity);
  ~GpuShared();
  GpuShared(const GpuShared&) = delete;
  GpuShared& operator=(const GpuShared&) = delete;

  int size() const { return size_; }
  int rank() const { return rank_; }

  /// Sum over the GPU's GMIs, in every GMI's `data`: gather() + sum_at_leader() + scatter().
  void allreduce_sum(const ExecSpace& space, float* data, std::size_t n);

  /// The three steps, for callers that work on the sum before it is handed back (HAR runs the
  /// NCCL all-reduce among GPU leaders in between):
  /// 1. every GMI publishes its `data` in its shared buffer (two barrier-separated steps).
  void gather(const ExecSpace& space, const float* data, std::size_t n);
  /// 2. leader (rank 0) only: sums every GMI's buffer, in slot order, into its own shared buffer
  ///    and returns that device pointer (n floats) for further in-place work on `space`.
  float* sum_at_leader(const ExecSpace& space, std::size_t n);
  /// 3. every GMI copies the leader's buffer into its `data` (after the leader's work on `space`).
  void scatter(const ExecSpace& space, float* data, std::size_t n);

 private:
  void barrier();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int size_ = 1, rank_ = 0;
  std::size_t capacity_;
  int phase_ = 0;  // which half of the double buffer this call uses
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gmi::mpi
