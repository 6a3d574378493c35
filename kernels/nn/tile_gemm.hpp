#pragma once
/// \file
/// \brief A hidden layer's products with their elementwise work in the epilogue (CUTLASS's sm80
/// GEMMs, CUDA builds that found CUTLASS: TF32 tensor cores under device.matmul tf32, SIMT under
/// fp32, where 3xTF32 tiles ran slower than cuBLAS's FP32 products on an H100): the forward
/// product with its bias and activation, Z = f(W X + b), and the input-gradient product with the
/// lower layer's activation derivative, dZ' = (W^T dZ) * f'(Y'), each one kernel where cuBLAS needs
/// a product and a pass over the result.  Each problem's first call outside a graph capture times
/// the tile shapes on offer and keeps the fastest; every shape sums in the same order, so the
/// choice never changes a bit.  On Hopper (builds for HOPPER90, an sm_90 device) TF32 products
/// of tanh and ReLU layers whose widths are multiples of 4 run CUTLASS 3's TMA and wgmma kernels
/// instead (tile_gemm_sm90.hpp; on an H100 1.15-1.37x the sm80 kernels' PPO iterations at 65,536
/// envs, postprocess/results/README.md).  Everything column-major as in mlp.hpp.
#include "kernels/core/kokkos.hpp"
#include "kernels/nn/activation.hpp"

namespace gmi::nn::tile_gemm {

/// Whether this build has the kernels (CUDA builds with CUTLASS) and device.tile_gemm lets them run.
bool enabled();
/// device.tile_gemm: true lets the kernels below run where they apply, false never.
void set_enabled(bool on);

/// The smallest batch (columns) the kernels take by default: on an H100 they ran PPO's minibatches
/// of 4,096 and 65,536 faster than cuBLAS and the separate passes (256x256: 1.12x and 1.32x in
/// tf32, 1.05x and 1.14x in fp32; 512x512x512 in fp32 at 4,096: 0.98x), and SAC's updates on
/// batches of 256 and 1,024 slower (0.83-0.90x) than cuBLAS with cuBLASLt's ReLU epilogues.
constexpr int kDefaultMinBatch = 4096;
/// Tests and measurements: the smallest batch the kernels take (<= 0: the default).
void set_min_batch(int columns);

/// Z (out x B, ld out) = f(W X + b) with W out x in (ld out), X in x B (ld in), b out values.
/// Returns false, having done nothing, where the kernels do not apply: not built, disabled,
/// device.matmul bf16, a batch below set_min_batch()'s, `out` not a multiple of 4, or b or Z not at a 16-byte boundary
/// (W and X may be anywhere: widths that are not multiples of 4 take one-float accesses).
bool forward(const ExecSpace& space, Activation act, int out, int in, int B, const float* W, const float* b,
             const float* X, float* Z);

/// dZin (in x B, ld in) = (W^T dZ) * f'(Y), W out x in (ld out), dZ out x B (ld out), Y the lower
/// layer's stored outputs (in x B, ld in).  Returns false as forward does, for `in` and Y, dZin.
bool input_grad(const ExecSpace& space, Activation act, int out, int in, int B, const float* W, const float* dZ,
                const float* Y, float* dZin);

/// The tile shapes a problem may run (0 where the kernels are not built).
int candidates();
/// Tests and measurements: every problem runs tile shape `candidate` (< candidates()), or, for -1,
/// the timed choice.
void force_tiles(int candidate);

}  // namespace gmi::nn::tile_gemm
