#pragma once
/// \file
/// \brief Dense linear algebra on device buffers: cuBLAS on CUDA builds, CBLAS (OpenBLAS) on host
/// builds.  Column-major, BLAS argument order, the execution-space instance first (the cuBLAS
/// handle is bound to its stream, so calls order with the Kokkos kernels around them).
#include <cstdint>
#include <string>

#include "kernels/core/kokkos.hpp"

namespace gmi::blas {

enum class Op { N, T };

/// How float32 GEMMs may use tensor cores (CUDA only; host builds always compute in fp32):
/// FP32 (no tensor cores), TF32 (one TF32 pass), BF16 (each product's operands rounded to bfloat16
/// into scratch, BF16 tensor cores, fp32 accumulation and result; weights and activations stay fp32).
enum class MatmulPrecision { FP32, TF32, BF16 };
void set_matmul_precision(MatmulPrecision p);
/// device.matmul's value ("fp32", "tf32", "bf16") as a precision; throws gmi::InputError otherwise.
MatmulPrecision parse_matmul_precision(const std::string& name);

/// C(m×n) = alpha * op(A) * op(B) + beta * C
template <class Scalar>
void gemm(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, Scalar alpha, const Scalar* A,
          int lda, const Scalar* B, int ldb, Scalar beta, Scalar* C, int ldc);

/// y = alpha * op(A) * x + beta * y, A is m×n
template <class Scalar>
void gemv(const ExecSpace& space, Op ta, int m, int n, Scalar alpha, const Scalar* A, int lda,
          const Scalar* x, Scalar beta, Scalar* y);

/// `count` products C_i = alpha * op(A_i) * op(B_i) + beta * C_i, where X_i = X + i * strideX
/// (a stride of 0 shares the operand): one cublasSgemmStridedBatched call on CUDA builds.
template <class Scalar>
void gemm_strided_batched(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, Scalar alpha, const Scalar* A,
                          int lda, long long strideA, const Scalar* B, int ldb, long long strideB, Scalar beta,
                          Scalar* C, int ldc, long long strideC, int count);

/// `count` products y_i = alpha * op(A_i) * x_i + beta * y_i with strided operands (as above).
template <class Scalar>
void gemv_strided_batched(const ExecSpace& space, Op ta, int m, int n, Scalar alpha, const Scalar* A, int lda,
                          long long strideA, const Scalar* x, long long stridex, Scalar beta, Scalar* y,
                          long long stridey, int count);

/// *result (device memory) = ||x||_2; no host synchronisation on CUDA builds.
template <class Scalar>
void nrm2(const ExecSpace& space, int n, const Scalar* x, Scalar* result);

/// BLAS calls made so far by this process (each is one or a few device kernels); for benchmarks.
std::uint64_t call_count();

/// Host builds: OpenBLAS on one thread unless OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or
/// OMP_NUM_THREADS asks otherwise.  The products here are small (batches of a few hundred rows
/// through layers of tens to hundreds), where OpenBLAS's threads cost more than they give (a SAC
/// update on 64x64 networks: 2.5 ms on one thread, 3-10 ms on two with most time in the kernel),
/// and GMIs on one node share its cores.  Nothing on CUDA builds.
void init_host_threads();

/// Destroy cached library handles (called before Kokkos::finalize).
void release_handles();

}  // namespace gmi::blas
