#include "kernels/nn/mlp.hpp"

#include <algorithm>
#include <type_traits>

namespace gmi::nn {

MlpLayout::MlpLayout(int in, const std::vector<int>& hidden, int out, Activation a,
                     std::size_t off)
    : act(a), offset(off) {
  GMI_REQUIRE(in > 0 && out > 0, "MlpLayout: input and output widths must be positive");
  std::size_t p = off;
  int prev = in;
  auto add = [&](int width) {
    Layer l;
    l.in = prev;
    l.out = width;
    p = (p + 3) / 4 * 4;  // 16-byte aligned weights: the fused kernels load them 4 at a time
    l.w = p;
    p += std::size_t(width) * prev;
    l.b = p;
    p += width;
    layers.push_back(l);
    prev = width;
  };
  for (int h : hidden) add(h);
  add(out);
  num_params = p - off;
}

int MlpLayout::max_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max({m, l.in, l.out});
  return m;
}

template <class Scalar>
MlpWorkspace<Scalar>::MlpWorkspace(const MlpLayout& layout, int cap) : capacity(cap) {
  GMI_REQUIRE(cap > 0, "MlpWorkspace: capacity must be positive");
  std::size_t total = 0;
  for (const auto& l : layout.layers) {
    act_offset.push_back(total);
    total += std::size_t(l.out) * cap;
  }
  acts = View1<Scalar>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::nn::Mlp::acts"), total);
  const std::size_t g = std::size_t(layout.max_width()) * cap;
  grad_a = View1<Scalar>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::nn::Mlp::grad_a"), g);
  grad_b = View1<Scalar>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::nn::Mlp::grad_b"), g);
  ones = View1<Scalar>("gmi::nn::Mlp::ones", cap);
  Kokkos::deep_copy(ones, Scalar(1));
  if (std::is_same<Scalar, float>::value && !device_is_host() && layout.act == Activation::Relu) {
    std::size_t bytes = 0;
    for (const auto& l : layout.layers) {
      mask_offset.push_back(bytes);
      bytes += std::size_t(blas::relu_mask_ld(l.out) / 8) * cap;
    }
    masks = View1<std::uint8_t>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::nn::Mlp::masks"), bytes);
  }
}

namespace detail {

/// Z <- f(Z + b) over an out × B column-major matrix (f = identity for the output layer).
template <class Scalar, class A>
void bias_act(const ExecSpace& space, Scalar* Z, const Scalar* b, int out, int B, A, bool linear) {
  const std::size_t n = std::size_t(out) * B;
  if (linear) {
    Kokkos::parallel_for(
        "gmi::nn::Mlp::bias", Range64(space, 0, n),
        KOKKOS_LAMBDA(const std::int64_t i) { Z[i] += b[i % out]; });
  } else {
    Kokkos::parallel_for(
        "gmi::nn::Mlp::bias_act", Range64(space, 0, n),
        KOKKOS_LAMBDA(const std::int64_t i) { Z[i] = A::f(Z[i] + b[i % out]); });
  }
}

/// dA <- dA * f'(Y) elementwise (Y: the stored activation output).
template <class Scalar, class A>
void act_backward(const ExecSpace& space, Scalar* dA, const Scalar* Y, std::size_t n, A) {
  Kokkos::parallel_for(
      "gmi::nn::Mlp::act_backward", Range64(space, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) { dA[i] *= A::df_from_y(Y[i]); });
}

/// Z_i <- f(Z_i + b_i) for `count` out × B blocks, b_i = b + i * stride.
template <class Scalar, class A>
void bias_act_batched(const ExecSpace& space, Scalar* Z, const Scalar* b, std::size_t stride, int out, int B,
                      int count, A, bool linear) {
  const std::int64_t block = std::int64_t(out) * B;
  Kokkos::parallel_for(
      "gmi::nn::Mlp::bias_act_batched", Range64(space, 0, block * count), KOKKOS_LAMBDA(const std::int64_t i) {
        const Scalar z = Z[i] + b[std::size_t(i / block) * stride + std::size_t(i % block % out)];
        Z[i] = linear ? z : A::f(z);
      });
}

}  // namespace detail

namespace detail {

/// Z = f(W in + b) for `count` nets (count 1: one) as one product with its epilogue: the output
/// layer's bias, or a ReLU layer's bias and activation with its mask.  False: not fused (the
/// caller runs the product and bias_act).
template <class Scalar>
bool fused_forward(const ExecSpace& space, const MlpLayout& layout, std::size_t l, const Scalar* params,
                   long long param_stride, int count, const Scalar* in, long long in_stride, int B,
                   MlpWorkspace<Scalar>& ws, Scalar* Z) {
  if constexpr (!std::is_same<Scalar, float>::value) {
    return false;
  } else {
    const Layer& ly = layout.layers[l];
    const bool last = l + 1 == layout.layers.size();
    if (!last && ws.masks.extent(0) == 0) return false;
    blas::EpilogueArgs e;
    e.kind = last ? blas::Epilogue::Bias : blas::Epilogue::ReluBias;
    e.bias = const_cast<float*>(params + ly.b);
    e.bias_stride = param_stride;
    if (!last) {
      e.mask = ws.mask(l);
      e.mask_ld = blas::relu_mask_ld(ly.out);
      e.mask_stride = e.mask_ld * B;
    }
    return blas::gemm_epilogue(space, blas::Op::N, blas::Op::N, ly.out, B, ly.in, params + ly.w, ly.out, param_stride,
                               in, ly.in, in_stride, Z, ly.out, (long long)ly.out * B, count, e);
  }
}

/// dW (and db, unless `db_done`) of layer ly for `count` nets: the product with the bias gradient
/// in its epilogue where it fuses, else the product and a GEMV.
template <class Scalar>
void weight_grads(const ExecSpace& space, const Layer& ly, int count, const Scalar* dZ, const Scalar* A_prev,
                  long long a_stride, int B, Scalar* grads, long long param_stride, bool db_done,
                  MlpWorkspace<Scalar>& ws) {
  const long long z_stride = (long long)ly.out * B;
  if (!db_done) {
    if constexpr (std::is_same<Scalar, float>::value) {
      blas::EpilogueArgs e;
      e.kind = blas::Epilogue::BGradA;
      e.bias = grads + ly.b;
      e.bias_stride = param_stride;
      if (blas::gemm_epilogue(space, blas::Op::N, blas::Op::T, ly.out, ly.in, B, dZ, ly.out, z_stride, A_prev, ly.in,
                              a_stride, grads + ly.w, ly.out, param_stride, count, e))
        return;
    }
  }
  if (count == 1) {
    blas::gemm<Scalar>(space, blas::Op::N, blas::Op::T, ly.out, ly.in, B, Scalar(1), dZ, ly.out, A_prev, ly.in,
                       Scalar(0), grads + ly.w, ly.out);
    if (!db_done)
      blas::gemv<Scalar>(space, blas::Op::N, ly.out, B, Scalar(1), dZ, ly.out, ws.ones.data(), Scalar(0),
                         grads + ly.b);
    return;
  }
  if constexpr (std::is_same<Scalar, float>::value) {
    blas::gemm_strided_batched<float>(space, blas::Op::N, blas::Op::T, ly.out, ly.in, B, 1.0f, dZ, ly.out, z_stride,
                                      A_prev, ly.in, a_stride, 0.0f, grads + ly.w, ly.out, param_stride, count);
    if (!db_done)
      blas::gemv_strided_batched<float>(space, blas::Op::N, ly.out, B, 1.0f, dZ, ly.out, z_stride, ws.ones.data(), 0LL,
                                        0.0f, grads + ly.b, param_stride, count);
  }
}

/// dA = W^T dZ with the ReLU's derivative (and, with grads, the lower layer's bias gradient) in
/// the product's epilogue, for `count` nets.  False: not fused.
template <class Scalar>
bool fused_input_grad(const ExecSpace& space, const MlpLayout& layout, std::size_t li, const Scalar* params,
                      long long param_stride, int count, const Scalar* dZ, int B, MlpWorkspace<Scalar>& ws,
                      Scalar* dA, Scalar* grads) {
  if constexpr (!std::is_same<Scalar, float>::value) {
    return false;
  } else {
    if (li == 0 || !ws.masks_ready) return false;
    const Layer& ly = layout.layers[li];
    const Layer& below = layout.layers[li - 1];
    blas::EpilogueArgs e;
    e.kind = grads ? blas::Epilogue::DReluBGrad : blas::Epilogue::DRelu;
    e.bias = grads ? grads + below.b : nullptr;
    e.bias_stride = param_stride;
    e.mask = ws.mask(li - 1);
    e.mask_ld = blas::relu_mask_ld(below.out);
    e.mask_stride = e.mask_ld * B;
    return blas::gemm_epilogue(space, blas::Op::T, blas::Op::N, ly.in, B, ly.out, params + ly.w, ly.out, param_stride,
                               dZ, ly.out, (long long)ly.out * B, dA, ly.in, (long long)ly.in * B, count, e);
  }
}

}  // namespace detail

template <class Scalar>
void mlp_forward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                 const Scalar* X, int B, MlpWorkspace<Scalar>& ws) {
  GMI_REQUIRE(B > 0 && B <= ws.capacity, "mlp_forward: batch exceeds the workspace capacity");
  const Scalar* in = X;
  const std::size_t L = layout.layers.size();
  bool masks = true;
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& ly = layout.layers[l];
    Scalar* Z = ws.acts.data() + ws.act_offset[l];
    if (!detail::fused_forward(space, layout, l, params, 0, 1, in, 0, B, ws, Z)) {
      blas::gemm<Scalar>(space, blas::Op::N, blas::Op::N, ly.out, B, ly.in, Scalar(1), params + ly.w,
                         ly.out, in, ly.in, Scalar(0), Z, ly.out);
      dispatch(layout.act, [&](auto a) { detail::bias_act(space, Z, params + ly.b, ly.out, B, a, l + 1 == L); });
      if (l + 1 < L) masks = false;
    }
    in = Z;
  }
  ws.masks_ready = masks && ws.masks.extent(0) > 0;
}

template <class Scalar>
void mlp_backward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                  const Scalar* X, int B, MlpWorkspace<Scalar>& ws, Scalar* dY, Scalar* grads,
                  Scalar* dX) {
  GMI_REQUIRE(B > 0 && B <= ws.capacity, "mlp_backward: batch exceeds the workspace capacity");
  // grads uses the same offsets as params; both are whole flat buffers.
  Scalar* dZ = dY;
  Scalar* bufs[2] = {ws.grad_a.data(), ws.grad_b.data()};
  int next = 0;
  bool db_done = false;  // this layer's bias gradient came with the layer above's input gradient
  for (std::size_t li = layout.layers.size(); li-- > 0;) {
    const Layer& ly = layout.layers[li];
    const Scalar* A_prev = li == 0 ? X : ws.acts.data() + ws.act_offset[li - 1];
    // dW = dZ * A_prev^T, db = dZ * 1 (not wanted when only dX is: grads null)
    if (grads) detail::weight_grads(space, ly, 1, dZ, A_prev, 0, B, grads, 0, db_done, ws);
    if (li == 0 && !dX) break;
    Scalar* dA = li == 0 ? dX : bufs[next];
    next ^= 1;
    db_done = detail::fused_input_grad(space, layout, li, params, 0, 1, dZ, B, ws, dA, grads);
    if (!db_done) {
      blas::gemm<Scalar>(space, blas::Op::T, blas::Op::N, ly.in, B, ly.out, Scalar(1), params + ly.w,
                         ly.out, dZ, ly.out, Scalar(0), dA, ly.in);
      if (li > 0)
        dispatch(layout.act, [&](auto a) {
          detail::act_backward(space, dA, A_prev, std::size_t(ly.in) * B, a);
        });
    }
    db_done = db_done && grads;
    dZ = dA;
  }
}

template <class Scalar>
void mlp_forward_batched(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                         std::size_t param_stride, int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws) {
  GMI_REQUIRE(B > 0 && count > 0 && std::int64_t(B) * count <= ws.capacity,
              "mlp_forward_batched: batch exceeds the workspace capacity");
  const Scalar* in = X;
  const std::size_t L = layout.layers.size();
  bool masks = true;
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& ly = layout.layers[l];
    Scalar* Z = ws.acts.data() + ws.act_offset[l];
    // net i: W_i = params + w + i * stride; input shared (layer 0) or net i's; output block i
    const long long in_stride = l == 0 ? 0LL : (long long)ly.in * B;
    if (!detail::fused_forward(space, layout, l, params, (long long)param_stride, count, in, in_stride, B, ws, Z)) {
      blas::gemm_strided_batched<Scalar>(space, blas::Op::N, blas::Op::N, ly.out, B, ly.in, Scalar(1), params + ly.w,
                                         ly.out, (long long)param_stride, in, ly.in, in_stride, Scalar(0), Z, ly.out,
                                         (long long)ly.out * B, count);
      dispatch(layout.act, [&](auto a) {
        detail::bias_act_batched(space, Z, params + ly.b, param_stride, ly.out, B, count, a, l + 1 == L);
      });
      if (l + 1 < L) masks = false;
    }
    in = Z;
  }
  ws.masks_ready = masks && ws.masks.extent(0) > 0;
}

template <class Scalar>
void mlp_backward_batched(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                          std::size_t param_stride, int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws,
                          Scalar* dY, Scalar* grads, Scalar* dX) {
  GMI_REQUIRE(B > 0 && count > 0 && std::int64_t(B) * count <= ws.capacity,
              "mlp_backward_batched: batch exceeds the workspace capacity");
  Scalar* dZ = dY;
  Scalar* bufs[2] = {ws.grad_a.data(), ws.grad_b.data()};
  int next = 0;
  const long long stride = (long long)param_stride;
  bool db_done = false;
  for (std::size_t li = layout.layers.size(); li-- > 0;) {
    const Layer& ly = layout.layers[li];
    const Scalar* A_prev = li == 0 ? X : ws.acts.data() + ws.act_offset[li - 1];
    const long long a_stride = li == 0 ? 0LL : (long long)ly.in * B;
    if (grads) detail::weight_grads(space, ly, count, dZ, A_prev, a_stride, B, grads, stride, db_done, ws);
    if (li == 0 && !dX) break;
    Scalar* dA = li == 0 ? dX : bufs[next];
    next ^= 1;
    db_done = detail::fused_input_grad(space, layout, li, params, stride, count, dZ, B, ws, dA, grads);
    if (!db_done) {
      blas::gemm_strided_batched<Scalar>(space, blas::Op::T, blas::Op::N, ly.in, B, ly.out, Scalar(1), params + ly.w,
                                         ly.out, stride, dZ, ly.out, (long long)ly.out * B, Scalar(0), dA, ly.in,
                                         (long long)ly.in * B, count);
      if (li > 0)
        dispatch(layout.act, [&](auto a) {
          detail::act_backward(space, dA, A_prev, std::size_t(ly.in) * B * count, a);
        });
    }
    db_done = db_done && grads;
    dZ = dA;
  }
}

template void mlp_forward_batched<float>(const ExecSpace&, const MlpLayout&, const float*, std::size_t, int,
                                         const float*, int, MlpWorkspace<float>&);
template void mlp_backward_batched<float>(const ExecSpace&, const MlpLayout&, const float*, std::size_t, int,
                                          const float*, int, MlpWorkspace<float>&, float*, float*, float*);

template struct MlpWorkspace<float>;
template struct MlpWorkspace<double>;
template void mlp_forward<float>(const ExecSpace&, const MlpLayout&, const float*, const float*, int,
                                 MlpWorkspace<float>&);
template void mlp_forward<double>(const ExecSpace&, const MlpLayout&, const double*, const double*,
                                  int, MlpWorkspace<double>&);
template void mlp_backward<float>(const ExecSpace&, const MlpLayout&, const float*, const float*, int,
                                  MlpWorkspace<float>&, float*, float*, float*);
template void mlp_backward<double>(const ExecSpace&, const MlpLayout&, const double*, const double*,
                                   int, MlpWorkspace<double>&, double*, double*, double*);

}  // namespace gmi::nn
