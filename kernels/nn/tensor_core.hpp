#pragma once
/// \file
/// \brief Warp-level 16x16 matrix products on tensor cores for the fused kernels, in FP32
/// accuracy: each operand is split into a TF32 part and a TF32 remainder (x = big + small) and
/// C += A_small B_big + A_big B_small + A_big B_big ("3xTF32", as CUTLASS does), which drops only
/// the small x small term and the small parts' own low bits (relative about 2^-21).  Sums run in a fixed order, so results are
/// reproducible.
///
/// GMI_TENSOR_CORES is 1 only in device code compiled for sm_80 or newer; elsewhere the callers
/// keep their SIMT loops.  All 32 lanes of a warp must call these functions together.  They read
/// their operands through callables, so any layout works (the raw `mma.sync` instruction with
/// the operands' registers loaded by the caller's code: WMMA's fragment loads took generic
/// addresses and fixed layouts).
#include "kernels/core/kokkos.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GMI_TENSOR_CORES 1
#else
#define GMI_TENSOR_CORES 0
#endif

namespace gmi::nn::tc {

#if GMI_TENSOR_CORES
/// The lane's index within its warp (Kokkos teams lay threads out as x + y * blockDim.x).
__device__ __forceinline__ int lane_id() { return int((threadIdx.x + threadIdx.y * blockDim.x) % 32); }

/// A 16x16 FP32 accumulator tile of one warp: two m16n8 halves in the register layout of
/// `mma.sync.m16n8k8` (PTX ISA, "Matrix Fragments for mma.m16n8k8"): with g = lane / 4 and
/// t = lane % 4, half h's register r holds element (g + 8 (r / 2), 8 h + 2 t + r % 2).
struct Tile {
  float c[2][4];
  /// f(i, j, c_ij) for every element this lane holds (i, j < 16)
  template <class F>
  __device__ __forceinline__ void for_each(F&& f) {
    const int lane = lane_id(), g = lane / 4, t = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int r = 0; r < 4; ++r) f(g + 8 * (r / 2), 8 * h + 2 * t + r % 2, c[h][r]);
  }
};

/// big: x with its low 13 mantissa bits cleared (exactly representable in TF32); small: the
/// remainder x - big (exact).  Tensor cores read only the TF32 bits of each operand, so no
/// rounding instruction is needed: sm_90 has none for TF32 and emulates cvt.rna.tf32 in about
/// eight instructions per element, which made the split cost more than the products.
__device__ __forceinline__ void split(float v, unsigned& big, unsigned& small) {
  big = __float_as_uint(v) & 0xffffe000u;
  small = __float_as_uint(v - __uint_as_float(big));
}

__device__ __forceinline__ void mma_m16n8k8(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// c += A (16 x K) B (K x 16), K a multiple of 8, reading A(i, k) as a(i, k) and B(k, j) as
/// b(k, j) (callables returning floats, typically shared-memory loads: any layout).
/// tf32: one TF32 product instead of three (TF32 accuracy, the meaning of device.matmul: tf32).
/// Per 8-wide k step the products are added in the order small x big, big x small, big x big.
template <class FA, class FB>
__device__ __forceinline__ void mma(Tile& acc, FA&& a, FB&& b, int K, bool tf32 = false) {
  const int lane = lane_id(), g = lane / 4, t = lane % 4;
  for (int k = 0; k < K; k += 8) {
    const float av[4] = {a(g, k + t), a(g + 8, k + t), a(g, k + t + 4), a(g + 8, k + t + 4)};
    float bv[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      bv[h][0] = b(k + t, 8 * h + g);
      bv[h][1] = b(k + t + 4, 8 * h + g);
    }
    if (tf32) {  // the operands as they are (the tensor cores truncate to TF32)
      const unsigned ar[4] = {__float_as_uint(av[0]), __float_as_uint(av[1]), __float_as_uint(av[2]),
                              __float_as_uint(av[3])};
#pragma unroll
      for (int h = 0; h < 2; ++h) mma_m16n8k8(acc.c[h], ar, __float_as_uint(bv[h][0]), __float_as_uint(bv[h][1]));
      continue;
    }
    unsigned ab[4], as[4], bb[2][2], bs[2][2];
#pragma unroll
    for (int r = 0; r < 4; ++r) split(av[r], ab[r], as[r]);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int r = 0; r < 2; ++r) split(bv[h][r], bb[h][r], bs[h][r]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mma_m16n8k8(acc.c[h], as, bb[h][0], bb[h][1]);
      mma_m16n8k8(acc.c[h], ab, bs[h][0], bs[h][1]);
      mma_m16n8k8(acc.c[h], ab, bb[h][0], bb[h][1]);
    }
  }
}

/// C = init + A (M x K) B (K x N), M and N multiples of 16, K of 8, in 16x16 tiles shared out
/// over a team's warps (tile t, t + warps, ... to warp t; tiles run down the rows first).
/// a(i, k), b(k, j) and init(i, j) read the operands (see mma); epilogue(i, j, c_ij) takes each
/// result element, with i and j the whole matrix's indices.
template <class FA, class FB, class FI, class FE>
__device__ __forceinline__ void gemm(int warp, int warps, int M, int N, int K, FA&& a, FB&& b, bool tf32,
                                     FI&& init, FE&& epilogue) {
  const int MT = M / 16, NT = N / 16;
  for (int t = warp; t < MT * NT; t += warps) {
    const int i0 = 16 * (t % MT), j0 = 16 * (t / MT);
    Tile c;
    c.for_each([&](int i, int j, float& v) { v = init(i0 + i, j0 + j); });
    mma(
        c, [&](int i, int k) { return a(i0 + i, k); }, [&](int k, int j) { return b(k, j0 + j); }, K, tf32);
    c.for_each([&](int i, int j, float v) { epilogue(i0 + i, j0 + j, v); });
  }
}

/// init for gemm: C = A B
struct Zero {
  __device__ __forceinline__ float operator()(int, int) const { return 0.0f; }
};
#endif

}  // namespace gmi::nn::tc
