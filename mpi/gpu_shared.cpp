#include "mpi/gpu_shared.hpp"

#include <fmt/format.h>

#include <exception>
#include <vector>

#include "kernels/core/error.hpp"
#include "mpi/topology.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi::mpi {
namespace {

constexpr int kMaxGmisPerGpu = 32;

/// out[i] = sum over p of src[p][i], p in slot order.
struct SumPeers {
  float* out;
  const float* src[kMaxGmisPerGpu];
  int np;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    float s = src[0][i];
    for (int p = 1; p < np; ++p) s += src[p][i];
    out[i] = s;
  }
};

using Unmanaged = Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

void copy(const ExecSpace& space, float* dst, const float* src, std::size_t n) {
  if (n == 0 || dst == src) return;
  Kokkos::deep_copy(space, Unmanaged(dst, n), Unmanaged(const_cast<float*>(src), n));
}

}  // namespace

struct GpuShared::Impl {
  std::vector<float*> peer;  // every GMI's shared buffer, mapped into this process
  float* own = nullptr;
#if defined(KOKKOS_ENABLE_CUDA)
  // Interprocess events order the GMIs' streams without draining them: `published` is recorded
  // after a GMI's gather copy, `summed` by the leader after its sum (and what followed it).
  cudaEvent_t published = nullptr, summed = nullptr;
  std::vector<cudaEvent_t> peer_published, peer_summed;
#else
  MPI_Win win = MPI_WIN_NULL;
#endif
};

GpuShared::GpuShared(MPI_Comm gpu_comm, std::size_t capacity)
    : capacity_(capacity), impl_(std::make_unique<Impl>()) {
  GMI_MPI_CHECK(MPI_Comm_dup(gpu_comm, &comm_));
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  size_ = comm_size(comm_);
  rank_ = comm_rank(comm_);
  if (size_ > kMaxGmisPerGpu)
    throw InputError(fmt::format("gmi: {} GMIs on one GPU; the intra-GPU path supports at most {}",
                                 size_, kMaxGmisPerGpu));
  impl_->peer.assign(size_, nullptr);
  const std::size_t bytes = 2 * std::max<std::size_t>(capacity, 1) * sizeof(float);  // double buffer
#if defined(KOKKOS_ENABLE_CUDA)
  // Plain cudaMalloc: IPC handles do not work on stream-ordered (pool) allocations.
  GMI_CUDA_CHECK(cudaMalloc(&impl_->own, bytes));
  cudaIpcMemHandle_t mine;
  GMI_CUDA_CHECK(cudaIpcGetMemHandle(&mine, impl_->own));
  std::vector<cudaIpcMemHandle_t> all(size_);
  GMI_MPI_CHECK(MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE, comm_));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) {
      impl_->peer[p] = impl_->own;
      continue;
    }
    void* ptr = nullptr;
    GMI_CUDA_CHECK(cudaIpcOpenMemHandle(&ptr, all[p], cudaIpcMemLazyEnablePeerAccess));
    impl_->peer[p] = static_cast<float*>(ptr);
  }
  for (auto [own_ev, peers] : {std::pair{&impl_->published, &impl_->peer_published},
                               std::pair{&impl_->summed, &impl_->peer_summed}}) {
    GMI_CUDA_CHECK(cudaEventCreateWithFlags(own_ev, cudaEventDisableTiming | cudaEventInterprocess));
    cudaIpcEventHandle_t h;
    GMI_CUDA_CHECK(cudaIpcGetEventHandle(&h, *own_ev));
    std::vector<cudaIpcEventHandle_t> hs(size_);
    GMI_MPI_CHECK(MPI_Allgather(&h, sizeof(h), MPI_BYTE, hs.data(), sizeof(h), MPI_BYTE, comm_));
    peers->assign(size_, nullptr);
    for (int p = 0; p < size_; ++p)
      if (p != rank_) GMI_CUDA_CHECK(cudaIpcOpenEventHandle(&(*peers)[p], hs[p]));
  }
#else
  GMI_MPI_CHECK(MPI_Win_allocate_shared(MPI_Aint(bytes), sizeof(float), MPI_INFO_NULL, comm_,
                                        &impl_->own, &impl_->win));
  for (int p = 0; p < size_; ++p) {
    MPI_Aint sz = 0;
    int disp = 0;
    GMI_MPI_CHECK(MPI_Win_shared_query(impl_->win, p, &sz, &disp, &impl_->peer[p]));
  }
  GMI_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, impl_->win));
#endif
}

GpuShared::~GpuShared() {
  // During an error the peers may be elsewhere: no collective calls then (the job is aborted).
  const bool unwinding = std::uncaught_exceptions() > 0;
#if defined(KOKKOS_ENABLE_CUDA)
  Kokkos::fence();  // peers' work on our buffer is ordered after events on our stream
  for (int p = 0; p < size_; ++p) {
    if (p != rank_ && impl_->peer[p]) cudaIpcCloseMemHandle(impl_->peer[p]);
    for (auto* v : {&impl_->peer_published, &impl_->peer_summed})
      if (p < int(v->size()) && (*v)[p]) cudaEventDestroy((*v)[p]);
  }
  if (impl_->published) cudaEventDestroy(impl_->published);
  if (impl_->summed) cudaEventDestroy(impl_->summed);
  if (unwinding) return;
  // Peers may still map our buffer until they closed their handles.
  MPI_Barrier(comm_);
  if (impl_->own) cudaFree(impl_->own);
#else
  if (unwinding) return;
  if (impl_->win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(impl_->win);
    MPI_Win_free(&impl_->win);
  }
#endif
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void GpuShared::barrier() {
#if !defined(KOKKOS_ENABLE_CUDA)
  GMI_MPI_CHECK(MPI_Win_sync(impl_->win));
#endif
  GMI_MPI_CHECK(MPI_Barrier(comm_));
#if !defined(KOKKOS_ENABLE_CUDA)
  GMI_MPI_CHECK(MPI_Win_sync(impl_->win));
#endif
}

void GpuShared::gather(const ExecSpace& space, const float* data, std::size_t n) {
  GMI_REQUIRE(n <= capacity_, "buffer larger than the intra-GPU capacity");
  // The other half of the double buffer may still be read by slower GMIs of the previous call;
  // this half was last read before the previous call's second step.
  copy(space, impl_->own + phase_ * capacity_, data, n);
#if defined(KOKKOS_ENABLE_CUDA)
  // GPU builds order the streams with interprocess events; the barrier only guarantees that
  // every event is recorded before anyone waits on it.  Nothing is drained on the host.
  GMI_CUDA_CHECK(cudaEventRecord(impl_->published, space.cuda_stream()));
  barrier();
  if (rank_ == 0)
    for (int p = 1; p < size_; ++p) GMI_CUDA_CHECK(cudaStreamWaitEvent(space.cuda_stream(), impl_->peer_published[p], 0));
#else
  space.fence();
  barrier();
#endif
}

float* GpuShared::sum_at_leader(const ExecSpace& space, std::size_t n) {
  GMI_REQUIRE(rank_ == 0, "only the GPU's leader sums");
  const std::size_t off = phase_ * capacity_;
  SumPeers f;
  f.out = impl_->own + off;
  f.np = size_;
  for (int p = 0; p < size_; ++p) f.src[p] = impl_->peer[p] + off;
  Kokkos::parallel_for("gmi::mpi::GpuShared::sum",
                       Range64(space, 0, std::int64_t(n)), f);
  return impl_->own + off;
}

void GpuShared::scatter(const ExecSpace& space, float* data, std::size_t n) {
#if defined(KOKKOS_ENABLE_CUDA)
  if (rank_ == 0) GMI_CUDA_CHECK(cudaEventRecord(impl_->summed, space.cuda_stream()));
  barrier();
  if (rank_ != 0) GMI_CUDA_CHECK(cudaStreamWaitEvent(space.cuda_stream(), impl_->peer_summed[0], 0));
  copy(space, data, impl_->peer[0] + phase_ * capacity_, n);
#else
  if (rank_ == 0) space.fence();  // the leader's sum (and what followed it) is complete
  barrier();
  copy(space, data, impl_->peer[0] + phase_ * capacity_, n);
  space.fence();
#endif
  phase_ ^= 1;
}

void GpuShared::allreduce_sum(const ExecSpace& space, float* data, std::size_t n) {
  if (size_ == 1 || n == 0) return;
  gather(space, data, n);
  if (rank_ == 0) sum_at_leader(space, n);
  scatter(space, data, n);
}

}  // namespace gmi::mpi
