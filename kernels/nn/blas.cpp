#include "kernels/nn/blas.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "kernels/core/error.hpp"
#include "kernels/core/profile_region.hpp"
#include "kernels/core/side_stream.hpp"
#include "kernels/core/stream_hooks.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#else
#include <cblas.h>
#endif

namespace gmi::blas {

namespace {
std::uint64_t g_calls = 0;
bool g_epilogues = true;

/// A Kokkos profiling region around a BLAS call, named with its operation and shape (e.g.
/// "gmi::blas::gemm NT 256x376x65536"), while a Kokkos tool listens (bench --kernel-times).
struct Region : ProfileRegion {
  Region(const char* what, Op ta, Op tb, int m, int n, int k)
      : ProfileRegion([&] {
          return std::string("gmi::blas::") + what + " " + (ta == Op::N ? "N" : "T") + (tb == Op::N ? "N" : "T") +
                 " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
        }) {}
};
}  // namespace

std::uint64_t call_count() { return g_calls; }

void set_epilogues(bool on) { g_epilogues = on; }

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
// One cuBLAS handle per stream: a handle's workspace serves one stream at a time, and work on a
// side stream (kernels/core/side_stream.hpp) runs beside the main one's.
std::map<cudaStream_t, cublasHandle_t> g_handles;
MatmulPrecision g_precision = MatmulPrecision::FP32;

cublasMath_t math_mode() { return g_precision == MatmulPrecision::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH; }

void forget_stream(void* stream);

cublasHandle_t handle(const ExecSpace& space) {
  cublasHandle_t& h = g_handles[space.cuda_stream()];
  if (!h) {
    GMI_REQUIRE(!SideStream::capturing(space),
                "blas: the first cuBLAS call on a stream is inside a CUDA graph capture; run the work once directly first");
    on_stream_destroyed(forget_stream);
    GMI_CUBLAS_CHECK(cublasCreate(&h));
    GMI_CUBLAS_CHECK(cublasSetMathMode(h, math_mode()));
    GMI_CUBLAS_CHECK(cublasSetStream(h, space.cuda_stream()));
  }
  return h;
}
cublasOperation_t op(Op o) { return o == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T; }
}  // namespace

void set_matmul_precision(MatmulPrecision p) {
  g_precision = p;
  for (auto& [stream, h] : g_handles) GMI_CUBLAS_CHECK(cublasSetMathMode(h, math_mode()));
}

bool side_streams_safe() { return g_precision != MatmulPrecision::BF16; }
MatmulPrecision matmul_precision() { return g_precision; }

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
    GMI_REQUIRE(!SideStream::capturing(space),
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

namespace {
// cuBLASLt for the fused products: one plan (descriptors and the heuristic's algorithm) per
// shape, strides, epilogue, precision and operand alignment, made on first use (a direct pass
// runs before any capture: a plan made inside one would be host work only, but the workspace is
// allocated with the handle, never inside a capture).
cublasLtHandle_t g_lt = nullptr;
std::map<cudaStream_t, void*> g_lt_workspaces;  ///< one per stream, as the cuBLAS handles
constexpr std::size_t kLtWorkspaceBytes = std::size_t(4) << 20;

struct LtKey {
  int ta, tb, m, n, k, lda, ldb, ldc, count, epilogue, precision, align_a, align_b, align_c;
  long long sa, sb, sc, sbias;
  auto tie() const {
    return std::tie(ta, tb, m, n, k, lda, ldb, ldc, count, epilogue, precision, align_a, align_b, align_c, sa, sb, sc,
                    sbias);
  }
  bool operator<(const LtKey& o) const { return tie() < o.tie(); }
};

struct LtPlan {
  bool ok = false;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
};
std::map<LtKey, LtPlan> g_lt_plans;

void destroy(LtPlan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p = LtPlan{};
}

/// The largest power of two up to 256 that divides the address (cuBLASLt's alignment preference).
std::uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 4 && v % a) a /= 2;
  return a;
}

cublasLtMatrixLayout_t lt_layout(int rows, int cols, int ld, long long stride, int count) {
  cublasLtMatrixLayout_t l = nullptr;
  GMI_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, std::uint64_t(rows), std::uint64_t(cols), ld));
  if (count > 1) {
    const std::int32_t c = count;
    const std::int64_t s = stride;
    GMI_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c, sizeof c));
    GMI_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s));
  }
  return l;
}

/// The plan for `key` (its `ok` false where cuBLASLt offers no algorithm).
const LtPlan& lt_plan(const LtKey& key) {
  auto it = g_lt_plans.find(key);
  if (it != g_lt_plans.end()) return it->second;
  LtPlan p;
  const cublasComputeType_t compute =
      key.precision == int(MatmulPrecision::TF32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  GMI_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F));
  const cublasOperation_t ta = key.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = key.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epi = cublasLtEpilogue_t(key.epilogue);
  const std::int64_t bias_stride = key.sbias;
  GMI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  GMI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  GMI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (key.count > 1)
    GMI_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride, sizeof bias_stride));
  p.a = key.ta ? lt_layout(key.k, key.m, key.lda, key.sa, key.count) : lt_layout(key.m, key.k, key.lda, key.sa, key.count);
  p.b = key.tb ? lt_layout(key.n, key.k, key.ldb, key.sb, key.count) : lt_layout(key.k, key.n, key.ldb, key.sb, key.count);
  p.c = lt_layout(key.m, key.n, key.ldc, key.sc, key.count);
  cublasLtMatmulPreference_t pref = nullptr;
  GMI_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = kLtWorkspaceBytes;
  const std::uint32_t al_a = std::uint32_t(key.align_a), al_b = std::uint32_t(key.align_b), al_c = std::uint32_t(key.align_c);
  GMI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  GMI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a));
  GMI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b));
  GMI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c));
  GMI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(g_lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    p.ok = true;
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  } else {
    destroy(p);
  }
  return g_lt_plans.emplace(key, p).first->second;
}

/// One fused product (the epilogue's vector at `vec`), or false where none runs.
bool lt_matmul(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, const float* A, int lda, long long sa,
               const float* B, int ldb, long long sb, float* C, int ldc, long long sc, int count, const void* vec,
               long long svec, cublasLtEpilogue_t epi) {
  if (!g_epilogues || g_precision == MatmulPrecision::BF16) return false;
  void*& workspace = g_lt_workspaces[space.cuda_stream()];
  if (!g_lt || !workspace) {
    if (SideStream::capturing(space)) return false;
    if (!g_lt) GMI_CUBLAS_CHECK(cublasLtCreate(&g_lt));
    on_stream_destroyed(forget_stream);
    GMI_CUDA_CHECK(cudaMalloc(&workspace, kLtWorkspaceBytes));
  }
  // Every operand of a batch must have the alignment the plan promises, not only the first.
  auto al = [&](const void* p, long long stride) {
    return int(count > 1 ? std::min(alignment(p), alignment(reinterpret_cast<const void*>(std::uintptr_t(stride) * 4)))
                         : alignment(p));
  };
  const LtKey key{ta == Op::T, tb == Op::T, m, n, k, lda, ldb, ldc, count, int(epi), int(g_precision),
                  al(A, sa), al(B, sb), std::min(al(C, sc), al(vec, svec)), count > 1 ? sa : 0, count > 1 ? sb : 0,
                  count > 1 ? sc : 0, count > 1 ? svec : 0};
  if (SideStream::capturing(space) && !g_lt_plans.count(key)) return false;
  const LtPlan& p = lt_plan(key);
  if (!p.ok) return false;
  GMI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vec, sizeof vec));
  const float one = 1.0f, zero = 0.0f;
  GMI_CUBLAS_CHECK(cublasLtMatmul(g_lt, p.desc, &one, A, p.a, B, p.b, &zero, C, p.c, C, p.c, &p.algo, workspace, p.workspace,
                                  space.cuda_stream()));
  return true;
}
}  // namespace

template <>
bool gemm_bias_act<float>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, const float* A, int lda,
                          long long strideA, const float* B, int ldb, long long strideB, float* C, int ldc,
                          long long strideC, int count, const float* bias, long long bias_stride, Epilogue epi) {
  const Region region(epi == Epilogue::Bias ? "gemm_bias" : "gemm_bias_relu", ta, tb, m, n, k);
  const bool done = lt_matmul(space, ta, tb, m, n, k, A, lda, strideA, B, ldb, strideB, C, ldc, strideC, count, bias,
                              bias_stride, epi == Epilogue::Bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS);
  g_calls += done;
  return done;
}
template <>
bool gemm_bias_act<double>(const ExecSpace&, Op, Op, int, int, int, const double*, int, long long, const double*, int,
                           long long, double*, int, long long, int, const double*, long long, Epilogue) {
  return false;
}
template <>
bool gemm_bias_grad<float>(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, const float* A, int lda,
                           long long strideA, const float* B, int ldb, long long strideB, float* C, int ldc,
                           long long strideC, int count, float* bgrad, long long bgrad_stride) {
  const Region region("gemm_bias_grad", ta, tb, m, n, k);
  // The epilogue sums the bias gradient over the whole inner dimension in one pass: measured on an
  // H100 (PPO's layered update, 256x376 weights) it is slower than the product and a gemv beyond
  // 1,024 rows in fp32 and beyond 4,096 in tf32, faster below (SAC's batches of 256 and 1,024);
  // beyond, mlp.cpp's two-pass bias sum runs (fenced on an H100 at 65,536 columns it took longer
  // than that gemv, with no change in the iteration's wall time): the limits are not re-measured.
  if (k > (g_precision == MatmulPrecision::TF32 ? 4096 : 1024)) return false;
  const bool done = lt_matmul(space, ta, tb, m, n, k, A, lda, strideA, B, ldb, strideB, C, ldc, strideC, count, bgrad,
                              bgrad_stride, CUBLASLT_EPILOGUE_BGRADA);
  g_calls += done;
  return done;
}
template <>
bool gemm_bias_grad<double>(const ExecSpace&, Op, Op, int, int, int, const double*, int, long long, const double*, int,
                            long long, double*, int, long long, int, double*, long long) {
  return false;
}

namespace {
/// A side stream is going (kernels/core/stream_hooks.hpp): its handle and workspace go with it.
void forget_stream(void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (auto h = g_handles.find(s); h != g_handles.end()) {
    cublasDestroy(h->second);
    g_handles.erase(h);
  }
  if (auto w = g_lt_workspaces.find(s); w != g_lt_workspaces.end()) {
    if (w->second) cudaFree(w->second);
    g_lt_workspaces.erase(w);
  }
}
}  // namespace

void release_handles() {
  for (auto& [stream, h] : g_handles) cublasDestroy(h);
  g_handles.clear();
  for (auto& [key, plan] : g_lt_plans) destroy(plan);
  g_lt_plans.clear();
  if (g_lt) cublasLtDestroy(g_lt);
  g_lt = nullptr;
  for (auto& [stream, w] : g_lt_workspaces)
    if (w) cudaFree(w);
  g_lt_workspaces.clear();
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
MatmulPrecision matmul_precision() { return MatmulPrecision::FP32; }
void release_handles() {}
bool side_streams_safe() { return true; }

template <class Scalar>
bool gemm_bias_act(const ExecSpace&, Op, Op, int, int, int, const Scalar*, int, long long, const Scalar*, int, long long,
                   Scalar*, int, long long, int, const Scalar*, long long, Epilogue) {
  return false;  // OpenBLAS has no epilogues: the caller's bias kernel runs
}
template <class Scalar>
bool gemm_bias_grad(const ExecSpace&, Op, Op, int, int, int, const Scalar*, int, long long, const Scalar*, int,
                    long long, Scalar*, int, long long, int, Scalar*, long long) {
  return false;
}
template bool gemm_bias_act<float>(const ExecSpace&, Op, Op, int, int, int, const float*, int, long long, const float*,
                                   int, long long, float*, int, long long, int, const float*, long long, Epilogue);
template bool gemm_bias_act<double>(const ExecSpace&, Op, Op, int, int, int, const double*, int, long long,
                                    const double*, int, long long, double*, int, long long, int, const double*,
                                    long long, Epilogue);
template bool gemm_bias_grad<float>(const ExecSpace&, Op, Op, int, int, int, const float*, int, long long, const float*,
                                    int, long long, float*, int, long long, int, float*, long long);
template bool gemm_bias_grad<double>(const ExecSpace&, Op, Op, int, int, int, const double*, int, long long,
                                     const double*, int, long long, double*, int, long long, int, double*, long long);

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
