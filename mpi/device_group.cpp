#include "mpi/device_group.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/device_watch.hpp"
#include "mpi/topology.hpp"

#if defined(GMI_HAVE_NCCL)
#include <nccl.h>
#endif

namespace gmi::mpi {
namespace {

#if defined(KOKKOS_ENABLE_CUDA)
using StageSpace = Kokkos::CudaHostPinnedSpace;
#else
using StageSpace = Kokkos::HostSpace;
#endif

template <class Space>
using Unmanaged = Kokkos::View<float*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

}  // namespace

Transport ring_transport() {
#if defined(GMI_HAVE_NCCL)
  return Transport::nccl;
#else
  return Transport::host;
#endif
}

struct DeviceGroup::Impl {
  Kokkos::View<float*, StageSpace> staging;
  std::vector<int> world;  // members as MPI_COMM_WORLD ranks (messages)
#if defined(GMI_HAVE_NCCL)
  // A non-blocking communicator: calls return at once, ncclCommGetAsyncError says when they are
  // done and whether they failed, and the device watch (another thread) may abort it.  `mu`
  // keeps the abort out of a call in progress; after it, `nccl` is gone.
  ncclComm_t nccl = nullptr;
  std::mutex mu;
  std::atomic<bool> aborted{false};
  int hooks[2] = {0, 0};

  /// Wait (bounded) until the communicator has finished its last call; true when it is usable.
  void settle(const char* op) {
    const Deadline d;
    for (unsigned spin = 0;; ++spin) {
      ncclResult_t st = ncclSuccess;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (aborted) break;
        GMI_NCCL_CHECK(ncclCommGetAsyncError(nccl, &st));
      }
      if (st == ncclSuccess) return;
      if (st != ncclInProgress)
        throw Error(fmt::format("NCCL: {} among {} failed: {} ({})", op, ranks_text(world), ncclGetErrorString(st),
                                error_context()));
      if (d.expired() || interrupted()) {
        abort();
        give_up(fmt::format("NCCL {} among {}", op, ranks_text(world)), world, d.elapsed());
      }
      // A launch settles in microseconds, and NCCL's own threads finish it: poll, but yield the
      // core at every turn (a rank bound to one core, as mpirun binds 2 ranks, shares it with
      // them: spinning here kept them off it for a time slice, ~1 ms per call on 2 H100s), and
      // sleep after a millisecond (sleeping at once cost every call ~100 us on 2 H200s).
      if (spin > 64 && d.elapsed() > 1e-3)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      else
        std::this_thread::yield();
    }
    check();  // aborted by the device watch: the failure is flagged
    throw Error("NCCL communicator aborted");
  }
  void abort() {
    std::lock_guard<std::mutex> lock(mu);
    if (aborted.exchange(true) || !nccl) return;
    ncclCommAbort(nccl);
    nccl = nullptr;
  }
#endif
};

DeviceGroup::DeviceGroup(MPI_Comm comm, Transport t, std::size_t max_elements)
    : transport_(t), max_elements_(max_elements), impl_(std::make_shared<Impl>()) {
  if (comm == MPI_COMM_NULL) return;
  GMI_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  size_ = comm_size(comm_);
  rank_ = comm_rank(comm_);
  impl_->world = world_ranks(comm_);
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    ncclUniqueId id;
    if (rank_ == 0) GMI_NCCL_CHECK(ncclGetUniqueId(&id));
    GMI_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm_));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&impl_->nccl, size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) GMI_NCCL_CHECK(r);
    impl_->settle("communicator set-up");
    // The hooks hold the Impl: the watch thread may be in one while this group is destroyed.
    std::shared_ptr<Impl> im = impl_;
    impl_->hooks[0] = add_abort_hook([im] { im->abort(); });
    impl_->hooks[1] = add_error_poll([im]() -> std::string {
      std::lock_guard<std::mutex> lock(im->mu);
      if (im->aborted || !im->nccl) return "";
      ncclResult_t st = ncclSuccess;
      if (ncclCommGetAsyncError(im->nccl, &st) != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
        return fmt::format("NCCL among {} failed: {}", ranks_text(im->world), ncclGetErrorString(st));
      return "";
    });
    return;
  }
#endif
  if (!device_is_host())
    impl_->staging = Kokkos::View<float*, StageSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("gmi::mpi::staging")), max_elements);
}

DeviceGroup::~DeviceGroup() {
#if defined(GMI_HAVE_NCCL)
  if (impl_) {
    for (int h : impl_->hooks)
      if (h) remove_hook(h);
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->nccl) {
      // Non-blocking: finalize may still be in progress; destroy waits for it.  During an error
      // (peers elsewhere) abort instead.
      if (std::uncaught_exceptions() > 0 || flagged()) {
        ncclCommAbort(impl_->nccl);
      } else {
        ncclCommFinalize(impl_->nccl);
        ncclResult_t st = ncclInProgress;
        const Deadline d;
        while (st == ncclInProgress && !d.expired()) ncclCommGetAsyncError(impl_->nccl, &st);
        if (st == ncclSuccess) ncclCommDestroy(impl_->nccl);
        else ncclCommAbort(impl_->nccl);
      }
      impl_->nccl = nullptr;
    }
  }
#endif
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

float* DeviceGroup::stage(const ExecSpace& space, float* data, std::size_t n) {
  GMI_REQUIRE(n <= max_elements_, "buffer larger than the group's capacity");
  if (device_is_host()) {
    space.fence();
    return data;
  }
  Unmanaged<StageSpace> h(impl_->staging.data(), n);
  Kokkos::deep_copy(space, h, Unmanaged<MemSpace>(data, n));
  space.fence();
  return h.data();
}

void DeviceGroup::unstage(const ExecSpace& space, float* data, std::size_t n) {
  if (device_is_host()) return;
  Kokkos::deep_copy(space, Unmanaged<MemSpace>(data, n), Unmanaged<StageSpace>(impl_->staging.data(), n));
}

void DeviceGroup::allreduce_sum(const ExecSpace& space, float* data, std::size_t n) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    nccl_call("ncclAllReduce", [&](ncclComm_t c) {
      return ncclAllReduce(data, data, n, ncclFloat, ncclSum, c, space.cuda_stream());
    });
    return;
  }
#endif
  float* h = stage(space, data, n);
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, h, int(n), MPI_FLOAT, MPI_SUM, comm_, &req));
  wait(req, comm_, "MPI_Iallreduce");
  unstage(space, data, n);
}

void DeviceGroup::bcast(const ExecSpace& space, float* data, std::size_t n, int root) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    nccl_call("ncclBroadcast", [&](ncclComm_t c) {
      return ncclBroadcast(data, data, n, ncclFloat, root, c, space.cuda_stream());
    });
    return;
  }
#endif
  float* h = rank_ == root ? stage(space, data, n) : (space.fence(), device_is_host() ? data : impl_->staging.data());
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Ibcast(h, int(n), MPI_FLOAT, root, comm_, &req));
  wait(req, comm_, "MPI_Ibcast");
  if (rank_ != root) unstage(space, data, n);
}

void DeviceGroup::reduce_sum(const ExecSpace& space, float* data, std::size_t n, int root) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    nccl_call("ncclReduce", [&](ncclComm_t c) {
      return ncclReduce(data, data, n, ncclFloat, ncclSum, root, c, space.cuda_stream());
    });
    return;
  }
#endif
  float* h = stage(space, data, n);
  MPI_Request req;
  if (rank_ == root)
    GMI_MPI_CHECK(MPI_Ireduce(MPI_IN_PLACE, h, int(n), MPI_FLOAT, MPI_SUM, root, comm_, &req));
  else
    GMI_MPI_CHECK(MPI_Ireduce(h, nullptr, int(n), MPI_FLOAT, MPI_SUM, root, comm_, &req));
  wait(req, comm_, "MPI_Ireduce");
  if (rank_ == root) unstage(space, data, n);
}

#if defined(GMI_HAVE_NCCL)
template <class Call>
void DeviceGroup::nccl_call(const char* op, Call&& call) {
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->aborted || !impl_->nccl) {
      check();
      throw Error(fmt::format("{} on an aborted NCCL communicator", op));
    }
    r = call(impl_->nccl);
  }
  if (r == ncclInProgress) impl_->settle(op);  // enqueued once the communicator says so
  else if (r != ncclSuccess) GMI_NCCL_CHECK(r);
}
#endif

void scale(const ExecSpace& space, float* data, std::size_t n, float s) {
  Kokkos::parallel_for(
      "gmi::mpi::scale", Range64(space, 0, std::int64_t(n)),
      KOKKOS_LAMBDA(const std::int64_t i) { data[i] *= s; });
}

}  // namespace gmi::mpi
