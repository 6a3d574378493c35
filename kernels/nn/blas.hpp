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
/// The precision set_matmul_precision set (always FP32 on host builds).
MatmulPrecision matmul_precision();
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

/// Whether BLAS calls may run on a second stream beside the first (kernels/core/side_stream.hpp):
/// every stream has its own cuBLAS handle and cuBLASLt workspace, but device.matmul bf16 rounds
/// operands into one shared scratch, so not under bf16.
bool side_streams_safe();

/// What a fused product applies to its result (gemm_bias_act): the bias alone, or the bias and
/// then ReLU.
enum class Epilogue { Bias, ReluBias };

/// Whether the fused products below may run (device.gemm_epilogues; on by default).  Host builds
/// and device.matmul bf16 never fuse: their callers run the separate kernels.
void set_epilogues(bool on);

/// `count` products C_i = epi(op(A_i) * op(B_i) + bias_i), bias_i = bias + i * bias_stride (m
/// values, one per row of C), strided as gemm_strided_batched: one cuBLASLt call with the bias
/// (and ReLU) in its epilogue.  Returns false, having done nothing, where no fused product runs
/// (host builds, bf16, set_epilogues(false), or no cuBLASLt algorithm for the shape): the caller
/// then runs the product and the bias kernel itself.
template <class Scalar>
bool gemm_bias_act(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, const Scalar* A, int lda,
                   long long strideA, const Scalar* B, int ldb, long long strideB, Scalar* C, int ldc,
                   long long strideC, int count, const Scalar* bias, long long bias_stride, Epilogue epi);

/// `count` products C_i = op(A_i) * op(B_i) (alpha 1, beta 0) that also write bgrad_i = bgrad + i *
/// bgrad_stride, the sums of op(A_i)'s rows over the product's inner dimension (m values): a
/// layer's weight and bias gradients, dW = dZ X^T and db = dZ 1, in one cuBLASLt call (epilogue
/// BGRADA).  Returns false, having done nothing, where gemm_bias_act would, and where the inner
/// dimension k is beyond what the epilogue sums faster than a separate gemv (1,024 in fp32, 4,096
/// in tf32, measured on an H100; the MLP's separate sum is now its own two-pass kernel).
template <class Scalar>
bool gemm_bias_grad(const ExecSpace& space, Op ta, Op tb, int m, int n, int k, const Scalar* A, int lda,
                    long long strideA, const Scalar* B, int ldb, long long strideB, Scalar* C, int ldc,
                    long long strideC, int count, Scalar* bgrad, long long bgrad_stride);

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
