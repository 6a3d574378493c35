#pragma once
/// \file
/// \brief The GMIs of one GPU reading each other's device buffers directly, without a host hop:
/// CUDA IPC memory handles on GPU builds (works with and without MPS), an MPI shared-memory
/// window on host builds (the same algorithm, so CI exercises it).  Steps are separated by
/// MPI barriers on the GPU communicator after the GMI's stream is drained.
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

  /// Sum over the GPU's GMIs, in every GMI's `data` (reduce-scatter, then all-gather).  Every
  /// chunk is summed by one GMI in slot order, so all GMIs end with identical bits.
  void allreduce_sum(const ExecSpace& space, float* data, std::size_t n);
  /// The sum in rank 0's `data`; the others' `data` holds partial sums afterwards.
  void reduce_to_leader(const ExecSpace& space, float* data, std::size_t n);
  /// Rank 0's `data` in every GMI's `data`.
  void bcast_from_leader(const ExecSpace& space, float* data, std::size_t n);

 private:
  void barrier();
  void reduce_scatter(const ExecSpace& space, float* data, std::size_t n);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int size_ = 1, rank_ = 0;
  std::size_t capacity_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gmi::mpi
