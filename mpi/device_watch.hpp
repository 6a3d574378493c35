#pragma once
/// \file
/// \brief Device-side waits on other GMIs, bounded (mpi/deadline.hpp has the rules).
///
///  - Gate kernels (mpi/gpu_shared.cpp) poll flags that other GMIs write, each with its own
///    deadline (%globaltimer); one that runs out records whom it waited for in the process's
///    DeviceAbort word, and every later gate sees the word and returns at once, so the stream
///    drains.  The word lives in mapped pinned host memory: the host reads it any time.
///  - watch() records an event after a reduction's device work (NCCL, interprocess-event waits,
///    gates).  A thread polls the events, the DeviceAbort word and the registered error polls
///    (ncclCommGetAsyncError); when one runs out or fails, it flags the failure
///    (mpi::flag), releases every gate (the word) and calls the abort hooks (ncclCommAbort), so
///    that the main thread's fences return and it acts on the flag (mpi::check).  If the main
///    thread does not end the job within census_grace() + 3 s (it is blocked where nothing can
///    release it), the thread prints the line and aborts the job itself.
/// Host builds: the word is plain host memory and there is no thread (host spins test their
/// deadline on the main thread).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"

namespace gmi::mpi {

/// What a gate that ran out leaves.  `flag`: 0 all well, 1 a gate ran out, 2 released by the
/// host (another wait ran out).
struct DeviceAbort {
  std::uint32_t flag;
  std::int32_t peer;       ///< MPI_COMM_WORLD rank whose flag was missing
  std::uint32_t kind;      ///< which flag (GateKind)
  std::uint32_t call;      ///< the call's epoch
  std::uint64_t waited_ns;
};

/// The flags a gate waits for (mpi/gpu_shared.cpp): names for messages.
enum class GateKind : std::uint32_t { arrive = 0, done = 1, ready = 2 };
const char* gate_kind_name(std::uint32_t kind);
/// What a gate waited for, for error lines: "the within-GPU 'arrive' flag of rank 3 (call 17)".
std::string gate_wait_text(std::uint32_t kind, int world_rank, std::uint32_t call);

/// The process's word, as its kernels address it (device pointer to mapped host memory on GPU
/// builds); created, and the watch thread started, on first use.
DeviceAbort* device_abort();
/// Deadline of device-side waits in nanoseconds (mpi::timeout()).
std::uint64_t device_timeout_ns();

/// Watch the device work queued on `space` so far: `what` names it and `peers` (MPI_COMM_WORLD
/// ranks) are whom it may wait for.  GPU builds; a no-op on host builds.
void watch(const ExecSpace& space, const std::string& what, const std::vector<int>& peers);

/// Called once from the watch thread when a failure is flagged (ncclCommAbort); returns an id.
int add_abort_hook(std::function<void()> hook);
/// Polled by the watch thread; a non-empty result is a failure (ncclCommGetAsyncError).
int add_error_poll(std::function<std::string()> poll);
void remove_hook(int id);

/// Stop the watch thread and free its events (before Kokkos finalizes CUDA).
void stop_device_watch();

}  // namespace gmi::mpi
