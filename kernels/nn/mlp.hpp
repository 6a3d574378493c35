#pragma once
/// \file
/// \brief Multi-layer perceptron on a flat parameter buffer: forward with fused bias+activation,
/// backward writing into the matching flat gradient buffer.  GEMMs go to cuBLAS/CBLAS, a hidden
/// layer's forward and input-gradient products on GPUs to the tile kernels where they apply
/// (tile_gemm.hpp: the bias and activation, or the activation derivative, in their epilogues).
///
/// Storage is column-major in BLAS terms: a batch of B vectors of width d is a d×B matrix with each
/// vector contiguous (row-major [B][d] as a C array).  Layer l has W_l (out_l × in_l, column-major)
/// followed by b_l (out_l) in the flat buffer; each W_l starts at a multiple of 4 floats (16 bytes,
/// for vector loads), the few padding entries before it stay zero.
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/core/side_stream.hpp"
#include "kernels/nn/activation.hpp"
#include "kernels/nn/blas.hpp"

namespace gmi::nn {

struct Layer {
  int in = 0, out = 0;
  std::size_t w = 0;  ///< offset of W in the flat buffer
  std::size_t b = 0;  ///< offset of b in the flat buffer
};

/// Shapes and parameter offsets of an MLP: in -> hidden... -> out (last layer linear, unless
/// activated_out).
struct MlpLayout {
  MlpLayout() = default;
  MlpLayout(int in, const std::vector<int>& hidden, int out, Activation act, std::size_t offset);

  std::vector<Layer> layers;
  Activation act = Activation::Tanh;
  /// The last layer applies `act` too (hidden layers that heads share: an actor-critic's trunk);
  /// mlp_backward's dY is then the gradient of that activation's output.
  bool activated_out = false;
  std::size_t offset = 0;      ///< first parameter in the flat buffer
  std::size_t num_params = 0;  ///< flat-buffer entries of this MLP (alignment padding included)
  int in() const { return layers.front().in; }
  int out() const { return layers.back().out; }
  int max_width() const;
};

/// Columns a partial sum of a bias gradient covers (MlpWorkspace::bias_partials).
inline constexpr int kBiasChunk = 64;

/// Activations kept for the backward pass, and scratch, for batches of up to `capacity`.
template <class Scalar>
struct MlpWorkspace {
  MlpWorkspace() = default;
  MlpWorkspace(const MlpLayout& layout, int capacity);
  /// Scalars a workspace of `rows` rows holds (memory estimates before allocating).
  static double size(const MlpLayout& layout, double rows) {
    double widths = 0;
    for (const auto& l : layout.layers) widths += l.out;
    return rows * (widths + 2.0 * layout.max_width() + 1.0) + std::ceil(rows / kBiasChunk) * widths;
  }
  int capacity = 0;
  std::vector<std::size_t> act_offset;  ///< start of layer l's outputs in `acts`
  View1<Scalar> acts;                   ///< outputs of every layer (after activation)
  View1<Scalar> grad_a, grad_b;         ///< ping-pong buffers for gradients w.r.t. activations
  View1<Scalar> ones;                   ///< capacity ones (several networks' bias gradients as one GEMV)
  View1<Scalar> bias_partials;          ///< bias gradients' partial sums, each layer its own block
  /// The backward pass's weight gradients run here, beside its chain of input gradients (made
  /// by the first backward pass outside a graph capture; workspaces that only run forward passes
  /// never make one).
  std::shared_ptr<SideStream> side;
  /// Output of the last forward pass (out × B).
  Scalar* output(const MlpLayout& l) { return acts.data() + act_offset[l.layers.size() - 1]; }
};

/// Y = MLP(X) for a batch of B columns; the output stays in ws (ws.output()).
template <class Scalar>
void mlp_forward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                 const Scalar* X, int B, MlpWorkspace<Scalar>& ws);

/// Gradients of a scalar loss given dL/dY (out × B, overwritten).  Writes dL/dW and dL/db into
/// `grads` (same layout as params; overwritten, not accumulated; null: not computed) and, if dX
/// is not null, dL/dX (in × B).  Uses the activations of the last mlp_forward on the same X.
template <class Scalar>
void mlp_backward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                  const Scalar* X, int B, MlpWorkspace<Scalar>& ws, Scalar* dY, Scalar* grads,
                  Scalar* dX = nullptr);

/// \brief `count` MLPs of one layout whose parameters sit `param_stride` entries apart in the flat
/// buffer (SAC's twin Q networks), all on the same input X: one batched GEMM per layer for all of
/// them.  `ws` must hold count * B rows; net i's output is ws.output(layout) + i * out * B.
template <class Scalar>
void mlp_forward_batched(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                         std::size_t param_stride, int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws);

/// Backward pass of mlp_forward_batched: dY [count][out × B] (overwritten); net i's dL/dW, dL/db at
/// grads + i * param_stride (null: not computed) and its dL/dX at dX + i * in * B (null: none).
template <class Scalar>
void mlp_backward_batched(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                          std::size_t param_stride, int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws,
                          Scalar* dY, Scalar* grads, Scalar* dX = nullptr);

}  // namespace gmi::nn
