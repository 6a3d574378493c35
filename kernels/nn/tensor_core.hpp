#pragma once
/// \file
/// \brief Warp-level 16x16 matrix products on tensor cores for the fused kernels, in FP32
/// accuracy: each operand is split into a TF32 part and a TF32 remainder (x = big + small) and
/// C += A_small B_big + A_big B_small + A_big B_big ("3xTF32", as CUTLASS does), which drops only
/// the small x small term and the small parts' own low bits (relative about 2^-21).  Sums run in a fixed order, so results are
/// reproducible.
///
/// GMI_TENSOR_CORES is 1 only in device code compiled for sm_80 or newer; elsewhere the callers
/// keep their SIMT loops.  All 32 lanes of a warp must call these functions together.  gemm and
/// mma read their operands through callables, so any layout works (the raw `mma.sync`
/// instruction with the operands' registers loaded by the caller's code: WMMA's fragment loads
/// took generic addresses and fixed layouts); the *_bfrag and gemm_accumulate variants take B,
/// or C, in the fragment-native layouts below (bfrag_index, cfrag_index) and A from row-major
/// shared memory (ldmatrix) or a callable.
#include <type_traits>

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

/// Fragment-native operand layouts (the fused update's hot loops).  A K x N operand B stored
/// "fragment-native" holds, for n-tile j (16 columns) and k-step q (8 rows), 32 lanes x 4 floats at
/// (j * K/8 + q) * 128 + lane * 4: lane (g, t) = (lane / 4, lane % 4) finds
/// {B(8q + t, 16j + g), B(8q + t + 4, 16j + g), B(8q + t, 16j + 8 + g), B(8q + t + 4, 16j + 8 + g)},
/// its two m16n8k8 B fragments, in one 16-byte load (scalar loads of a row-major B cost 4 requests
/// of 4-8 sectors each, and were most of the kernel's L1 traffic).
KOKKOS_INLINE_FUNCTION constexpr int bfrag_index(int K, int k, int n) {
  const int j = n / 16, q = k / 8, t = k % 4, g = n % 8;
  const int r = ((k % 8) / 4) + 2 * ((n % 16) / 8);
  return ((j * (K / 8) + q) * 32 + g * 4 + t) * 4 + r;
}
/// The inverse of bfrag_index: entry q of a fragment-native K x N operand holds B(k, n).
KOKKOS_INLINE_FUNCTION constexpr void bfrag_entry(int K, int q, int& k, int& n) {
  const int blk = q / 128, lane = (q % 128) / 4, r = q % 4, KS = K / 8;
  k = 8 * (blk % KS) + lane % 4 + 4 * (r % 2);
  n = 16 * (blk / KS) + 8 * (r / 2) + lane / 4;
}
/// A 16x16 accumulator tile stored fragment-native: tile tt's 256 floats at tt * 256, lane L's
/// eight at L * 8 in the order of Tile::c (two 16-byte loads per lane).  Element (i, j) of a
/// matrix of MT x NT tiles (tile tt = i / 16 + MT * (j / 16), as gemm numbers them) sits at
/// cfrag_index(MT, i, j).
KOKKOS_INLINE_FUNCTION constexpr int cfrag_index(int MT, int i, int j) {
  const int tt = i / 16 + MT * (j / 16), ii = i % 16, jj = j % 16;
  const int lane = (ii % 8) * 4 + (jj % 8) / 2, reg = (jj / 8) * 4 + (ii / 8) * 2 + jj % 2;
  return tt * 256 + lane * 8 + reg;
}

#if GMI_TENSOR_CORES
/// c += A B for one 8-wide k step, A's fragment in av and B's two in bv (see bfrag_index), in the
/// order of mma (small x big, big x small, big x big per half), so results equal mma's.
template <bool kTf32>
__device__ __forceinline__ void mma3(float (&c)[2][4], const float (&av)[4], const float4& bv) {
  if constexpr (kTf32) {
    const unsigned ar[4] = {__float_as_uint(av[0]), __float_as_uint(av[1]), __float_as_uint(av[2]),
                            __float_as_uint(av[3])};
    mma_m16n8k8(c[0], ar, __float_as_uint(bv.x), __float_as_uint(bv.y));
    mma_m16n8k8(c[1], ar, __float_as_uint(bv.z), __float_as_uint(bv.w));
  } else {
    unsigned ab[4], as[4], bb[4], bs[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) split(av[r], ab[r], as[r]);
    split(bv.x, bb[0], bs[0]);
    split(bv.y, bb[1], bs[1]);
    split(bv.z, bb[2], bs[2]);
    split(bv.w, bb[3], bs[3]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mma_m16n8k8(c[h], as, bb[2 * h], bb[2 * h + 1]);
      mma_m16n8k8(c[h], ab, bs[2 * h], bs[2 * h + 1]);
      mma_m16n8k8(c[h], ab, bb[2 * h], bb[2 * h + 1]);
    }
  }
}

/// c += A (16 x K) B (K x 16) with the operands of k step q loaded by load(q, av, bv) one step
/// ahead of their use (registers double-buffered: the loads' latency overlaps the products).
template <bool kTf32, class FL>
__device__ __forceinline__ void mma_pipelined(float (&c)[2][4], int K, FL&& load) {
  float av[4];
  float4 bv;
  load(0, av, bv);
  const int steps = K / 8;
  for (int q = 0; q < steps; ++q) {
    float an[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float4 bn = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (q + 1 < steps) load(q + 1, an, bn);
    mma3<kTf32>(c, av, bv);
#pragma unroll
    for (int r = 0; r < 4; ++r) av[r] = an[r];
    bv = bn;
  }
}

/// The A fragment of rows i0 .. i0 + 15, columns k .. k + 7 of a row-major shared-memory matrix
/// (row stride lda floats, a multiple of 4; 16-byte aligned rows) in one ldmatrix: each 8x8 b16
/// matrix is 8 rows of 4 floats, and lane (g, t) receives row g's float t.
__device__ __forceinline__ void load_a_rows(float (&av)[4], const float* A, int lda, int k) {
  const int lane = lane_id();
  const float* p = A + (lane % 8 + 8 * ((lane / 8) % 2)) * lda + k + 4 * (lane / 16);
  const unsigned addr = unsigned(__cvta_generic_to_shared(p));
  unsigned r0, r1, r2, r3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
  av[0] = __uint_as_float(r0);
  av[1] = __uint_as_float(r1);
  av[2] = __uint_as_float(r2);
  av[3] = __uint_as_float(r3);
}

/// A's fragment of the k step at column k for rows i0 .. i0 + 15, read through a(i, k).
template <class FA>
__device__ __forceinline__ void load_a(float (&av)[4], FA&& a, int i0, int k) {
  const int lane = lane_id(), g = lane / 4, t4 = lane % 4;
  av[0] = a(i0 + g, k + t4);
  av[1] = a(i0 + g + 8, k + t4);
  av[2] = a(i0 + g, k + t4 + 4);
  av[3] = a(i0 + g + 8, k + t4 + 4);
}

/// f(std::true_type) for one TF32 pass, f(std::false_type) for 3xTF32: the precision as a
/// compile-time constant inside the k loops.
template <class F>
__device__ __forceinline__ void with_tf32(bool tf32, F&& f) {
  if (tf32)
    f(std::true_type());
  else
    f(std::false_type());
}

/// C = init + A B with a fragment-native B (see bfrag_index; read through the read-only cache)
/// and A's fragments loaded by load_a_frag(av, i0, k), in 16x16 tiles shared out over the warps as
/// gemm does.
template <bool kTf32, class FL, class FI, class FE>
__device__ __forceinline__ void gemm_bfrag_impl(int warp, int warps, int M, int N, int K, FL&& load_a_frag,
                                                const float* bfrag, FI&& init, FE&& epilogue) {
  const int MT = M / 16, NT = N / 16, lane = lane_id();
  for (int t = warp; t < MT * NT; t += warps) {
    const int i0 = 16 * (t % MT), j0 = 16 * (t / MT);
    Tile c;
    c.for_each([&](int i, int j, float& v) { v = init(i0 + i, j0 + j); });
    const float4* bf = reinterpret_cast<const float4*>(bfrag) + (j0 / 16) * (K / 8) * 32 + lane;
    mma_pipelined<kTf32>(c.c, K, [&](int q, float(&av)[4], float4& bv) {
      load_a_frag(av, i0, 8 * q);
      bv = __ldg(bf + q * 32);
    });
    c.for_each([&](int i, int j, float v) { epilogue(i0 + i, j0 + j, v); });
  }
}

/// C = init + A B for a row-major shared-memory A (M x K, row stride lda; ldmatrix) and a
/// fragment-native B; equal to gemm with the same operands.
template <class FI, class FE>
__device__ __forceinline__ void gemm_rows_bfrag(int warp, int warps, int M, int N, int K, const float* A, int lda,
                                                const float* bfrag, bool tf32, FI&& init, FE&& epilogue) {
  with_tf32(tf32, [&](auto tf) {
    gemm_bfrag_impl<decltype(tf)::value>(
        warp, warps, M, N, K, [&](float(&av)[4], int i0, int k) { load_a_rows(av, A + i0 * lda, lda, k); }, bfrag,
        init, epilogue);
  });
}

/// C = init + A B with A read through a(i, k) (any layout) and a fragment-native B; equal to
/// gemm with the same operands.
template <class FA, class FI, class FE>
__device__ __forceinline__ void gemm_bfrag(int warp, int warps, int M, int N, int K, FA&& a, const float* bfrag,
                                           bool tf32, FI&& init, FE&& epilogue) {
  with_tf32(tf32, [&](auto tf) {
    gemm_bfrag_impl<decltype(tf)::value>(
        warp, warps, M, N, K, [&](float(&av)[4], int i0, int k) { load_a(av, a, i0, k); }, bfrag, init, epilogue);
  });
}

template <bool kTf32, class FA, class FB>
__device__ __forceinline__ void gemm_accumulate_impl(int warp, int warps, int M, int N, int K, FA&& a, FB&& b,
                                                     float* cfrag) {
  const int MT = M / 16, NT = N / 16, lane = lane_id(), g = lane / 4, t4 = lane % 4;
  for (int t = warp; t < MT * NT; t += warps) {
    const int i0 = 16 * (t % MT), j0 = 16 * (t / MT);
    float4* cp = reinterpret_cast<float4*>(cfrag + t * 256 + lane * 8);
    const float4 c0 = cp[0], c1 = cp[1];  // in flight during the products
    Tile c;
    c.for_each([&](int, int, float& v) { v = 0.0f; });
    mma_pipelined<kTf32>(c.c, K, [&](int q, float(&av)[4], float4& bv) {
      const int k = 8 * q;
      load_a(av, a, i0, k);
      bv.x = b(k + t4, j0 + g);
      bv.y = b(k + t4 + 4, j0 + g);
      bv.z = b(k + t4, j0 + 8 + g);
      bv.w = b(k + t4 + 4, j0 + 8 + g);
    });
    cp[0] = make_float4(c0.x + c.c[0][0], c0.y + c.c[0][1], c0.z + c.c[0][2], c0.w + c.c[0][3]);
    cp[1] = make_float4(c1.x + c.c[1][0], c1.y + c.c[1][1], c1.z + c.c[1][2], c1.w + c.c[1][3]);
  }
}

/// C += A B into fragment-native accumulators (see cfrag_index) in device memory: each tile's
/// products start from zero and are added to the stored sums, read with two 16-byte loads per lane
/// before the products and written back after.  a, b as in mma.
template <class FA, class FB>
__device__ __forceinline__ void gemm_accumulate(int warp, int warps, int M, int N, int K, FA&& a, FB&& b, bool tf32,
                                                float* cfrag) {
  with_tf32(tf32, [&](auto tf) { gemm_accumulate_impl<decltype(tf)::value>(warp, warps, M, N, K, a, b, cfrag); });
}
#endif


}  // namespace gmi::nn::tc
