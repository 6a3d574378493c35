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
  // A blocking communicator (a non-blocking one hands every call to a thread of NCCL's own, which
  // doubled the 2-GPU latency floor), watched as PyTorch's watchdog watches its communicators:
  //  - the device work of a call is timed by the device watch (mpi/device_watch.hpp: the
  //    reducers watch() after their calls), which on a timeout calls the abort hook below:
  //    ncclCommAbort from another thread ends the call's kernels, the main thread's fence returns
  //    and check() acts on the flag;
  //  - the host part of a call (set-up, lazy connection on the first collective, finalize) is
  //    timed here: `host_since` is when the call in progress began, and the error poll reports
  //    a call that has not returned within reduce.timeout_s; the device watch's last resort then
  //    ends the job (the main thread is inside NCCL, which nothing else can release safely);
  //  - the poll also reads ncclCommGetAsyncError (network errors).
  // `mu` is held by calls; the abort and the poll only try it, so a call that is stuck on the
  // host cannot hold up the watch thread.
  ncclComm_t nccl = nullptr;
  std::mutex mu;
  std::atomic<bool> aborted{false};
  std::atomic<std::int64_t> host_since{0};  // steady-clock ns; 0: no call on the host
  std::atomic<const char*> host_op{""};
  int hooks[2] = {0, 0};

  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  /// Times the host part of an NCCL call (see above).
  struct HostCall {
    Impl& im;
    HostCall(Impl& i, const char* op) : im(i) {
      im.host_op = op;
      im.host_since = now_ns();
    }
    ~HostCall() { im.host_since = 0; }
  };

  /// The watch thread's poll: "" while all is well.
  std::string poll() {
    const std::int64_t since = host_since;
    if (since != 0) {
      const double waited = double(now_ns() - since) * 1e-9;
      if (waited > timeout() + 1.0)
        return fmt::format("NCCL {} among {} did not return on the host within {:.1f} s", host_op.load(),
                           ranks_text(world), waited);
    }
    std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
    if (!lock.owns_lock() || aborted || !nccl) return "";
    ncclResult_t st = ncclSuccess;
    if (ncclCommGetAsyncError(nccl, &st) != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
      return fmt::format("NCCL among {} failed: {}", ranks_text(world), ncclGetErrorString(st));
    return "";
  }

  /// The device watch's abort hook (its own thread): end the communicator's kernels.  A call
  /// still inside NCCL on the host keeps the lock; then the communicator is left alone (freeing
  /// it under that call is not safe) and the watch's last resort ends the job.
  void abort() {
    aborted = true;
    std::unique_lock<std::mutex> lock(mu, std::defer_lock);
    for (int i = 0; i < 200 && !lock.try_lock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!lock.owns_lock() || !nccl) return;
    ncclCommAbort(nccl);
    nccl = nullptr;
  }
#endif
};

DeviceGroup::DeviceGroup(MPI_Comm comm, Transport t, std::size_t max_elements)
    : transport_(t), max_elements_(max_elements), impl_(std::make_shared<Impl>()) {
  if (comm == MPI_COMM_NULL) return;
  comm_ = duplicate(comm, "the set-up of a reduction group (MPI_Ibarrier)");
  size_ = comm_size(comm_);
  rank_ = comm_rank(comm_);
  impl_->world = world_ranks(comm_);
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    ncclUniqueId id;
    if (rank_ == 0) GMI_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Request req;
    GMI_MPI_CHECK(MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, comm_, &req));
    wait(req, comm_, "the set-up of a reduction group (MPI_Ibcast of the NCCL id)");
    // The hooks hold the Impl (the watch thread may be in one while this group is destroyed),
    // and watch the set-up too: a member that never joins is reported by the poll.
    std::shared_ptr<Impl> im = impl_;
    impl_->hooks[0] = add_abort_hook([im] { im->abort(); });
    impl_->hooks[1] = add_error_poll([im] { return im->poll(); });
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    ncclComm_t c = nullptr;
    ncclResult_t r;
    {
      Impl::HostCall timed(*impl_, "communicator set-up");
      r = ncclCommInitRankConfig(&c, size_, id, rank_, &config);
    }
    check();
    GMI_NCCL_CHECK(r);
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->nccl = c;
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
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (impl_->nccl) {
        // During an error (peers elsewhere may never call again) abort; else finalize, timed
        // by the poll like any call.
        if (std::uncaught_exceptions() > 0 || flagged()) {
          ncclCommAbort(impl_->nccl);
        } else {
          Impl::HostCall timed(*impl_, "communicator finalize");
          if (ncclCommFinalize(impl_->nccl) == ncclSuccess) ncclCommDestroy(impl_->nccl);
          else ncclCommAbort(impl_->nccl);
        }
        impl_->nccl = nullptr;
      }
    }
    for (int h : impl_->hooks)
      if (h) remove_hook(h);
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

void DeviceGroup::allreduce_sum(const ExecSpace& space, float* data, std::size_t n) { allreduce(space, data, n, false); }

void DeviceGroup::allreduce_mean(const ExecSpace& space, float* data, std::size_t n) { allreduce(space, data, n, true); }

void DeviceGroup::allreduce(const ExecSpace& space, float* data, std::size_t n, bool mean) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    nccl_call("ncclAllReduce", [&](ncclComm_t c) {
      return ncclAllReduce(data, data, n, ncclFloat, mean ? ncclAvg : ncclSum, c, space.cuda_stream());
    });
    return;
  }
#endif
  host_allreduce(space, data, n);
  if (mean) scale(space, data, n, 1.0f / float(size_));
}

void DeviceGroup::host_allreduce(const ExecSpace& space, float* data, std::size_t n) {
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
    Impl::HostCall timed(*impl_, op);
    r = call(impl_->nccl);  // blocking communicator: returns once the work is queued
  }
  if (r != ncclSuccess) {
    check();  // aborted by the device watch: the failure is flagged
    GMI_NCCL_CHECK(r);
  }
}
#endif

void scale(const ExecSpace& space, float* data, std::size_t n, float s) {
  Kokkos::parallel_for(
      "gmi::mpi::scale", Range64(space, 0, std::int64_t(n)),
      KOKKOS_LAMBDA(const std::int64_t i) { data[i] *= s; });
}

}  // namespace gmi::mpi
