#pragma once
/// \file
/// \brief Collectives on float buffers in device memory over one communicator, through one of two
/// transports:
///  - host:  MPI on host memory (device buffers staged through pinned host memory on GPU builds);
///           the paper's "IP" primitive.
///  - nccl:  NCCL on the execution space's stream; every member must use a different GPU (NCCL
///           refuses two ranks of one communicator on one GPU).  The paper's "RP" primitive.
///           Blocking communicators, watched (mpi/device_watch.hpp): a call whose device work
///           does not complete within reduce.timeout_s aborts the communicator, and one that does
///           not return on the host within it ends the job.
///           Builds without NCCL (host builds) run the same steps with MPI on the same group.
#include <mpi.h>

#include <cstddef>
#include <memory>

#include "kernels/core/kokkos.hpp"

namespace gmi::mpi {

enum class Transport { host, nccl };

/// NCCL when this build has it, else host MPI: the transport of ring (RP) steps.
Transport ring_transport();

class DeviceGroup {
 public:
  /// Collective over `comm` (which it duplicates); an inactive group for MPI_COMM_NULL.
  DeviceGroup(MPI_Comm comm, Transport t, std::size_t max_elements);
  ~DeviceGroup();
  DeviceGroup(const DeviceGroup&) = delete;
  DeviceGroup& operator=(const DeviceGroup&) = delete;

  bool active() const { return comm_ != MPI_COMM_NULL; }
  int size() const { return size_; }
  int rank() const { return rank_; }
  Transport transport() const { return transport_; }

  /// In place; ordered after the work on `space`.  On return the host transport is complete and
  /// the NCCL one is queued on `space`'s stream.  Every wait is bounded (mpi/deadline.hpp).
  void allreduce_sum(const ExecSpace& space, float* data, std::size_t n);
  /// The members' mean, in place: NCCL averages within its own pass (ncclAvg); the host
  /// transport sums, then scales.
  void allreduce_mean(const ExecSpace& space, float* data, std::size_t n);
  void bcast(const ExecSpace& space, float* data, std::size_t n, int root);
  /// The sum lands in `root`'s buffer; other members' buffers are unspecified afterwards.
  void reduce_sum(const ExecSpace& space, float* data, std::size_t n, int root);

 private:
  float* stage(const ExecSpace& space, float* data, std::size_t n);
  template <class Call>
  void nccl_call(const char* op, Call&& call);
  void allreduce(const ExecSpace& space, float* data, std::size_t n, bool mean);
  void host_allreduce(const ExecSpace& space, float* data, std::size_t n);
  void unstage(const ExecSpace& space, float* data, std::size_t n);

  MPI_Comm comm_ = MPI_COMM_NULL;
  Transport transport_;
  int size_ = 0, rank_ = -1;
  std::size_t max_elements_;
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the device watch's hooks, which may outlive a call
};

/// data[i] *= s for n floats in device memory.
void scale(const ExecSpace& space, float* data, std::size_t n, float s);

}  // namespace gmi::mpi
