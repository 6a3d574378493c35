#pragma once
/// \file
/// \brief Warp-level 16x16 matrix products on tensor cores for the fused kernels, in FP32
/// accuracy: each operand is split into a TF32 part and a TF32 remainder (x = big + small) and
/// C += A_small B_big + A_big B_small + A_big B_big ("3xTF32", as CUTLASS does), which drops only
/// the small x small term and the small parts' own low bits (relative about 2^-21).  Sums run in a fixed order, so results are
/// reproducible.
///
/// GMI_TENSOR_CORES is 1 only in device code compiled for sm_80 or newer; elsewhere the callers
/// keep their SIMT loops.  All 32 lanes of a warp must call these functions together.  Pointers
/// must be 32-byte aligned and leading dimensions multiples of 4 floats (WMMA's rules).
#include <type_traits>

#include "kernels/core/kokkos.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GMI_TENSOR_CORES 1
#include <mma.h>
#else
#define GMI_TENSOR_CORES 0
#endif

namespace gmi::nn::tc {

#if GMI_TENSOR_CORES
namespace wmma = nvcuda::wmma;
using RowMajor = wmma::row_major;
using ColMajor = wmma::col_major;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
template <class Layout>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, Layout>;
template <class Layout>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, Layout>;

/// big: x with its low 13 mantissa bits cleared (exactly representable in TF32); small: the
/// remainder x - big (exact).  Tensor cores read only the TF32 bits of each operand, so no
/// rounding instruction is needed: sm_90 has none for TF32 and emulates cvt.rna.tf32 in about
/// eight instructions per element, which made the split cost more than the products.
template <class F>
__device__ __forceinline__ void split(F& big, F& small) {
#pragma unroll
  for (int i = 0; i < big.num_elements; ++i) {
    const float v = big.x[i];
    const float b = __uint_as_float(__float_as_uint(v) & 0xffffe000u);
    big.x[i] = b;
    small.x[i] = v - b;
  }
}

/// c += A (16 x K) B (K x 16), K a multiple of 8.  LA / LB: the layouts of A and B in memory
/// (row_major: element (i, k) of A at A[i * lda + k]; col_major: at A[k * lda + i]).
/// tf32: one TF32 product instead of three (TF32 accuracy, the meaning of device.matmul: tf32).
template <class LA, class LB>
__device__ __forceinline__ void mma(Acc& c, const float* A, int lda, const float* B, int ldb, int K,
                                    bool tf32 = false) {
  for (int k = 0; k < K; k += 8) {
    FragA<LA> ab, as;
    FragB<LB> bb, bs;
    wmma::load_matrix_sync(ab, std::is_same<LA, RowMajor>::value ? A + k : A + std::size_t(k) * lda, lda);
    wmma::load_matrix_sync(bb, std::is_same<LB, RowMajor>::value ? B + std::size_t(k) * ldb : B + k, ldb);
    if (!tf32) {  // tf32: the operands as they are (the tensor cores truncate to TF32)
      split(ab, as);
      split(bb, bs);
      wmma::mma_sync(c, as, bb, c);
      wmma::mma_sync(c, ab, bs, c);
    }
    wmma::mma_sync(c, ab, bb, c);
  }
}
#endif

}  // namespace gmi::nn::tc
