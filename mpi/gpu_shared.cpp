#include "mpi/gpu_shared.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <vector>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/device_watch.hpp"
#include "mpi/topology.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi::mpi {
namespace {

constexpr int kMaxGmisPerGpu = 32;
// IntraSync::device: at most this many blocks of this many threads in the sum and copy kernels.
constexpr int kMaxBlocks = 264;
constexpr int kThreads = 512;

// Every GMI's shared region: two halves of `capacity_` floats, then the flags.
//  IntraSync::host:   the halves are a double buffer.
//  IntraSync::device: half 0 is the GMI's input, half 1 its sum (the whole sum on the leader, or
//  the GMI's own slice with Sums::owners).
// Flags (IntraSync::device), written by the GMI `from` into the region of the GMI that waits,
// carrying the call's epoch (GateKind): arrive (`from` has started the call: its input is
// complete and its previous call is over), done (`from` has written its slice of the sum: to
// the leader, or to every GMI in allreduce()), ready (the sum `from` holds is final: the
// leader's, or each owner's slice).
// After them one more word: this GMI's own "a gate ran out" mark, in device memory, which every
// gate reads first (the process-wide DeviceAbort word is host memory, read only while spinning).
constexpr std::size_t kFlagWords = 3 * std::size_t(kMaxGmisPerGpu) + 1;
constexpr std::size_t kOwnAbort = 3 * std::size_t(kMaxGmisPerGpu);
KOKKOS_INLINE_FUNCTION std::size_t flag_index(std::uint32_t kind, int from) {
  return std::size_t(kind) * kMaxGmisPerGpu + std::size_t(from);
}
constexpr std::uint32_t kArrive = std::uint32_t(GateKind::arrive), kDone = std::uint32_t(GateKind::done),
                        kReady = std::uint32_t(GateKind::ready);

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
// system scope; the poll reads relaxed and acquires once the value is there.
__device__ __forceinline__ void flag_store(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ std::uint32_t flag_load(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// One gate: signal `signal_kind` into the regions of the GMIs in `signal_mask`, then wait for
/// `wait_kind` from the GMIs in `wait_mask` (lane p handles GMI p).  Work queued before the gate
/// on this stream is complete when it signals (stream order) and visible (system-scope fence).
struct Gate {
  std::uint32_t* flags[kMaxGmisPerGpu];
  int world[kMaxGmisPerGpu];
  int m, r;
  std::uint32_t e;
  std::uint32_t signal_kind, signal_mask, wait_kind, wait_mask;
  DeviceAbort* abort;          // the process's word (mapped host memory)
  std::uint32_t* own_abort;    // this GMI's mark (device memory)
  std::uint64_t timeout_ns;
};

/// Lane t's part of a gate (lanes >= m have none): false when a wait ran out or was released.
__device__ __forceinline__ bool gate_lane(const Gate& g) {
  const int t = threadIdx.x;
  volatile DeviceAbort* ab = g.abort;
  volatile std::uint32_t* own = g.own_abort;
  if (t >= g.m) return true;
  if (*own != 0) return false;  // a wait already ran out: let the stream drain
  if (g.signal_mask >> t & 1u) {
    __threadfence_system();
    flag_store(g.flags[t] + flag_index(g.signal_kind, g.r), g.e);
  }
  if (!(g.wait_mask >> t & 1u)) return true;
  const std::uint32_t* f = g.flags[g.r] + flag_index(g.wait_kind, t);
  const std::uint64_t t0 = global_ns();
  for (unsigned spin = 1;; ++spin) {
    if (std::int32_t(flag_load(f) - g.e) >= 0) break;  // epochs wrap after 2^32 calls
    if (spin % 256 == 0) {
      if (*own != 0) return false;
      if (ab->flag != 0) {  // released by the host: another wait of this GMI ran out
        *own = 1;
        return false;
      }
      const std::uint64_t waited = global_ns() - t0;
      if (waited > g.timeout_ns) {
        *own = 1;
        ab->peer = g.world[t];
        ab->kind = g.wait_kind;
        ab->call = g.e;
        ab->waited_ns = waited;
        __threadfence_system();
        ab->flag = 1;
        return false;
      }
    }
  }
  asm volatile("fence.acq_rel.sys;" ::: "memory");
  return true;
}

__global__ void __launch_bounds__(32) gate_kernel(Gate g) { gate_lane(g); }

/// A gate run by the first warp of a block, the whole block waiting: false when it failed.
__device__ __forceinline__ bool block_gate(const Gate& g) {
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  __syncthreads();  // also: this block's earlier writes come before the signal
  if (threadIdx.x < 32 && !gate_lane(g)) failed = 1;
  __syncthreads();
  return failed == 0;
}

/// f(j, count, stride) over this thread's share of slice `s`: the 16-byte vectors j, j + stride,
/// ..., j + (count - 1) * stride of the slice's aligned part, U at a time (loads in flight); then
/// f(i, 0, 0) for each element i of its scalar tail.
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

constexpr int kSumVectors = 2;   // vectors per thread and step in sum_kernel
constexpr int kSumPeers = 4;     // inputs loaded before they are added
constexpr int kCopyVectors = 8;  // vectors per thread and step in copy_kernel

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
__global__ void __launch_bounds__(kThreads) sum_kernel(Peers P, std::size_t n, bool owners) { sum_slice(P, n, owners); }

__global__ void __launch_bounds__(kThreads)
    copy_kernel(Peers P, std::size_t n, float* data, float scale, bool owners) {
  copy_out(P, n, data, scale, owners);
}

/// Small buffers: a whole step in one block, so one launch instead of two to four: gate `first`,
/// then the sum (kSum), gate `second`, then the copy out (kCopy).  A gate with empty masks does
/// nothing.  One block per GMI spins at a time, at most half an SM (launch bounds), so these
/// need no more co-residency than the gates.
constexpr int kSum = 1, kCopy = 2, kOwners = 4;
__global__ void __launch_bounds__(kThreads, 2)
    small_kernel(Peers P, Gate first, Gate second, std::size_t n, float* data, float scale, int what) {
  const bool owners = what & kOwners;
  if (!block_gate(first)) return;
  if (what & kSum) sum_slice(P, n, owners);
  if (!block_gate(second)) return;
  if (what & kCopy) copy_out(P, n, data, scale, owners);
}

/// A gate of call `e` from the GMI's fixed fields: signal `sk` to the GMIs of `sm`, wait for
/// `wk` from those of `wm`.
Gate make_gate(const Gate& base, std::uint32_t e, std::uint32_t sk, std::uint32_t sm, std::uint32_t wk,
               std::uint32_t wm) {
  Gate g = base;
  g.e = e;
  g.timeout_ns = device_timeout_ns();
  g.signal_kind = sk, g.signal_mask = sm, g.wait_kind = wk, g.wait_mask = wm;
  return g;
}

/// Buffers up to this many floats take small_kernel (one launch); larger ones gates and
/// grid-wide sum and copy kernels (bandwidth).
constexpr std::size_t kSmallMax = 65536;

/// One step on `stream`: gate `first`, [sum], gate `second`, [copy].
void run_step(cudaStream_t stream, const Peers& P, int blocks, const Gate& first, const Gate& second,
              std::size_t n, float* data, float scale, int what) {
  if (n <= kSmallMax) {
    small_kernel<<<1, kThreads, 0, stream>>>(P, first, second, n, data, scale, what);
  } else {
    const bool owners = what & kOwners;
    if (first.signal_mask | first.wait_mask) gate_kernel<<<1, 32, 0, stream>>>(first);
    if (what & kSum) sum_kernel<<<blocks, kThreads, 0, stream>>>(P, n, owners);
    if (second.signal_mask | second.wait_mask) gate_kernel<<<1, 32, 0, stream>>>(second);
    if (what & kCopy) copy_kernel<<<blocks, kThreads, 0, stream>>>(P, n, data, scale, owners);
  }
  GMI_CUDA_CHECK(cudaGetLastError());
}
#else
void flag_store(std::uint32_t* p, std::uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
bool flag_reached(const std::uint32_t* p, std::uint32_t e) {
  return std::int32_t(__atomic_load_n(p, __ATOMIC_ACQUIRE) - e) >= 0;
}
#endif

#if defined(KOKKOS_ENABLE_CUDA)
/// Bit p set for every p in [0, m) but `except`.
std::uint32_t all_but(int m, int except) {
  std::uint32_t mask = m >= 32 ? 0xffffffffu : (1u << m) - 1u;
  return except >= 0 ? mask & ~(1u << except) : mask;
}
#endif

}  // namespace

struct GpuShared::Impl {
  std::vector<float*> peer;  // every GMI's shared region, mapped into this process
  float* own = nullptr;
  std::size_t cap = 0;       // floats per half of a region (a multiple of 64: 256-byte halves)
  Peers peers{};
#if defined(KOKKOS_ENABLE_CUDA)
  Gate gate{};               // the fields every gate of this GMI shares
  // IntraSync::host orders the GMIs' streams with interprocess events, without draining them:
  // `published` is recorded after a GMI's copy in, `summed` by the leader after its sum (and
  // what followed it).
  cudaEvent_t published = nullptr, summed = nullptr;
  std::vector<cudaEvent_t> peer_published, peer_summed;
#else
  MPI_Win win = MPI_WIN_NULL;
#endif
  std::uint32_t* flags(float* region) const { return reinterpret_cast<std::uint32_t*>(region + 2 * cap); }
};

GpuShared::GpuShared(MPI_Comm gpu_comm, std::size_t capacity, IntraSync sync)
    : sync_(sync), capacity_(capacity), impl_(std::make_unique<Impl>()) {
  comm_ = duplicate(gpu_comm, "the set-up of the within-GPU buffers (MPI_Ibarrier)");
  size_ = comm_size(comm_);
  rank_ = comm_rank(comm_);
  if (size_ > kMaxGmisPerGpu)
    throw InputError(fmt::format("gmi: {} GMIs on one GPU; the intra-GPU path supports at most {}",
                                 size_, kMaxGmisPerGpu));
  world_ = world_ranks(comm_);
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
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallgather(&mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE, comm_, &req));
  wait(req, comm_, "the set-up of the within-GPU buffers (MPI_Iallgather of the IPC handles)");
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
      GMI_MPI_CHECK(MPI_Iallgather(&h, sizeof(h), MPI_BYTE, hs.data(), sizeof(h), MPI_BYTE, comm_, &req));
      wait(req, comm_, "the set-up of the within-GPU buffers (MPI_Iallgather of the event handles)");
      peers->assign(size_, nullptr);
      for (int p = 0; p < size_; ++p)
        if (p != rank_) GMI_CUDA_CHECK(cudaIpcOpenEventHandle(&(*peers)[p], hs[p]));
    }
  // The sum and copy kernels never wait, so their size is this GMI's own business: one block per
  // SM it sees (under MPS, its share).
  int sms = 1;
  GMI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ExecSpace().cuda_device()));
  blocks_ = std::clamp(sms, 1, kMaxBlocks);
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
    P.sums[p] = impl_->peer[p] + impl_->cap;
  }
#if defined(KOKKOS_ENABLE_CUDA)
  Gate& g = impl_->gate;
  for (int p = 0; p < size_; ++p) {
    g.flags[p] = P.flags[p];
    g.world[p] = world_[p];
  }
  g.m = size_;
  g.r = rank_;
  g.abort = device_abort();
  g.own_abort = impl_->flags(impl_->own) + kOwnAbort;
#endif
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
  mpi::barrier(comm_, "the within-GPU barrier (MPI_Ibarrier)");
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
    // Sums into the leader's buffer; every GMI copies every slice out once every GMI's is in.
    copy(space, impl_->own, data, n);
    ++epoch_;
    const std::uint32_t all = all_but(size_, -1), others = all_but(size_, rank_);
    const Gate arrive = make_gate(impl_->gate, epoch_, kArrive, all, kArrive, others), done = make_gate(impl_->gate, epoch_, kDone, all, kDone, others);
    run_step(space.cuda_stream(), impl_->peers, blocks_, arrive, done, n, data, scale, kSum | kCopy);
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

#if !defined(KOKKOS_ENABLE_CUDA)
void GpuShared::host_flag_wait(const std::uint32_t* flag, std::uint32_t e, int from, std::uint32_t kind) {
  if (flag_reached(flag, e)) return;
  const Deadline d;
  for (unsigned spin = 1; !flag_reached(flag, e); ++spin) {
    if (spin % 256 == 0 && (d.expired() || interrupted()))
      give_up(gate_wait_text(kind, world_[from], e), {world_[from]}, d.elapsed());
    sched_yield();
  }
}
#endif

void GpuShared::device_reduce(const ExecSpace& space, std::size_t n, bool owners) {
  ++epoch_;
#if defined(KOKKOS_ENABLE_CUDA)
  // Leader's sum: the leader's stream goes on (NCCL among GPUs) only once every slice is in.
  const bool leader = rank_ == 0;
  const Gate arrive = make_gate(impl_->gate, epoch_, kArrive, all_but(size_, -1), kArrive, all_but(size_, rank_));
  const Gate done = owners ? make_gate(impl_->gate, epoch_, kDone, 0u, kDone, 0u)
                           : make_gate(impl_->gate, epoch_, kDone, leader ? 0u : 1u, kDone, leader ? all_but(size_, 0) : 0u);
  run_step(space.cuda_stream(), impl_->peers, blocks_, arrive, done, n, nullptr, 1.0f, kSum | (owners ? kOwners : 0));
#else
  // One "block": the calling thread signals and polls; the sums run on the host space.
  const Peers& P = impl_->peers;
  space.fence();  // our input is complete, and our last copy out of the sums is done
  for (int p = 0; p < size_; ++p) flag_store(P.flags[p] + flag_index(kArrive, rank_), epoch_);
  for (int p = 0; p < size_; ++p) host_flag_wait(P.flags[rank_] + flag_index(kArrive, p), epoch_, p, kArrive);
  const Slice s = slice_of(n, size_, rank_);
  SumPeers f;
  f.out = P.sums[owners ? rank_ : 0] + s.lo;
  f.np = size_;
  for (int p = 0; p < size_; ++p) f.src[p] = P.input[p] + s.lo;
  Kokkos::parallel_for("gmi::mpi::GpuShared::sum", Range64(space, 0, std::int64_t(s.hi - s.lo)), f);
  space.fence();
  if (owners) return;
  flag_store(P.flags[0] + flag_index(kDone, rank_), epoch_);
  if (rank_ == 0)
    for (int p = 0; p < size_; ++p) host_flag_wait(P.flags[0] + flag_index(kDone, p), epoch_, p, kDone);
#endif
}

void GpuShared::device_broadcast(const ExecSpace& space, float* data, std::size_t n, float scale, bool owners) {
#if defined(KOKKOS_ENABLE_CUDA)
  // After this GMI's work on its part of the sum: every owner releases the others, or the
  // leader releases the rest.
  const bool leader = rank_ == 0;
  const Gate ready = owners ? make_gate(impl_->gate, epoch_, kReady, all_but(size_, -1), kReady, all_but(size_, rank_))
                            : make_gate(impl_->gate, epoch_, kReady, leader ? all_but(size_, 0) : 0u, kReady, leader ? 0u : 1u);
  const Gate none = make_gate(impl_->gate, epoch_, kReady, 0u, kReady, 0u);
  run_step(space.cuda_stream(), impl_->peers, blocks_, ready, none, n, data, scale,
           kCopy | (owners ? kOwners : 0));
#else
  const Peers& P = impl_->peers;
  space.fence();  // this GMI's work on its part of the sum is complete
  if (owners) {
    for (int p = 0; p < size_; ++p) flag_store(P.flags[p] + flag_index(kReady, rank_), epoch_);
    for (int p = 0; p < size_; ++p) host_flag_wait(P.flags[rank_] + flag_index(kReady, p), epoch_, p, kReady);
    for (int p = 0; p < size_; ++p) {
      const Slice s = slice_of(n, size_, p);
      scale_into(space, data + s.lo, P.sums[p] + s.lo, s.hi - s.lo, scale);
    }
    return;
  }
  if (rank_ == 0)
    for (int p = 1; p < size_; ++p) flag_store(P.flags[p] + flag_index(kReady, 0), epoch_);
  else
    host_flag_wait(P.flags[rank_] + flag_index(kReady, 0), epoch_, 0, kReady);
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
