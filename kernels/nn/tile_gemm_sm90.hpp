#pragma once
/// \file
/// \brief tile_gemm's Hopper kernels (internal to kernels/nn/tile_gemm.cpp): CUTLASS 3 GEMMs with
/// TMA loads, warp-specialised wgmma main loops and their epilogues fused, for TF32 on sm_90a
/// (H100, H200), where the sm_80 kernels (mma.sync) leave half the memory bandwidth unused on the
/// wide, short products of a 256-unit layer.  Compiled by nvcc for sm_90a alone
/// (tile_gemm_sm90.cu: no Kokkos), so what crosses here is plain pointers and a CUDA stream.
///
/// Layouts (column-major as in mlp.hpp): both operands of a TF32 wgmma are read K-major, so the
/// forward product first writes W transposed into a buffer of its stream's; the input gradient
/// reads W as it is.  Every candidate sums each output's products in
/// the same k order (k tiles of 32, wgmma steps of 8), so the timed choice never changes a bit.
#include <cuda_runtime.h>

namespace gmi::nn::tile_gemm::sm90 {

/// Activations with a Hopper kernel (the others run the sm_80 kernels).
enum class Act { Tanh, Relu };

/// Tile shapes on offer (candidate 0 .. kCandidates - 1).
constexpr int kCandidates = 3;

/// Z (out x B, ld out) = f(W X + b): W (out x in, ld out), X (in x B, ld in), b (out values).
/// The caller checks what TMA needs: out and in multiples of 4, every pointer at a 16-byte boundary
/// (tile_gemm.cpp's fits and operand_alignment).  False where CUTLASS cannot run the problem,
/// having launched nothing.
bool forward(cudaStream_t stream, int candidate, Act act, int out, int in, int B, const float* W, const float* b,
             const float* X, float* Z);

/// dZin (in x B, ld in) = (W^T dZ) * f'(Y): W (out x in, ld out), dZ (out x B, ld out), Y the lower
/// layer's outputs (in x B, ld in).  Same conditions as forward.
bool input_grad(cudaStream_t stream, int candidate, Act act, int out, int in, int B, const float* W,
                const float* dZ, const float* Y, float* dZin);

}  // namespace gmi::nn::tile_gemm::sm90
