#include "mpi/shared_slots.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <exception>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "mpi/deadline.hpp"
#include "mpi/topology.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi::mpi {
namespace {

/// What each member says about itself.
struct Where {
  int node = 0;                ///< MPI_COMM_WORLD rank of its node's first member
  int node_rank = 0;           ///< its rank among the node's members
  std::uint64_t layout = 0;    ///< what its buffers hold, as it computes it (SharedSlots)
  char gpu[24] = {};           ///< its device's PCI bus id (GPU builds), else empty: for the text
  unsigned char uuid[16] = {}; ///< its device's UUID (GPU builds; a MIG instance has its own)
  char mig[64] = {};           ///< CUDA_VISIBLE_DEVICES where it names a MIG instance, else empty
};

/// The node's members (MPI_Comm_split_type, after a bounded barrier).
MPI_Comm node_comm(MPI_Comm comm) {
  barrier(comm, "the set-up of the shared rollout buffers (MPI_Comm_split_type)");
  MPI_Comm node = MPI_COMM_NULL;
  GMI_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, comm_rank(comm), MPI_INFO_NULL, &node));
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN));
  return node;
}

/// Every member's Where, by rank of `comm`.
std::vector<Where> gather_where(MPI_Comm comm, MPI_Comm node, std::uint64_t layout) {
  Where me;
  me.node = world_ranks(node).front();
  me.node_rank = comm_rank(node);
  me.layout = layout;
#if defined(KOKKOS_ENABLE_CUDA)
  int device = 0;
  GMI_CUDA_CHECK(cudaGetDevice(&device));
  GMI_CUDA_CHECK(cudaDeviceGetPCIBusId(me.gpu, int(sizeof(me.gpu)), device));
  cudaDeviceProp prop;
  GMI_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::memcpy(me.uuid, prop.uuid.bytes, sizeof(me.uuid));
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && std::strncmp(v, "MIG-", 4) == 0)
    std::strncpy(me.mig, v, sizeof(me.mig) - 1);
#endif
  std::vector<Where> all(std::size_t(comm_size(comm)));
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallgather(&me, sizeof(Where), MPI_BYTE, all.data(), sizeof(Where), MPI_BYTE, comm, &req));
  wait(req, comm, "the set-up of the shared rollout buffers (MPI_Iallgather of the places)");
  return all;
}

std::string place_text(const Where& w) {
  std::string s = fmt::format("node of rank {}", w.node);
  if (w.gpu[0]) s = fmt::format("GPU {} of the ", w.gpu) + s;
  if (w.mig[0]) s = fmt::format("{}, ", w.mig) + s;
  return s;
}

std::string obstacle(const std::vector<Where>& all, const std::vector<Route>& routes, MPI_Comm comm) {
  const std::vector<int> world = world_ranks(comm);
  for (const Route& r : routes) {
    const Where &p = all.at(std::size_t(r.producer)), &c = all.at(std::size_t(r.consumer));
    // The device's UUID, not its bus id: MIG instances of one GPU share the bus id, not CUDA IPC.
    if (p.node != c.node || std::memcmp(p.uuid, c.uuid, sizeof(p.uuid)) != 0 ||
        std::strncmp(p.mig, c.mig, sizeof(p.mig)) != 0)
      return fmt::format("rank {} ({}) and its consumer rank {} ({}) share no memory", world[std::size_t(r.producer)],
                         place_text(p), world[std::size_t(r.consumer)], place_text(c));
  }
  return {};
}

}  // namespace

std::string why_not_shared(MPI_Comm comm, const std::vector<Route>& routes) {
  MPI_Comm node = node_comm(comm);
  const std::vector<Where> all = gather_where(comm, node, 0);
  MPI_Comm_free(&node);
  return obstacle(all, routes, comm);
}

struct SharedSlots::Impl {
  std::byte* own = nullptr;              // producer: its buffers
  std::vector<std::byte*> producers;     // consumer: its producers' buffers, mapped
#if !defined(KOKKOS_ENABLE_CUDA)
  MPI_Win win = MPI_WIN_NULL;
#endif
};

SharedSlots::SharedSlots(MPI_Comm comm, const std::vector<Route>& routes, std::size_t bytes, int slots,
                         std::uint64_t layout)
    : bytes_((bytes + 255) / 256 * 256), slots_(slots), impl_(std::make_unique<Impl>()) {
  GMI_REQUIRE(slots >= 1, "shared rollout buffers: at least one slot");
  node_ = node_comm(comm);
  const std::vector<Where> all = gather_where(comm, node_, layout);
  if (std::string why = obstacle(all, routes, comm); !why.empty()) {
    MPI_Comm_free(&node_);
    throw Error("shared rollout buffers: " + why);
  }
  const int me = comm_rank(comm);
  const std::vector<int> world = world_ranks(comm);
  bool producer = false;
  for (const Route& r : routes) {
    if (all[std::size_t(r.producer)].layout != all[std::size_t(r.consumer)].layout) {
      MPI_Comm_free(&node_);
      throw Error(fmt::format("shared rollout buffers: rank {} fills them with another layout than its consumer "
                              "rank {} reads",
                              world[std::size_t(r.producer)], world[std::size_t(r.consumer)]));
    }
    producer = producer || r.producer == me;
  }
  std::vector<int> mine;  // the producers this member consumes from, in route order
  for (const auto& [consumer, producers] : producers_by_consumer(routes))
    if (consumer == me) mine = producers;
  const std::size_t total = producer ? bytes_ * std::size_t(slots_) : 0;
#if defined(KOKKOS_ENABLE_CUDA)
  // Plain cudaMalloc: IPC handles do not work on stream-ordered (pool) allocations.
  struct Handle {
    int valid = 0;
    cudaIpcMemHandle_t h;
  } handle;
  if (total > 0) {
    GMI_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&impl_->own), total));
    GMI_CUDA_CHECK(cudaIpcGetMemHandle(&handle.h, impl_->own));
    handle.valid = 1;
  }
  std::vector<Handle> handles(all.size());
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallgather(&handle, sizeof(Handle), MPI_BYTE, handles.data(), sizeof(Handle), MPI_BYTE, comm, &req));
  wait(req, comm, "the set-up of the shared rollout buffers (MPI_Iallgather of the IPC handles)");
  for (int p : mine) {
    GMI_REQUIRE(handles[std::size_t(p)].valid, "shared rollout buffers: a producer without buffers");
    void* ptr = nullptr;
    GMI_CUDA_CHECK(cudaIpcOpenMemHandle(&ptr, handles[std::size_t(p)].h, cudaIpcMemLazyEnablePeerAccess));
    impl_->producers.push_back(static_cast<std::byte*>(ptr));
  }
#else
  void* base = nullptr;
  GMI_MPI_CHECK(MPI_Win_allocate_shared(MPI_Aint(total), 1, MPI_INFO_NULL, node_, &base, &impl_->win));
  impl_->own = total > 0 ? static_cast<std::byte*>(base) : nullptr;
  for (int p : mine) {
    MPI_Aint size = 0;
    int disp = 0;
    void* ptr = nullptr;
    GMI_MPI_CHECK(MPI_Win_shared_query(impl_->win, all[std::size_t(p)].node_rank, &size, &disp, &ptr));
    GMI_REQUIRE(std::size_t(size) >= bytes_ * std::size_t(slots_), "shared rollout buffers: a producer's are short");
    impl_->producers.push_back(static_cast<std::byte*>(ptr));
  }
  GMI_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, impl_->win));
#endif
}

SharedSlots::~SharedSlots() {
  // During an error the peers may be elsewhere: no collective calls then (the job is aborted),
  // only what is this GMI's own to undo.
  const bool unwinding = std::uncaught_exceptions() > 0;
#if defined(KOKKOS_ENABLE_CUDA)
  try {
    Kokkos::fence();  // this GMI's copies from its producers' buffers are over
  } catch (const std::exception&) {  // a sticky device error: unmap anyway
  }
  for (std::byte* p : impl_->producers) cudaIpcCloseMemHandle(p);
  if (unwinding) return;
  try {
    barrier(node_, "the end of the shared rollout buffers");  // no buffer is freed while mapped
  } catch (const std::exception&) {  // tests: the census throws instead of aborting
    return;
  }
  if (impl_->own) cudaFree(impl_->own);
#else
  MPI_Win_unlock_all(impl_->win);  // local
  if (unwinding) return;
  try {
    barrier(node_, "the end of the shared rollout buffers");  // MPI_Win_free waits for every member
  } catch (const std::exception&) {
    return;
  }
  MPI_Win_free(&impl_->win);
#endif
  MPI_Comm_free(&node_);
}

void SharedSlots::sync() const {
#if !defined(KOKKOS_ENABLE_CUDA)
  GMI_MPI_CHECK(MPI_Win_sync(impl_->win));  // this process's loads and stores against the others'
#endif
}

std::byte* SharedSlots::own(int slot) const {
  GMI_REQUIRE(impl_->own && slot >= 0 && slot < slots_, "shared rollout buffers: no buffer " + std::to_string(slot));
  return impl_->own + std::size_t(slot) * bytes_;
}

const std::byte* SharedSlots::producer(std::size_t k, int slot) const {
  GMI_REQUIRE(k < impl_->producers.size() && slot >= 0 && slot < slots_,
              fmt::format("shared rollout buffers: no buffer {} of producer {}", slot, k));
  return impl_->producers[k] + std::size_t(slot) * bytes_;
}

}  // namespace gmi::mpi
