#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

using namespace cute;

template <class T> struct TanhAct { CUTLASS_HOST_DEVICE T operator()(T const& z) const { return ::tanhf(z); } };
template <class T, int N> struct TanhAct<cutlass::Array<T, N>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& z) const {
    cutlass::Array<T, N> y;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) y[i] = ::tanhf(z[i]);
    return y;
  }
};
template <class T> struct DTanhFromY { CUTLASS_HOST_DEVICE T operator()(T const& d, T const& y) const { return d * (T(1) - y * y); } };
template <class T, int N> struct DTanhFromY<cutlass::Array<T, N>> {
  template <class U>
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& d, cutlass::Array<U, N> const& y) const {
    cutlass::Array<T, N> r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) r[i] = d[i] * (T(1) - T(y[i]) * T(y[i]));
    return r;
  }
};

using LayoutA = cutlass::layout::RowMajor;     // M x K, K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // K x N, K contiguous
using LayoutD = cutlass::layout::ColumnMajor;  // M x N, M contiguous

template <class Tile, class Schedule, class EpiSchedule, class Fusion>
struct Sm90Gemm {
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Shape<_1, _1, _1>,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, 4, float, LayoutD, 4,
      EpiSchedule, Fusion>::CollectiveOp;
  using Main = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, float, LayoutA, 4, float, LayoutB, 4, float, Tile,
      Shape<_1, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      Schedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

using FwdFusion = cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<TanhAct, float, float, float, void, float>;
using BwdFusion = cutlass::epilogue::fusion::LinCombDeEltAct<LayoutD, DTanhFromY, float, float, float, void, float>;

using PP = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using CO = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EPP = cutlass::epilogue::TmaWarpSpecialized;
using ECO = cutlass::epilogue::TmaWarpSpecializedCooperative;

template <class G>
cutlass::Status run(typename G::Arguments& args, cudaStream_t s) {
  G op;
  cutlass::Status st = op.can_implement(args);
  if (st != cutlass::Status::kSuccess) return st;
  static void* ws = nullptr; static size_t ws_size = 0;
  size_t need = G::get_workspace_size(args);
  if (need > ws_size) { cudaFree(ws); cudaMalloc(&ws, need); ws_size = need; }
  st = op.initialize(args, ws, s);
  if (st != cutlass::Status::kSuccess) return st;
  return op.run(s);
}

// D (out x B, ld out) = tanh(W X + b); Wt: W's transpose (out rows of `in` floats)
template <class G>
cutlass::Status forward(int out, int in, int B, const float* Wt, const float* b, const float* X, float* Z, cudaStream_t s) {
  typename G::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {out, B, in, 1};
  args.mainloop.ptr_A = Wt;
  args.mainloop.dA = {int64_t(in), _1{}, int64_t(0)};
  args.mainloop.ptr_B = X;
  args.mainloop.dB = {int64_t(in), _1{}, int64_t(0)};
  args.epilogue.thread.bias_ptr = b;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.ptr_D = Z;
  args.epilogue.dD = {_1{}, int64_t(out), int64_t(0)};
  args.epilogue.dC = args.epilogue.dD;
  return run<G>(args, s);
}

// dZin (in x B) = (W^T dZ) * (1 - Y^2); W out x in col-major = A (in x out, K=out contiguous)
template <class G>
cutlass::Status input_grad(int out, int in, int B, const float* W, const float* dZ, const float* Y, float* dZin, cudaStream_t s) {
  typename G::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {in, B, out, 1};
  args.mainloop.ptr_A = W;
  args.mainloop.dA = {int64_t(out), _1{}, int64_t(0)};
  args.mainloop.ptr_B = dZ;
  args.mainloop.dB = {int64_t(out), _1{}, int64_t(0)};
  args.epilogue.thread.aux_ptr = Y;
  args.epilogue.thread.dAux = {_1{}, int64_t(in), int64_t(0)};
  args.epilogue.ptr_C = nullptr;
  args.epilogue.ptr_D = dZin;
  args.epilogue.dD = {_1{}, int64_t(in), int64_t(0)};
  args.epilogue.dC = args.epilogue.dD;
  return run<G>(args, s);
}

#include <cublas_v2.h>
#include <vector>
#include <random>
#include <functional>
#define CK(x) do { auto e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__global__ void transpose(int rows, int cols, const float* in, float* out) {  // in rows x cols col-major -> out cols x rows col-major
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= rows * cols) return;
  int r = i % rows, c = i / rows; out[c + (size_t)r * cols] = in[i];
}
__global__ void bias_tanh(int out, long n, const float* b, float* Z) { long i = blockIdx.x * (long)blockDim.x + threadIdx.x; if (i < n) Z[i] = tanhf(Z[i] + b[i % out]); }
__global__ void dtanh(long n, const float* Y, float* D) { long i = blockIdx.x * (long)blockDim.x + threadIdx.x; if (i < n) D[i] *= 1.f - Y[i] * Y[i]; }

float time_ms(cudaStream_t s, int reps, const std::function<void()>& f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  cudaEventRecord(a, s); for (int i = 0; i < reps; ++i) f(); cudaEventRecord(b, s); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b); return ms / reps;
}
double maxdiff(const float* x, const float* y, size_t n) {
  std::vector<float> hx(n), hy(n); cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost); cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost);
  double m = 0; for (size_t i = 0; i < n; ++i) m = std::max(m, (double)std::fabs(hx[i] - hy[i])); return m;
}
int main(int argc, char** argv) {
  cudaStream_t s; cudaStreamCreate(&s);
  cublasHandle_t h; cublasCreate(&h); cublasSetStream(h, s); cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
  const int B = 65536; const int reps = 50;
  int shapes[][2] = {{256, 376}, {256, 256}, {512, 376}, {512, 512}};
  std::mt19937 g(1); std::uniform_real_distribution<float> U(-1, 1);
  for (auto& sh : shapes) {
    int out = sh[0], in = sh[1];
    std::vector<float> hW((size_t)out * in), hX((size_t)in * B), hb(out), hY((size_t)in * B), hdZ((size_t)out * B);
    for (auto& v : hW) v = U(g) * 0.1f; for (auto& v : hX) v = U(g); for (auto& v : hb) v = U(g) * 0.1f;
    for (auto& v : hY) v = U(g); for (auto& v : hdZ) v = U(g);
    float *W, *Wt, *X, *b, *Z, *Zr, *Y, *dZ, *D, *Dr;
    CK(cudaMalloc(&W, hW.size() * 4)); CK(cudaMalloc(&Wt, hW.size() * 4)); CK(cudaMalloc(&X, hX.size() * 4)); CK(cudaMalloc(&b, out * 4));
    CK(cudaMalloc(&Z, (size_t)out * B * 4)); CK(cudaMalloc(&Zr, (size_t)out * B * 4));
    CK(cudaMalloc(&Y, hY.size() * 4)); CK(cudaMalloc(&dZ, hdZ.size() * 4)); CK(cudaMalloc(&D, hY.size() * 4)); CK(cudaMalloc(&Dr, hY.size() * 4));
    cudaMemcpy(W, hW.data(), hW.size() * 4, cudaMemcpyHostToDevice); cudaMemcpy(X, hX.data(), hX.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), out * 4, cudaMemcpyHostToDevice); cudaMemcpy(Y, hY.data(), hY.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dZ, hdZ.data(), hdZ.size() * 4, cudaMemcpyHostToDevice);
    transpose<<<(out * in + 255) / 256, 256, 0, s>>>(out, in, W, Wt);
    const float one = 1, zero = 0;
    long nz = (long)out * B, nd = (long)in * B;
    auto ref_f = [&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, out, B, in, &one, W, out, X, in, &zero, Zr, out);
                       bias_tanh<<<(nz + 255) / 256, 256, 0, s>>>(out, nz, b, Zr); };
    auto gemm_f = [&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, out, B, in, &one, W, out, X, in, &zero, Zr, out); };
    auto ref_b = [&] { cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, in, B, out, &one, W, out, dZ, out, &zero, Dr, in);
                       dtanh<<<(nd + 255) / 256, 256, 0, s>>>(nd, Y, Dr); };
    auto gemm_b = [&] { cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, in, B, out, &one, W, out, dZ, out, &zero, Dr, in); };
    double gf = 2.0 * out * in * B / 1e9;
    printf("{\"shape\":\"%dx%dx%d\",\"cublas_gemm_fwd_ms\":%.4f,\"cublas_fwd_ms\":%.4f,\"cublas_gemm_bwd_ms\":%.4f,\"cublas_bwd_ms\":%.4f",
           out, B, in, time_ms(s, reps, gemm_f), time_ms(s, reps, ref_f), time_ms(s, reps, gemm_b), time_ms(s, reps, ref_b));
    ref_f(); ref_b(); CK(cudaStreamSynchronize(s));
    auto try_f = [&](const char* name, auto tag) {
      using G = decltype(tag);
      cutlass::Status st = forward<G>(out, in, B, Wt, b, X, Z, s);
      if (st != cutlass::Status::kSuccess) { printf(",\"%s\":\"%s\"", name, cutlassGetStatusString(st)); return; }
      CK(cudaStreamSynchronize(s));
      double err = maxdiff(Z, Zr, nz);
      float ms = time_ms(s, reps, [&] { forward<G>(out, in, B, Wt, b, X, Z, s); });
      printf(",\"%s_ms\":%.4f,\"%s_err\":%.2e,\"%s_tflops\":%.1f", name, ms, name, err, name, gf / ms);
    };
    auto try_b = [&](const char* name, auto tag) {
      using G = decltype(tag);
      cutlass::Status st = input_grad<G>(out, in, B, W, dZ, Y, D, s);
      if (st != cutlass::Status::kSuccess) { printf(",\"%s\":\"%s\"", name, cutlassGetStatusString(st)); return; }
      CK(cudaStreamSynchronize(s));
      double err = maxdiff(D, Dr, nd);
      float ms = time_ms(s, reps, [&] { input_grad<G>(out, in, B, W, dZ, Y, D, s); });
      printf(",\"%s_ms\":%.4f,\"%s_err\":%.2e", name, ms, name, err);
    };
    try_f("f_pp128x128", typename Sm90Gemm<Shape<_128, _128, _32>, PP, EPP, FwdFusion>::Gemm{});
    try_f("f_pp64x128", typename Sm90Gemm<Shape<_64, _128, _32>, PP, EPP, FwdFusion>::Gemm{});
    try_f("f_co128x128", typename Sm90Gemm<Shape<_128, _128, _32>, CO, ECO, FwdFusion>::Gemm{});
    try_f("f_co128x256", typename Sm90Gemm<Shape<_128, _256, _32>, CO, ECO, FwdFusion>::Gemm{});
    try_b("b_pp128x128", typename Sm90Gemm<Shape<_128, _128, _32>, PP, EPP, BwdFusion>::Gemm{});
    try_b("b_pp64x128", typename Sm90Gemm<Shape<_64, _128, _32>, PP, EPP, BwdFusion>::Gemm{});
    try_b("b_co128x128", typename Sm90Gemm<Shape<_128, _128, _32>, CO, ECO, BwdFusion>::Gemm{});
    try_b("b_co128x256", typename Sm90Gemm<Shape<_128, _256, _32>, CO, ECO, BwdFusion>::Gemm{});
    printf("}\n"); fflush(stdout);
    cudaFree(W); cudaFree(Wt); cudaFree(X); cudaFree(b); cudaFree(Z); cudaFree(Zr); cudaFree(Y); cudaFree(dZ); cudaFree(D); cudaFree(Dr);
  }
  return 0;
}
