#include "kernels/nn/blas.hpp"

#include <cstdlib>
#include <string>

#include "kernels/core/error.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#else
#include <cblas.h>
#endif

namespace gmi::blas {

namespace {
std::uint64_t g_calls = 0;

/// A Kokkos profiling region around a BLAS call, named with its operation and shape (e.g.
/// "gmi::blas::gemm NT 256x376x65536"), while a Kokkos tool listens (bench --kernel-times).
struct Region {
  bool on;
  Region(const char* what, Op ta, Op tb, int m, int n, int k) : on(Kokkos::Tools::profileLibraryLoaded()) {
    if (!on) return;
    std::string name = std::string("gmi::blas::") + what + " " + (ta == Op::N ? "N" : "T") + (tb == Op::N ? "N" : "T") +
                       " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    Kokkos::Profiling::pushRegion(name);
  }
  ~Region() {
    if (on) Kokkos::Profiling::popRegion();
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};
}  // namespace

std::uint64_t call_count() { return g_calls; }

MatmulPrecision parse_matmul_precision(const std::string& name) {
  if (name == "fp32") return MatmulPrecision::FP32;
  if (name == "tf32") return MatmulPrecision::TF32;
  if (name == "bf16") return MatmulPrecision::BF16;
  throw InputError("device.matmul: expected one of fp32, tf32, bf16, got '" + name + "'");
}

void init_host_threads() {
#if !defined(KOKKOS_ENABLE_CUDA)
  for (const char* v : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (std::getenv(v)) return;
  openblas_set_num_threads(1);
#endif
}

#if defined(KOKKOS_ENABLE_CUDA)
namespace {
cublasHandle_t g_handle = nullptr;
MatmulPrecision g_precision = MatmulPrecision::FP32;

cublasHandle_t handle(const ExecSpace& space) {
  if (!g_handle) {
    GMI_CUBLAS_CHECK(cublasCreate(&g_handle));
    GMI_CUBLAS_CHECK(cublasSetMathMode(g_handle, g_precision == MatmulPrecision::TF32
                                                     ? CUBLAS_TF32_TENSOR_OP_MATH
                                                     : CUBLAS_DEFAULT_MATH));
  }
  GMI_CUBLAS_CHECK(cublasSetStream(g_handle, space.cuda_stream()));
  return g_handle;
}
cublasOperation_t op(Op o) { return o == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T; }
}  // namespace

void set_matmul_precision(MatmulPrecision p) {
  g_precision = p;
  if (g_handle)
    GMI_CUBLAS_CHECK(cublasSetMathMode(
        g_handle, p == MatmulPrecision::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

namespace {
// BF16 operands: each fp32 operand rounded to bfloat16 (nearest even) into scratch that grows to
// the largest operand seen (the first rollout and update size it; a captured graph never grows
// it), then cublasGemmEx on BF16 tensor cores with fp32 accumulation and an fp32 result.
// (CUBLAS_COMPUTE_32F_FAST_16BF alone only permits BF16: on an H100, cuBLAS 13 kept fp32/TF32
// products for 256^3.)
Kokkos::View<std::uint16_t*, MemSpace> g_bf16[2];

/// Elements a column-major operand of `rows` x `cols` with leading dimension `ld` spans, for
/// `count` operands `stride` apart (stride 0: one shared operand).
std::size_t span(int rows, int cols, int ld, long long stride, int count) {
  const std::size_t one = std::size_t(ld) * (cols - 1) + rows;
  return stride > 0 ? std::size_t(stride) * (count - 1) + one : one;
}
int rows_of(Op o, int r, int c) { return o == Op::N ? r : c; }

const void* to_bf16(const ExecSpace& space, int which, const float* x, std::size_t n) {
  auto& buf = g_bf16[which];
  if (buf.extent(0) < n) {
    // A captured graph keeps the scratch's address: growing it there would free what the graph uses.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    GMI_CUDA_CHECK(cudaStreamIsCapturing(space.cuda_stream(), &capturing));
    GMI_REQUIRE(capturing == cudaStreamCaptureStatusNone,
                "blas: the BF16 operand scratch would grow inside a CUDA graph capture (device.graphs); "
                "run a direct pass of the same sizes first");
    buf = Kokkos::View<std::uint16_t*, MemSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::blas::bf16"), n);
  }
  std::uint16_t* out = buf.data();
  Kokkos::parallel_for(
      "gmi::blas::to_bf16", Range64(space, 0, std::int64_t(n)),
      KOKKOS_LAMBDA(const std::int64_t i) { out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i])); });
  return out;
}
}  // namespace

void release_handles() {
  if (g_handle) cublasDestroy(g_handle);
  g_handle = nullptr;
  for (auto& b : g_bf16) b = {};
}

template <>
void gemm<float>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, float alpha,
                 const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  ++g_calls;
  const Region region("gemm", ta, tb, m, n, k);
  if (g_precision == MatmulPrecision::BF16) {
    const void* a = to_bf16(space, 0, A, span(rows_of(ta, m, k), rows_of(ta, k, m), lda, 0, 1));
    const void* b = to_bf16(space, 1, B, span(rows_of(tb, k, n), rows_of(tb, n, k), ldb, 0, 1));
    GMI_CUBLAS_CHECK(cublasGemmEx(handle(space), op(ta), op(tb), m, n, k, &alpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF,
                                  ldb, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  GMI_CUBLAS_CHECK(
      cublasSgemm(handle(space), op(ta), op(tb), m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc));
}
template <>
void gemm<double>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, double alpha,
                  const double* A, int lda, const double* B, int ldb, double beta, double* C,
                  int ldc) {
  ++g_calls;
  const Region region("gemm", ta, tb, m, n, k);
  GMI_CUBLAS_CHECK(
      cublasDgemm(handle(space), op(ta), op(tb), m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc));
}
template <>
void gemv<float>(const ExecSpace& space, Op ta, int m, int n, float alpha, const float* A, int lda,
                 const float* x, float beta, float* y) {
  ++g_calls;
  const Region region("gemv", ta, Op::N, m, n, 1);
  GMI_CUBLAS_CHECK(cublasSgemv(handle(space), op(ta), m, n, &alpha, A, lda, x, 1, &beta, y, 1));
}
template <>
void gemv<double>(const ExecSpace& space, Op ta, int m, int n, double alpha, const double* A,
                  int lda, const double* x, double beta, double* y) {
  ++g_calls;
  const Region region("gemv", ta, Op::N, m, n, 1);
  GMI_CUBLAS_CHECK(cublasDgemv(handle(space), op(ta), m, n, &alpha, A, lda, x, 1, &beta, y, 1));
}
template <>
void gemm_strided_batched<float>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, float alpha,
                                 const float* A, int lda, long long strideA, const float* B, int ldb, long long strideB,
                                 float beta, float* C, int ldc, long long strideC, int count) {
  ++g_calls;
  const Region region("gemm_strided_batched", ta, tb, m, n, k);
  if (g_precision == MatmulPrecision::BF16) {
    const void* a = to_bf16(space, 0, A, span(rows_of(ta, m, k), rows_of(ta, k, m), lda, strideA, count));
    const void* b = to_bf16(space, 1, B, span(rows_of(tb, k, n), rows_of(tb, n, k), ldb, strideB, count));
    GMI_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle(space), op(ta), op(tb), m, n, k, &alpha, a, CUDA_R_16BF, lda,
                                                strideA, b, CUDA_R_16BF, ldb, strideB, &beta, C, CUDA_R_32F, ldc,
                                                strideC, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  GMI_CUBLAS_CHECK(cublasSgemmStridedBatched(handle(space), op(ta), op(tb), m, n, k, &alpha, A, lda, strideA, B, ldb,
                                             strideB, &beta, C, ldc, strideC, count));
}
template <>
void gemv_strided_batched<float>(const ExecSpace& space, Op ta, int m, int n, float alpha, const float* A, int lda,
                                 long long strideA, const float* x, long long stridex, float beta, float* y,
                                 long long stridey, int count) {
  ++g_calls;
  const Region region("gemv_strided_batched", ta, Op::N, m, n, 1);
  GMI_CUBLAS_CHECK(cublasSgemvStridedBatched(handle(space), op(ta), m, n, &alpha, A, lda, strideA, x, 1, stridex,
                                             &beta, y, 1, stridey, count));
}
template <>
void nrm2<float>(const ExecSpace& space, int n, const float* x, float* result) {
  ++g_calls;
  const Region region("nrm2", Op::N, Op::N, n, 1, 1);
  auto h = handle(space);
  GMI_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  GMI_CUBLAS_CHECK(cublasSnrm2(h, n, x, 1, result));
  GMI_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
}
template <>
void nrm2<double>(const ExecSpace& space, int n, const double* x, double* result) {
  ++g_calls;
  const Region region("nrm2", Op::N, Op::N, n, 1, 1);
  auto h = handle(space);
  GMI_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  GMI_CUBLAS_CHECK(cublasDnrm2(h, n, x, 1, result));
  GMI_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
}

#else  // host build: CBLAS

namespace {
CBLAS_TRANSPOSE op(Op o) { return o == Op::N ? CblasNoTrans : CblasTrans; }
}  // namespace

void set_matmul_precision(MatmulPrecision) {}
void release_handles() {}

template <>
void gemm<float>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, float alpha,
                 const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  ++g_calls;
  const Region region("gemm", ta, tb, m, n, k);
  space.fence();
  cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
template <>
void gemm<double>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, double alpha,
                  const double* A, int lda, const double* B, int ldb, double beta, double* C,
                  int ldc) {
  ++g_calls;
  const Region region("gemm", ta, tb, m, n, k);
  space.fence();
  cblas_dgemm(CblasColMajor, op(ta), op(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
template <>
void gemv<float>(const ExecSpace& space, Op ta, int m, int n, float alpha, const float* A, int lda,
                 const float* x, float beta, float* y) {
  ++g_calls;
  const Region region("gemv", ta, Op::N, m, n, 1);
  space.fence();
  cblas_sgemv(CblasColMajor, op(ta), m, n, alpha, A, lda, x, 1, beta, y, 1);
}
template <>
void gemv<double>(const ExecSpace& space, Op ta, int m, int n, double alpha, const double* A,
                  int lda, const double* x, double beta, double* y) {
  ++g_calls;
  const Region region("gemv", ta, Op::N, m, n, 1);
  space.fence();
  cblas_dgemv(CblasColMajor, op(ta), m, n, alpha, A, lda, x, 1, beta, y, 1);
}
template <>
void gemm_strided_batched<float>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, float alpha,
                                 const float* A, int lda, long long strideA, const float* B, int ldb, long long strideB,
                                 float beta, float* C, int ldc, long long strideC, int count) {
  ++g_calls;
  const Region region("gemm_strided_batched", ta, tb, m, n, k);
  space.fence();
  for (int i = 0; i < count; ++i)
    cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, alpha, A + i * strideA, lda, B + i * strideB, ldb, beta,
                C + i * strideC, ldc);
}
template <>
void gemv_strided_batched<float>(const ExecSpace& space, Op ta, int m, int n, float alpha, const float* A, int lda,
                                 long long strideA, const float* x, long long stridex, float beta, float* y,
                                 long long stridey, int count) {
  ++g_calls;
  const Region region("gemv_strided_batched", ta, Op::N, m, n, 1);
  space.fence();
  for (int i = 0; i < count; ++i)
    cblas_sgemv(CblasColMajor, op(ta), m, n, alpha, A + i * strideA, lda, x + i * stridex, 1, beta, y + i * stridey, 1);
}
template <>
void nrm2<float>(const ExecSpace& space, int n, const float* x, float* result) {
  ++g_calls;
  const Region region("nrm2", Op::N, Op::N, n, 1, 1);
  space.fence();
  *result = cblas_snrm2(n, x, 1);
}
template <>
void nrm2<double>(const ExecSpace& space, int n, const double* x, double* result) {
  ++g_calls;
  const Region region("nrm2", Op::N, Op::N, n, 1, 1);
  space.fence();
  *result = cblas_dnrm2(n, x, 1);
}
#endif

}  // namespace gmi::blas
