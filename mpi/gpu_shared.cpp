#include "mpi/gpu_shared.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
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
// IntraSync::device: blocks per kernel (at most), threads per block.
constexpr int kMaxBlocks = 64;
constexpr int kThreads = 512;

// Every GMI's shared region: two halves of `capacity_` floats, then the flags.
//  IntraSync::host:   the halves are a double buffer.
//  IntraSync::device: half 0 is the GMI's input, half 1 its sum (the whole sum on the leader, or
//  the GMI's own slice with Sums::owners).
// Flags (IntraSync::device), written by the GMI `from` into the region of the GMI that waits,
// carrying the call's epoch: arrive (block b of `from` has started the call), done (block b of
// `from` has written its part of the sum: to the leader, or to every GMI in allreduce_kernel),
// ready (the sum `from` holds is final: the leader's, or each owner's slice).
constexpr std::size_t kFlagWords = 3 * std::size_t(kMaxBlocks) * kMaxGmisPerGpu;
KOKKOS_INLINE_FUNCTION std::size_t arrive_flag(int b, int from) { return std::size_t(b) * kMaxGmisPerGpu + from; }
KOKKOS_INLINE_FUNCTION std::size_t done_flag(int b, int from) {
  return (std::size_t(kMaxBlocks) + b) * kMaxGmisPerGpu + from;
}
KOKKOS_INLINE_FUNCTION std::size_t ready_flag(int b, int from) {
  return (2 * std::size_t(kMaxBlocks) + b) * kMaxGmisPerGpu + from;
}

/// The part of n floats that GMI r of m sums: slices of a multiple of 4 floats, so that
/// each starts 16-byte aligned.
struct Slice {
  std::size_t lo, hi;
};
KOKKOS_INLINE_FUNCTION Slice slice_of(std::size_t n, int m, int r) {
  const std::size_t chunk = ((n + std::size_t(m) - 1) / std::size_t(m) + 3) / 4 * 4;
  const std::size_t lo = std::size_t(r) * chunk < n ? std::size_t(r) * chunk : n;
  return {lo, lo + chunk < n ? lo + chunk : n};
}

/// What the IntraSync::device steps read: every GMI's input, sum buffer and flags.
struct Peers {
  const float* input[kMaxGmisPerGpu];
  float* sums[kMaxGmisPerGpu];
  std::uint32_t* flags[kMaxGmisPerGpu];
  int m, r;
};

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

void scale_into(const ExecSpace& space, float* dst, const float* src, std::size_t n, float s) {
  Kokkos::parallel_for("gmi::mpi::GpuShared::copy_out", Range64(space, 0, std::int64_t(n)),
                       KOKKOS_LAMBDA(const std::int64_t i) { dst[i] = src[i] * s; });
}

#if defined(KOKKOS_ENABLE_CUDA)
// Flags are written and polled across processes (one GPU, one or several contexts): release at
// system scope; the poll reads relaxed and acquires once the value is there.  (Sleeping between
// polls made no difference on an H200.)
__device__ __forceinline__ void flag_store(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void flag_wait(const std::uint32_t* p, std::uint32_t e) {
  std::uint32_t v;
  do {
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  } while (std::int32_t(v - e) < 0);  // epochs wrap after 2^32 calls
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/// Block b of every GMI has started: every GMI's input is complete (stream order), and every GMI
/// has finished its previous call.
__device__ __forceinline__ void arrive(const Peers& P, std::uint32_t e) {
  const int b = blockIdx.x, t = threadIdx.x;
  if (t < P.m) {
    flag_store(P.flags[t] + arrive_flag(b, P.r), e);
    flag_wait(P.flags[P.r] + arrive_flag(b, t), e);
  }
  __syncthreads();
}

/// f(j, count, stride) over this thread's share of slice `s`: the 16-byte vectors j, j + stride,
/// ..., j + (count - 1) * stride of the slice's aligned part, U at a time (loads in flight: the
/// kernels run on few blocks); then f(i, 0, 0) for each element i of its scalar tail.  Block b of
/// every GMI covers the same elements of a slice, so a block needs only the same block of the
/// others.
template <int U, class F>
__device__ __forceinline__ void for_my_share(const Slice& s, F&& f) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x, first = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t nv = (s.hi - s.lo) / 4;
  for (std::size_t j = first; j < nv; j += U * stride) {
    int count = 1;
    while (count < U && j + count * stride < nv) ++count;
    f(j, count, stride);
  }
  for (std::size_t i = s.lo + 4 * nv + first; i < s.hi; i += stride) f(i, 0, std::size_t(0));
}

constexpr int kSumVectors = 2;   // vectors per thread and step in sum_slice
constexpr int kSumPeers = 4;     // inputs loaded before they are added
constexpr int kCopyVectors = 8;  // vectors per thread and step in copy_out

/// Where slice r of the sum lives: in the leader's sum buffer, or in its owner's (Sums::owners).
__device__ __forceinline__ float* slice_sum(const Peers& P, int r, bool owners) { return P.sums[owners ? r : 0]; }

/// The sum over every GMI's input of this GMI's slice.  Inputs are added in slot order, however
/// many are loaded at once.
__device__ __forceinline__ void sum_slice(const Peers& P, std::size_t n, bool owners) {
  const Slice s = slice_of(n, P.m, P.r);
  float* const sum = slice_sum(P, P.r, owners);
  for_my_share<kSumVectors>(s, [&](std::size_t j, int count, std::size_t stride) {
    if (count == 0) {  // scalar tail: j is an element index
      float a = P.input[0][j];
      for (int p = 1; p < P.m; ++p) a += P.input[p][j];
      sum[j] = a;
      return;
    }
    float4 a[kSumVectors];
#pragma unroll
    for (int u = 0; u < kSumVectors; ++u)
      if (u < count) a[u] = reinterpret_cast<const float4*>(P.input[0] + s.lo)[j + u * stride];
    for (int p0 = 1; p0 < P.m; p0 += kSumPeers) {
      float4 x[kSumPeers][kSumVectors];
#pragma unroll
      for (int q = 0; q < kSumPeers; ++q)
#pragma unroll
        for (int u = 0; u < kSumVectors; ++u)
          if (p0 + q < P.m && u < count) x[q][u] = reinterpret_cast<const float4*>(P.input[p0 + q] + s.lo)[j + u * stride];
#pragma unroll
      for (int q = 0; q < kSumPeers; ++q)
#pragma unroll
        for (int u = 0; u < kSumVectors; ++u)
          if (p0 + q < P.m && u < count) {
            a[u].x += x[q][u].x;
            a[u].y += x[q][u].y;
            a[u].z += x[q][u].z;
            a[u].w += x[q][u].w;
          }
    }
#pragma unroll
    for (int u = 0; u < kSumVectors; ++u)
      if (u < count) reinterpret_cast<float4*>(sum + s.lo)[j + u * stride] = a[u];
  });
}

/// data = sum * scale, this thread's share of every slice.
__device__ __forceinline__ void copy_out(const Peers& P, std::size_t n, float* data, float scale, bool owners) {
  const bool vec = reinterpret_cast<std::uintptr_t>(data) % 16 == 0;
  for (int r = 0; r < P.m; ++r) {
    const Slice s = slice_of(n, P.m, r);
    const float* const sum = slice_sum(P, r, owners);
    for_my_share<kCopyVectors>(s, [&](std::size_t j, int count, std::size_t stride) {
      if (count == 0) {
        data[j] = sum[j] * scale;
        return;
      }
      if (!vec) {
        for (int u = 0; u < count; ++u)
          for (int k = 0; k < 4; ++k) data[s.lo + 4 * (j + u * stride) + k] = sum[s.lo + 4 * (j + u * stride) + k] * scale;
        return;
      }
      float4 a[kCopyVectors];
#pragma unroll
      for (int u = 0; u < kCopyVectors; ++u)
        if (u < count) a[u] = reinterpret_cast<const float4*>(sum + s.lo)[j + u * stride];
#pragma unroll
      for (int u = 0; u < kCopyVectors; ++u)
        if (u < count)
          reinterpret_cast<float4*>(data + s.lo)[j + u * stride] =
              make_float4(a[u].x * scale, a[u].y * scale, a[u].z * scale, a[u].w * scale);
    });
  }
}

/// This block's part of every slice is in the sum: tell `to_all` GMIs, or only the leader.
__device__ __forceinline__ void signal_done(const Peers& P, std::uint32_t e, bool to_all) {
  __syncthreads();
  const int b = blockIdx.x, t = threadIdx.x;
  if (to_all ? t < P.m : t == 0) flag_store(P.flags[t] + done_flag(b, P.r), e);
}

__device__ __forceinline__ void wait_done(const Peers& P, std::uint32_t e) {
  if (threadIdx.x < P.m) flag_wait(P.flags[P.r] + done_flag(blockIdx.x, threadIdx.x), e);
  __syncthreads();
}

/// reduce(): the GPU's sum lands in the leader's buffer, or each slice in its owner's.  With the
/// leader's buffer, the leader's kernel ends only when every GMI has written its slice, so
/// whatever the leader queues next (NCCL among GPUs) sees all of it.
__global__ void __launch_bounds__(kThreads) reduce_kernel(Peers P, std::uint32_t e, std::size_t n, bool owners) {
  arrive(P, e);
  sum_slice(P, n, owners);
  if (owners) return;
  signal_done(P, e, false);
  if (P.r == 0) wait_done(P, e);
}

/// broadcast(): starts after this GMI's work on its part of the sum (the leader's whole buffer,
/// or its own slice) and copies out once every part is final.
__global__ void __launch_bounds__(kThreads)
    broadcast_kernel(Peers P, std::uint32_t e, std::size_t n, float* data, float scale, bool owners) {
  const int b = blockIdx.x, t = threadIdx.x;
  if (owners) {
    if (t < P.m) {
      flag_store(P.flags[t] + ready_flag(b, P.r), e);
      flag_wait(P.flags[P.r] + ready_flag(b, t), e);
    }
  } else if (P.r == 0) {
    if (t > 0 && t < P.m) flag_store(P.flags[t] + ready_flag(b, 0), e);
  } else if (t == 0) {
    flag_wait(P.flags[P.r] + ready_flag(b, 0), e);
  }
  __syncthreads();
  copy_out(P, n, data, scale, owners);
}

/// Both in one kernel when nothing happens to the sum in between: block b copies out what
/// block b of every GMI summed, as soon as they have.
__global__ void __launch_bounds__(kThreads)
    allreduce_kernel(Peers P, std::uint32_t e, std::size_t n, float* data, float scale) {
  arrive(P, e);
  sum_slice(P, n, false);
  signal_done(P, e, true);
  wait_done(P, e);
  copy_out(P, n, data, scale, false);
}
#else
void flag_store(std::uint32_t* p, std::uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
void flag_wait(const std::uint32_t* p, std::uint32_t e) {
  while (std::int32_t(__atomic_load_n(p, __ATOMIC_ACQUIRE) - e) < 0) sched_yield();
}
#endif

}  // namespace

struct GpuShared::Impl {
  std::vector<float*> peer;  // every GMI's shared region, mapped into this process
  float* own = nullptr;
  std::size_t cap = 0;       // floats per half of a region (a multiple of 64: 256-byte halves)
  Peers peers{};
  std::uint32_t* flags(float* region) const { return reinterpret_cast<std::uint32_t*>(region + 2 * cap); }
#if defined(KOKKOS_ENABLE_CUDA)
  // IntraSync::host orders the GMIs' streams with interprocess events, without draining them:
  // `published` is recorded after a GMI's copy in, `summed` by the leader after its sum (and
  // what followed it).
  cudaEvent_t published = nullptr, summed = nullptr;
  std::vector<cudaEvent_t> peer_published, peer_summed;
#else
  MPI_Win win = MPI_WIN_NULL;
#endif
};

GpuShared::GpuShared(MPI_Comm gpu_comm, std::size_t capacity, IntraSync sync)
    : sync_(sync), capacity_(capacity), impl_(std::make_unique<Impl>()) {
  GMI_MPI_CHECK(MPI_Comm_dup(gpu_comm, &comm_));
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  size_ = comm_size(comm_);
  rank_ = comm_rank(comm_);
  if (size_ > kMaxGmisPerGpu)
    throw InputError(fmt::format("gmi: {} GMIs on one GPU; the intra-GPU path supports at most {}",
                                 size_, kMaxGmisPerGpu));
  impl_->peer.assign(size_, nullptr);
  impl_->cap = (std::max<std::size_t>(capacity, 1) + 63) / 64 * 64;
  const std::size_t bytes = 2 * impl_->cap * sizeof(float) + kFlagWords * sizeof(std::uint32_t);
#if defined(KOKKOS_ENABLE_CUDA)
  // Plain cudaMalloc: IPC handles do not work on stream-ordered (pool) allocations.
  GMI_CUDA_CHECK(cudaMalloc(&impl_->own, bytes));
  GMI_CUDA_CHECK(cudaMemset(impl_->flags(impl_->own), 0, kFlagWords * sizeof(std::uint32_t)));
  GMI_CUDA_CHECK(cudaDeviceSynchronize());  // flags are zero before any peer can signal
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
  if (sync_ == IntraSync::host)
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
  // Blocks per kernel: the same on every GMI of the GPU (block b waits for block b of the others).
  // Every block of every GMI must be resident at once, or spinning blocks could hold the SMs
  // that the blocks they wait for need: at most one block per SM a GMI sees (under MPS, its
  // share), and all GMIs' blocks together at most half of what fits on an SM at once (registers
  // decide: 512 threads of 64-96 registers), and at least one, per SM of the GPU (GMIs that MPS
  // does not limit each see the whole GPU).  Counting threads alone allowed two blocks per SM,
  // which the broadcast kernel's registers do not fit: 4 unlimited GMIs on one H100 hung now and
  // then.
  int fit = kThreads;
  for (const void* k : {reinterpret_cast<const void*>(reduce_kernel), reinterpret_cast<const void*>(broadcast_kernel),
                        reinterpret_cast<const void*>(allreduce_kernel)}) {
    int n = 0;
    GMI_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, kThreads, 0));
    fit = std::min(fit, n);
  }
  const int per_sm = std::max(1, fit / 2);
  int sms = 1;
  GMI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ExecSpace().cuda_device()));
  // The GPU's SMs: what this GMI sees over the share MPS gives it.
  double share = 1.0;
  if (const char* pct = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"))
    share = std::clamp(std::atof(pct) / 100.0, 0.01, 1.0);
  int lows[2] = {-sms, -int(sms / share)};  // minima over the GPU's GMIs (negated maxima)
  GMI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, lows, 2, MPI_INT, MPI_MAX, comm_));
  blocks_ = std::clamp(std::min(-lows[0], -per_sm * lows[1] / size_), 1, kMaxBlocks);
#else
  GMI_MPI_CHECK(MPI_Win_allocate_shared(MPI_Aint(bytes), sizeof(float), MPI_INFO_NULL, comm_,
                                        &impl_->own, &impl_->win));
  for (int p = 0; p < size_; ++p) {
    MPI_Aint sz = 0;
    int disp = 0;
    GMI_MPI_CHECK(MPI_Win_shared_query(impl_->win, p, &sz, &disp, &impl_->peer[p]));
  }
  GMI_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, impl_->win));
  std::fill_n(impl_->flags(impl_->own), kFlagWords, 0u);
  barrier();  // flags are zero before any peer can signal
  blocks_ = 1;
#endif
  Peers& P = impl_->peers;
  P.m = size_;
  P.r = rank_;
  for (int p = 0; p < size_; ++p) {
    P.input[p] = impl_->peer[p];
    P.flags[p] = impl_->flags(impl_->peer[p]);
  }
  for (int p = 0; p < size_; ++p) P.sums[p] = impl_->peer[p] + impl_->cap;
}

GpuShared::~GpuShared() {
  // During an error the peers may be elsewhere: no collective calls then (the job is aborted).
  const bool unwinding = std::uncaught_exceptions() > 0;
#if defined(KOKKOS_ENABLE_CUDA)
  Kokkos::fence();  // peers' work on our buffer is ordered after work on our stream
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

float* GpuShared::input() const { return sync_ == IntraSync::device ? impl_->own : nullptr; }

void GpuShared::barrier() {
#if !defined(KOKKOS_ENABLE_CUDA)
  GMI_MPI_CHECK(MPI_Win_sync(impl_->win));
#endif
  GMI_MPI_CHECK(MPI_Barrier(comm_));
#if !defined(KOKKOS_ENABLE_CUDA)
  GMI_MPI_CHECK(MPI_Win_sync(impl_->win));
#endif
}

std::pair<std::size_t, std::size_t> GpuShared::slice(std::size_t n) const {
  const Slice s = slice_of(n, size_, rank_);
  return {s.lo, s.hi - s.lo};
}

float* GpuShared::reduce(const ExecSpace& space, const float* data, std::size_t n, Sums where) {
  GMI_REQUIRE(n <= capacity_, "buffer larger than the intra-GPU capacity");
  if (sync_ == IntraSync::device) {
    copy(space, impl_->own, data, n);
    device_reduce(space, n, where == Sums::owners);
    if (where == Sums::owners) return impl_->own + impl_->cap + slice_of(n, size_, rank_).lo;
    return rank_ == 0 ? impl_->own + impl_->cap : nullptr;
  }
  GMI_REQUIRE(where == Sums::leader, "slice owners need IntraSync::device");
  host_reduce(space, data, n);
  return rank_ == 0 ? impl_->own + phase_ * impl_->cap : nullptr;
}

void GpuShared::broadcast(const ExecSpace& space, float* data, std::size_t n, float scale, Sums where) {
  if (sync_ == IntraSync::device)
    device_broadcast(space, data, n, scale, where == Sums::owners);
  else
    host_broadcast(space, data, n, scale);
}

void GpuShared::allreduce(const ExecSpace& space, float* data, std::size_t n, float scale) {
  GMI_REQUIRE(n <= capacity_, "buffer larger than the intra-GPU capacity");
#if defined(KOKKOS_ENABLE_CUDA)
  if (sync_ == IntraSync::device) {
    copy(space, impl_->own, data, n);
    ++epoch_;
    allreduce_kernel<<<blocks_, kThreads, 0, space.cuda_stream()>>>(impl_->peers, epoch_, n, data, scale);
    GMI_CUDA_CHECK(cudaGetLastError());
    return;
  }
#endif
  reduce(space, data, n);
  broadcast(space, data, n, scale);
}

void GpuShared::allreduce_sum(const ExecSpace& space, float* data, std::size_t n) {
  if (size_ == 1 || n == 0) return;
  allreduce(space, data, n, 1.0f);
}

// ---- IntraSync::device --------------------------------------------------------------------

void GpuShared::device_reduce(const ExecSpace& space, std::size_t n, bool owners) {
  ++epoch_;
#if defined(KOKKOS_ENABLE_CUDA)
  reduce_kernel<<<blocks_, kThreads, 0, space.cuda_stream()>>>(impl_->peers, epoch_, n, owners);
  GMI_CUDA_CHECK(cudaGetLastError());
#else
  // One "block": the calling thread signals and polls; the sums run on the host space.
  const Peers& P = impl_->peers;
  space.fence();  // our input is complete, and our last copy out of the sums is done
  for (int p = 0; p < size_; ++p) flag_store(P.flags[p] + arrive_flag(0, rank_), epoch_);
  for (int p = 0; p < size_; ++p) flag_wait(P.flags[rank_] + arrive_flag(0, p), epoch_);
  const Slice s = slice_of(n, size_, rank_);
  SumPeers f;
  f.out = P.sums[owners ? rank_ : 0] + s.lo;
  f.np = size_;
  for (int p = 0; p < size_; ++p) f.src[p] = P.input[p] + s.lo;
  Kokkos::parallel_for("gmi::mpi::GpuShared::sum", Range64(space, 0, std::int64_t(s.hi - s.lo)), f);
  space.fence();
  if (owners) return;
  flag_store(P.flags[0] + done_flag(0, rank_), epoch_);
  if (rank_ == 0)
    for (int p = 0; p < size_; ++p) flag_wait(P.flags[0] + done_flag(0, p), epoch_);
#endif
}

void GpuShared::device_broadcast(const ExecSpace& space, float* data, std::size_t n, float scale, bool owners) {
#if defined(KOKKOS_ENABLE_CUDA)
  broadcast_kernel<<<blocks_, kThreads, 0, space.cuda_stream()>>>(impl_->peers, epoch_, n, data, scale, owners);
  GMI_CUDA_CHECK(cudaGetLastError());
#else
  const Peers& P = impl_->peers;
  space.fence();  // this GMI's work on its part of the sum is complete
  if (owners) {
    for (int p = 0; p < size_; ++p) flag_store(P.flags[p] + ready_flag(0, rank_), epoch_);
    for (int p = 0; p < size_; ++p) flag_wait(P.flags[rank_] + ready_flag(0, p), epoch_);
    for (int p = 0; p < size_; ++p) {
      const Slice s = slice_of(n, size_, p);
      scale_into(space, data + s.lo, P.sums[p] + s.lo, s.hi - s.lo, scale);
    }
    return;
  }
  if (rank_ == 0)
    for (int p = 1; p < size_; ++p) flag_store(P.flags[p] + ready_flag(0, 0), epoch_);
  else
    flag_wait(P.flags[rank_] + ready_flag(0, 0), epoch_);
  scale_into(space, data, P.sums[0], n, scale);
#endif
}

// ---- IntraSync::host ----------------------------------------------------------------------

void GpuShared::host_reduce(const ExecSpace& space, const float* data, std::size_t n) {
  // The other half of the double buffer may still be read by slower GMIs of the previous call;
  // this half was last read before the previous call's second barrier.
  const std::size_t off = phase_ * impl_->cap;
  copy(space, impl_->own + off, data, n);
#if defined(KOKKOS_ENABLE_CUDA)
  // The barrier only guarantees that every event is recorded before anyone waits on it.
  GMI_CUDA_CHECK(cudaEventRecord(impl_->published, space.cuda_stream()));
  barrier();
  if (rank_ == 0)
    for (int p = 1; p < size_; ++p) GMI_CUDA_CHECK(cudaStreamWaitEvent(space.cuda_stream(), impl_->peer_published[p], 0));
#else
  space.fence();
  barrier();
#endif
  if (rank_ != 0) return;
  SumPeers f;
  f.out = impl_->own + off;
  f.np = size_;
  for (int p = 0; p < size_; ++p) f.src[p] = impl_->peer[p] + off;
  Kokkos::parallel_for("gmi::mpi::GpuShared::sum", Range64(space, 0, std::int64_t(n)), f);
}

void GpuShared::host_broadcast(const ExecSpace& space, float* data, std::size_t n, float scale) {
  const float* sum = impl_->peer[0] + phase_ * impl_->cap;
#if defined(KOKKOS_ENABLE_CUDA)
  if (rank_ == 0) GMI_CUDA_CHECK(cudaEventRecord(impl_->summed, space.cuda_stream()));
  barrier();
  if (rank_ != 0) GMI_CUDA_CHECK(cudaStreamWaitEvent(space.cuda_stream(), impl_->peer_summed[0], 0));
#else
  if (rank_ == 0) space.fence();  // the leader's sum (and what followed it) is complete
  barrier();
#endif
  if (scale == 1.0f)
    copy(space, data, sum, n);
  else
    scale_into(space, data, sum, n, scale);
#if !defined(KOKKOS_ENABLE_CUDA)
  space.fence();
#endif
  phase_ ^= 1;
}

}  // namespace gmi::mpi
