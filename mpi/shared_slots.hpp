#pragma once
/// \file
/// \brief Buffers that a producer fills and its consumer on the same GPU reads in place: the
/// device transport of the async rollouts (src/gmi/async_training.cpp), where a serving GMI's
/// rollout goes to its trainer GPU to GPU instead of through host memory and MPI messages.
/// CUDA IPC memory handles on GPU builds (with and without MPS); an MPI shared-memory window on
/// host builds, so that CI runs the same protocol.
///
/// Every producer of the routes owns `slots` buffers of `bytes` bytes; its consumer maps them.
/// Who may write or read a buffer when is the caller's protocol (here: a rollout's message
/// through the channels says its buffer is complete, the consumer's credit says it has been
/// copied out); this class shares the memory, nothing more.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mpi/channels.hpp"

namespace gmi::mpi {

/// Why the routes' producers and consumers cannot share memory: the first route whose ends run
/// on different GPUs (GPU builds: the devices' UUIDs, so MIG instances of one GPU differ) or
/// nodes (host builds), named; empty when every route can.  Collective over `comm` (every member passes the same routes).
std::string why_not_shared(MPI_Comm comm, const std::vector<Route>& routes);

class SharedSlots {
 public:
  /// Collective over `comm` (every member passes the same arguments but `layout`): each
  /// producer of `routes` allocates `slots` buffers of `bytes` bytes and its consumer maps them.
  /// `layout` says what a buffer holds, as each end computes it; a route whose ends disagree
  /// throws gmi::Error naming both.  Throws gmi::Error when why_not_shared() is not empty.
  SharedSlots(MPI_Comm comm, const std::vector<Route>& routes, std::size_t bytes, int slots, std::uint64_t layout);
  /// A consumer unmaps its producers' buffers, then every member waits (bounded) before a
  /// producer frees its own: none is freed while mapped.
  ~SharedSlots();
  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;

  std::size_t bytes() const { return bytes_; }
  int slots() const { return slots_; }
  /// Producer: its buffer `slot`.
  std::byte* own(int slot) const;
  /// Consumer: buffer `slot` of its producer k (producers_by_consumer's order).
  const std::byte* producer(std::size_t k, int slot) const;
  /// The host builds' memory barrier on the window (MPI_Win_sync): a producer calls it after
  /// writing a buffer and before saying so, a consumer after hearing so and before reading it.
  /// Nothing on GPU builds, where the fences of the copies' streams order them.
  void sync() const;

 private:
  std::size_t bytes_ = 0;
  int slots_ = 0;
  MPI_Comm node_ = MPI_COMM_NULL;  // the members sharing memory with this one
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gmi::mpi
