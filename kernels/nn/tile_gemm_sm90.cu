// tile_gemm's Hopper kernels: see tile_gemm_sm90.hpp.  nvcc for sm_90a, no Kokkos.
#include "kernels/nn/tile_gemm_sm90.hpp"

#include <cmath>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/stream_hooks.hpp"

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

namespace gmi::nn::tile_gemm::sm90 {

namespace {

using namespace cute;

// The activations as kernels/nn/activation.hpp defines them (tanhf, not CUTLASS's tanh.approx):
// f, and the gradient through f from f's output y.
struct TanhOp {
  static __device__ float f(float x) { return ::tanhf(x); }
  static __device__ float df_from_y(float y) { return 1.0f - y * y; }
};
struct ReluOp {
  static __device__ float f(float x) { return x > 0.0f ? x : 0.0f; }
  static __device__ float df_from_y(float y) { return y > 0.0f ? 1.0f : 0.0f; }
};

/// f on an epilogue fragment (the one-parameter functor CUTLASS's fusion operations take).
template <class Op, class T>
struct Apply {
  __device__ T operator()(T const& x) const { return Op::f(x); }
};
template <class Op, class T, int N>
struct Apply<Op, cutlass::Array<T, N>> {
  __device__ cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& x) const {
    cutlass::Array<T, N> y;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) y[i] = Op::f(x[i]);
    return y;
  }
};
/// d * f'(y) on a fragment (the gradient's epilogue: d the product, y the auxiliary input).
template <class Op, class T>
struct ApplyGrad {
  __device__ T operator()(T const& d, T const& y) const { return d * Op::df_from_y(y); }
};
template <class Op, class T, int N>
struct ApplyGrad<Op, cutlass::Array<T, N>> {
  template <class U>
  __device__ cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& d, cutlass::Array<U, N> const& y) const {
    cutlass::Array<T, N> r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) r[i] = d[i] * Op::df_from_y(T(y[i]));
    return r;
  }
};
template <class T>
using TanhF = Apply<TanhOp, T>;
template <class T>
using ReluF = Apply<ReluOp, T>;
template <class T>
using TanhGrad = ApplyGrad<TanhOp, T>;
template <class T>
using ReluGrad = ApplyGrad<ReluOp, T>;

using LayoutA = cutlass::layout::RowMajor;     // M x K, K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // K x N, K contiguous
using LayoutD = cutlass::layout::ColumnMajor;  // M x N, M contiguous
constexpr int kAlign = 4;                      // floats per 16-byte access

/// One GEMM: TF32 wgmma fed by TMA (tile shape, kernel and epilogue schedule), D = fusion(acc, ...),
/// no C operand.
template <class Tile, class Schedule, class EpiSchedule, class Fusion>
struct Kernel {
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Shape<_1, _1, _1>,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlign, float, LayoutD, kAlign,
      EpiSchedule, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, float, LayoutA, kAlign, float, LayoutB, kAlign, float, Tile,
      Shape<_1, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      Schedule>::CollectiveOp;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<
      cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>>;
};

using Pingpong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using Cooperative = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpiPingpong = cutlass::epilogue::TmaWarpSpecialized;
using EpiCooperative = cutlass::epilogue::TmaWarpSpecializedCooperative;

/// The candidates: fn(Kernel<...>{}) for tile shape `candidate` and fusion F.
template <template <class, class, class, class> class K, class F, class Fn>
bool with_candidate(int candidate, Fn&& fn) {
  switch (candidate) {
    case 0: return fn(K<Shape<_128, _128, _32>, Pingpong, EpiPingpong, F>{});
    case 1: return fn(K<Shape<_64, _128, _32>, Pingpong, EpiPingpong, F>{});
    case 2: return fn(K<Shape<_128, _256, _32>, Cooperative, EpiCooperative, F>{});
  }
  return false;
}

/// Device buffers of a stream: W transposed for the forward product, and the scratch a kernel may
/// ask for (the tile scheduler's).  They grow outside graph captures only (every problem's first
/// call on a stream runs directly: tile_gemm.cpp times it there), and a buffer that grows keeps
/// its old memory until its stream goes (kernels/core/stream_hooks.hpp): a graph captured
/// earlier still reads and writes that address when it is replayed.
struct Buffers {
  void* transposed = nullptr;
  std::size_t transposed_bytes = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  std::vector<void*> retired;  ///< outgrown buffers, which captured graphs may still use
};
std::mutex g_mutex;
std::map<cudaStream_t, Buffers> g_buffers;

void forget_stream(void* stream) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_buffers.find(static_cast<cudaStream_t>(stream));
  if (it == g_buffers.end()) return;
  it->second.retired.push_back(it->second.transposed);
  it->second.retired.push_back(it->second.workspace);
  for (void* p : it->second.retired)
    if (p) cudaFree(p);
  g_buffers.erase(it);
}

/// The stream's buffer `which` of at least `bytes` bytes (nullptr for 0).
void* buffer(cudaStream_t stream, void* Buffers::*which, std::size_t Buffers::*size, std::size_t bytes,
             const char* what) {
  if (bytes == 0) return nullptr;
  static const bool hooked = (on_stream_destroyed(forget_stream), true);
  (void)hooked;
  const std::lock_guard<std::mutex> lock(g_mutex);
  Buffers& b = g_buffers[stream];
  if (b.*size < bytes) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    GMI_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone)
      throw Error(std::string("tile_gemm (sm90): ") + what + " of " + std::to_string(bytes) +
                  " bytes first needed inside a CUDA graph capture (run the product once directly on this stream)");
    void* grown = nullptr;
    GMI_CUDA_CHECK(cudaMalloc(&grown, bytes));
    if (b.*which) b.retired.push_back(b.*which);
    b.*which = grown;
    b.*size = bytes;
  }
  return b.*which;
}

/// Wt (out rows of `in` floats) = W^T, W out x in column-major: consecutive threads write
/// consecutive floats of a row.
__global__ void transpose(int out, int in, const float* __restrict__ W, float* __restrict__ Wt) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(out) * in) return;
  const long long o = i / in, k = i - o * in;
  Wt[i] = W[k * out + o];
}

const float* transposed(cudaStream_t stream, int out, int in, const float* W) {
  const long long n = static_cast<long long>(out) * in;
  auto* Wt = static_cast<float*>(
      buffer(stream, &Buffers::transposed, &Buffers::transposed_bytes, std::size_t(n) * sizeof(float),
             "W transposed"));
  transpose<<<unsigned((n + 255) / 256), 256, 0, stream>>>(out, in, W, Wt);
  GMI_CUDA_CHECK(cudaGetLastError());
  return Wt;
}

/// Runs a problem CUTLASS has said it can implement (G::can_implement, which the callers ask first).
template <class G>
void launch(cudaStream_t stream, typename G::Arguments& args) {
  G op;
  void* ws = buffer(stream, &Buffers::workspace, &Buffers::workspace_bytes, G::get_workspace_size(args), "workspace");
  cutlass::Status st = op.initialize(args, ws, stream);
  if (st == cutlass::Status::kSuccess) st = op.run(stream);
  if (st != cutlass::Status::kSuccess)
    throw Error(std::string("tile_gemm (sm90): the CUTLASS kernel failed to launch: ") +
                cutlass::cutlassGetStatusString(st));
}

template <template <class> class F>
bool forward_as(cudaStream_t stream, int candidate, int out, int in, int B, const float* W, const float* b,
                const float* X, float* Z) {
  using Fusion = cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<F, float, float, float, void, float>;
  return with_candidate<Kernel, Fusion>(candidate, [&](auto k) {
    using G = typename decltype(k)::Gemm;
    typename G::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {out, B, in, 1};
    args.mainloop.ptr_A = W;  // W's transpose once CUTLASS takes the problem (the same size and alignment)
    args.mainloop.dA = {std::int64_t(in), _1{}, std::int64_t(0)};
    args.mainloop.ptr_B = X;
    args.mainloop.dB = {std::int64_t(in), _1{}, std::int64_t(0)};
    args.epilogue.thread.bias_ptr = b;
    args.epilogue.ptr_C = nullptr;
    args.epilogue.ptr_D = Z;
    args.epilogue.dD = {_1{}, std::int64_t(out), std::int64_t(0)};
    args.epilogue.dC = args.epilogue.dD;
    if (G::can_implement(args) != cutlass::Status::kSuccess) return false;
    args.mainloop.ptr_A = transposed(stream, out, in, W);
    launch<G>(stream, args);
    return true;
  });
}

template <template <class> class F>
bool input_grad_as(cudaStream_t stream, int candidate, int out, int in, int B, const float* W, const float* dZ,
                   const float* Y, float* dZin) {
  using Fusion = cutlass::epilogue::fusion::LinCombDeEltAct<LayoutD, F, float, float, float, void, float>;
  return with_candidate<Kernel, Fusion>(candidate, [&](auto k) {
    using G = typename decltype(k)::Gemm;
    typename G::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {in, B, out, 1};
    args.mainloop.ptr_A = W;  // W^T (in x out) is W read with its columns contiguous
    args.mainloop.dA = {std::int64_t(out), _1{}, std::int64_t(0)};
    args.mainloop.ptr_B = dZ;
    args.mainloop.dB = {std::int64_t(out), _1{}, std::int64_t(0)};
    args.epilogue.thread.aux_ptr = Y;
    args.epilogue.thread.dAux = {_1{}, std::int64_t(in), std::int64_t(0)};
    args.epilogue.ptr_C = nullptr;
    args.epilogue.ptr_D = dZin;
    args.epilogue.dD = {_1{}, std::int64_t(in), std::int64_t(0)};
    args.epilogue.dC = args.epilogue.dD;
    if (G::can_implement(args) != cutlass::Status::kSuccess) return false;
    launch<G>(stream, args);
    return true;
  });
}

}  // namespace

bool forward(cudaStream_t stream, int candidate, Act act, int out, int in, int B, const float* W, const float* b,
             const float* X, float* Z) {
  return act == Act::Tanh ? forward_as<TanhF>(stream, candidate, out, in, B, W, b, X, Z)
                          : forward_as<ReluF>(stream, candidate, out, in, B, W, b, X, Z);
}

bool input_grad(cudaStream_t stream, int candidate, Act act, int out, int in, int B, const float* W,
                const float* dZ, const float* Y, float* dZin) {
  return act == Act::Tanh ? input_grad_as<TanhGrad>(stream, candidate, out, in, B, W, dZ, Y, dZin)
                          : input_grad_as<ReluGrad>(stream, candidate, out, in, B, W, dZ, Y, dZin);
}

}  // namespace gmi::nn::tile_gemm::sm90
