#pragma once
/// \file
/// \brief The GMIs of one GPU reading each other's device buffers directly, without a host hop:
/// CUDA IPC memory handles on GPU builds (works with and without MPS), an MPI shared-memory
/// window on host builds (the same algorithm, so CI exercises it).
///
/// A sum over the GPU's GMIs takes two steps, reduce() and broadcast(), so that HAR can run the
/// NCCL all-reduce among GPU leaders on the leader's sum in between.  How the GMIs wait for each
/// other depends on whether they run at the same time:
///
///  - IntraSync::device (MPS, and host builds): no host synchronisation at all.  GMIs wait for
///    each other in *gate* kernels of one warp that signal and poll flags in the shared memory
///    (as NCCL's kernels do); the data moves in ordinary kernels that never wait.  A gate holds
///    one warp slot of one SM and a GPU has at most 32 GMIs, so whatever a gate waits for can
///    always become resident: no kernel needs its blocks to be co-resident with another
///    process's (the design before 2026-11-24 did, see src/checkpoint/README.md#failure-behaviour).
///    reduce(): gate 'arrive' (every GMI has started the call), every GMI sums its slice of the
///    buffer over all GMIs (slot order), reading the others' input buffers in place, into the
///    leader's buffer (then gate 'done': the leader waits until every slice is in) or into its
///    own (Sums::owners: each GMI then all-reduces its slice among GPUs).  broadcast(): gate
///    'ready' (the leader, or every owner, releases the others), then every GMI copies the sum
///    out, scaled.  allreduce() (one GPU, nothing in between): arrive, sum, done, copy.
///    Every gate has a deadline (reduce.timeout_s, mpi/device_watch.hpp): one that runs out
///    records whom it waited for and every later gate returns at once.
///  - IntraSync::host (time-sliced GMIs, backend none, where a polling kernel would hold the GPU
///    for a whole time slice): every GMI copies its data into its shared buffer, two MPI barriers
///    per call (bounded waits) order CUDA interprocess events (no stream is drained), the leader
///    sums in one kernel, every GMI copies the sum back.  A double buffer saves a third barrier.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/core/kokkos.hpp"

namespace gmi::mpi {

enum class IntraSync { host, device };

/// Where reduce() leaves the GPU's sum: the leader's buffer (all of it), or each GMI's slice in
/// its own buffer (so that every GMI can all-reduce its slice among GPUs; IntraSync::device only).
enum class Sums { leader, owners };

class GpuShared {
 public:
  /// Collective over `gpu_comm` (the GMIs of one GPU); buffers of `capacity` floats.
  GpuShared(MPI_Comm gpu_comm, std::size_t capacity, IntraSync sync);
  ~GpuShared();
  GpuShared(const GpuShared&) = delete;
  GpuShared& operator=(const GpuShared&) = delete;

  int size() const { return size_; }
  int rank() const { return rank_; }
  IntraSync sync() const { return sync_; }

  /// IntraSync::device: device memory for `capacity` floats that the other GMIs read in place; a
  /// caller that computes its data there saves reduce() a copy.  nullptr with IntraSync::host.
  float* input() const;

  /// Step 1: the sum of every GMI's `data` (n floats, added in slot order).  Sums::leader: it
  /// lands in the leader's buffer, which is returned on the leader (rank 0) for in-place work on
  /// `space` before broadcast(), nullptr on the other GMIs.  Sums::owners: every GMI gets its
  /// slice (slice(n)) of the sum in its own buffer, returned for in-place work.  Collective over
  /// the GPU's GMIs.
  float* reduce(const ExecSpace& space, const float* data, std::size_t n, Sums where = Sums::leader);
  /// Step 2: every GMI's `data` = the sum * `scale`, after the work on `space` of the GMIs that
  /// hold it.  On return the copy may still be in flight on `space`.
  void broadcast(const ExecSpace& space, float* data, std::size_t n, float scale, Sums where = Sums::leader);
  /// This GMI's slice of n floats with Sums::owners: (first element, count).
  std::pair<std::size_t, std::size_t> slice(std::size_t n) const;

  /// reduce() + broadcast(..., scale) when nothing happens to the sum in between; one gate
  /// fewer with IntraSync::device on GPU builds.
  void allreduce(const ExecSpace& space, float* data, std::size_t n, float scale);
  /// allreduce() with scale 1: the sum over the GPU's GMIs, in every GMI's `data`.
  void allreduce_sum(const ExecSpace& space, float* data, std::size_t n);

 private:
  void barrier();
  void host_flag_wait(const std::uint32_t* flag, std::uint32_t e, int from, std::uint32_t kind);
  void host_reduce(const ExecSpace& space, const float* data, std::size_t n);
  void host_broadcast(const ExecSpace& space, float* data, std::size_t n, float scale);
  void device_reduce(const ExecSpace& space, std::size_t n, bool owners);
  void device_broadcast(const ExecSpace& space, float* data, std::size_t n, float scale, bool owners);

  MPI_Comm comm_ = MPI_COMM_NULL;
  IntraSync sync_;
  int size_ = 1, rank_ = 0;
  std::size_t capacity_;
  std::vector<int> world_;    // MPI_COMM_WORLD rank of every GMI of the GPU, by slot
  int phase_ = 0;             // IntraSync::host: which half of the double buffer this call uses
  std::uint32_t epoch_ = 0;   // IntraSync::device: calls so far; the value the flags carry
  int blocks_ = 1;            // IntraSync::device: blocks of the sum and copy kernels
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gmi::mpi
