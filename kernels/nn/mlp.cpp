#include "kernels/nn/mlp.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/nn/tile_gemm.hpp"

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
  const std::size_t chunks = (std::size_t(cap) + kBiasChunk - 1) / kBiasChunk;
  GMI_REQUIRE(chunks * std::size_t(layout.max_width()) < std::size_t(std::numeric_limits<int>::max()),
              "MlpWorkspace: capacity too large for the bias gradients' partial sums");
  bias_partials = View1<Scalar>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gmi::nn::Mlp::bias_partials"),
                                chunks * (total / std::size_t(cap)));
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

/// db = dZ 1 over an out × B column-major matrix, summed in an order fixed by out, B and the team
/// size Kokkos picks for this kernel on this build and device (the same every run there):
/// partial sums over chunks of kBiasChunk columns (consecutive threads read consecutive rows of a
/// column, four running sums a thread), then one team per row adds its chunks' sums. Written because
/// cuBLAS's gemv (one pass over the 64 MiB of a 256 × 65536 dZ) ran at a third of the bandwidth;
/// measured on an H100 it is no faster (Humanoid 256x256 at 65,536 envs, kernels fenced: 14.3 +
/// 8.9 ms an iteration against the gemvs' 12.9 ms; the second pass reads its partials a sector per
/// float; the iteration's wall time unchanged).
template <class Scalar>
void bias_grad(const ExecSpace& space, const Scalar* dZ, int out, int B, Scalar* partials, Scalar* db) {
  const int chunks = (B + kBiasChunk - 1) / kBiasChunk;
  Kokkos::parallel_for(
      "gmi::nn::Mlp::bias_grad_chunks", Range(space, 0, chunks * out), KOKKOS_LAMBDA(const int k) {
        const int c = k / out, d = k - c * out;
        const int begin = c * kBiasChunk, end = B < begin + kBiasChunk ? B : begin + kBiasChunk;
        const Scalar* z = dZ + std::size_t(begin) * out + d;
        Scalar s[4] = {0, 0, 0, 0};
        int i = 0;
        for (; i + 4 <= end - begin; i += 4)
          for (int u = 0; u < 4; ++u) s[u] += z[std::size_t(i + u) * out];
        for (; i < end - begin; ++i) s[0] += z[std::size_t(i) * out];
        partials[k] = (s[0] + s[1]) + (s[2] + s[3]);
      });
  Kokkos::parallel_for(
      "gmi::nn::Mlp::bias_grad_sum", TeamPolicy(space, out, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamPolicy::member_type& team) {
        const int d = team.league_rank();
        Scalar sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, chunks),
            [&](const int c, Scalar& acc) { acc += partials[std::size_t(c) * out + d]; }, sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] { db[d] = sum; });
      });
}

/// The smallest batch whose bias gradients bias_grad sums (below, one gemv: one launch where the
/// two passes are two, and the sums the off-policy learning tests were tuned on; a TD3 Pendulum
/// seed fell short of its target with the two-pass order at SAC's and TD3's 256 columns).
constexpr int kBiasSumMinColumns = 4096;

/// Layer l's product and bias (and activation): fused into the product where blas offers it
/// (the output layer's bias, ReLU hidden layers), else the product and the bias_act kernel.
template <class Scalar>
void layer_forward(const ExecSpace& space, const MlpLayout& layout, std::size_t l, const Scalar* W, long long w_stride,
                   const Scalar* b, const Scalar* in, long long in_stride, Scalar* Z, int B, int count) {
  const Layer& ly = layout.layers[l];
  const bool linear = l + 1 == layout.layers.size() && !layout.activated_out;
  const long long z_stride = (long long)ly.out * B;
  if constexpr (std::is_same_v<Scalar, float>) {
    if (count == 1 && !linear && tile_gemm::forward(space, layout.act, ly.out, ly.in, B, W, b, in, Z)) return;
  }
  if ((linear || layout.act == Activation::Relu) &&
      blas::gemm_bias_act<Scalar>(space, blas::Op::N, blas::Op::N, ly.out, B, ly.in, W, ly.out, w_stride, in, ly.in,
                                  in_stride, Z, ly.out, z_stride, count, b, w_stride,
                                  linear ? blas::Epilogue::Bias : blas::Epilogue::ReluBias))
    return;
  if (count == 1) {
    blas::gemm<Scalar>(space, blas::Op::N, blas::Op::N, ly.out, B, ly.in, Scalar(1), W, ly.out, in, ly.in, Scalar(0), Z,
                       ly.out);
    dispatch(layout.act, [&](auto a) { bias_act(space, Z, b, ly.out, B, a, linear); });
    return;
  }
  // net i: W_i = W + i * stride; input shared (stride 0) or net i's; output block i (float only:
  // the batched wrappers have no double instances)
  if constexpr (std::is_same_v<Scalar, float>) {
    blas::gemm_strided_batched<Scalar>(space, blas::Op::N, blas::Op::N, ly.out, B, ly.in, Scalar(1), W, ly.out, w_stride,
                                       in, ly.in, in_stride, Scalar(0), Z, ly.out, z_stride, count);
    dispatch(layout.act,
             [&](auto a) { bias_act_batched(space, Z, b, std::size_t(w_stride), ly.out, B, count, a, linear); });
  }
}

/// A layer's weight and bias gradients, dW = dZ A_prev^T and db = dZ 1: one fused product where
/// blas offers it, else the product and bias_grad (a gemv for `count` networks and below
/// kBiasSumMinColumns). `partials`: the layer's own scratch for bias_grad (the side stream's
/// layers may overlap the main one's last).
template <class Scalar>
void layer_grads(const ExecSpace& space, const Layer& ly, const Scalar* dZ, const Scalar* A_prev, long long a_stride,
                 int B, int count, long long g_stride, const Scalar* ones, Scalar* partials, Scalar* grads) {
  const long long dz_stride = (long long)ly.out * B;
  if (blas::gemm_bias_grad<Scalar>(space, blas::Op::N, blas::Op::T, ly.out, ly.in, B, dZ, ly.out, dz_stride, A_prev,
                                   ly.in, a_stride, grads + ly.w, ly.out, g_stride, count, grads + ly.b, g_stride))
    return;
  if (count == 1) {
    blas::gemm<Scalar>(space, blas::Op::N, blas::Op::T, ly.out, ly.in, B, Scalar(1), dZ, ly.out, A_prev, ly.in,
                       Scalar(0), grads + ly.w, ly.out);
    if (B >= kBiasSumMinColumns)
      bias_grad(space, dZ, ly.out, B, partials, grads + ly.b);
    else
      blas::gemv<Scalar>(space, blas::Op::N, ly.out, B, Scalar(1), dZ, ly.out, ones, Scalar(0), grads + ly.b);
    return;
  }
  if constexpr (std::is_same_v<Scalar, float>) {
    blas::gemm_strided_batched<Scalar>(space, blas::Op::N, blas::Op::T, ly.out, ly.in, B, Scalar(1), dZ, ly.out,
                                       dz_stride, A_prev, ly.in, a_stride, Scalar(0), grads + ly.w, ly.out, g_stride,
                                       count);
    blas::gemv_strided_batched<Scalar>(space, blas::Op::N, ly.out, B, Scalar(1), dZ, ly.out, dz_stride, ones, 0LL,
                                       Scalar(0), grads + ly.b, g_stride, count);
  }
}

/// The side stream's share of a backward pass: weight gradients forked off the main chain of
/// input gradients, and the joins that keep the ping-pong buffers safe (main never writes a buffer
/// the side may still read) and hand the gradients back before the pass returns.
struct SideGradients {
  SideStream* side = nullptr;  ///< null: everything on the main instance
  unsigned reads = 0;          ///< ping-pong buffers the side's outstanding work reads (bits)
  bool pending = false;
  template <class F>
  void run(const ExecSpace& main, int reads_buffer, F&& f) {
    if (!side) return f(main);
    side->fork(main);
    f(side->space());
    pending = true;
    if (reads_buffer >= 0) reads |= 1u << reads_buffer;
  }
  void before_write(const ExecSpace& main, int buffer) {
    if (side && (reads >> buffer & 1u)) join(main);
  }
  void join(const ExecSpace& main) {
    if (side && pending) side->join(main);
    pending = false;
    reads = 0;
  }
};

/// dX and the parameter gradients of `count` networks `param_stride` apart (count 1: one
/// network), layer by layer from the output: each layer's weight and bias gradients (on the
/// workspace's side stream, beside the main chain, where one exists) and its input gradient.
template <class Scalar>
void backward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params, std::size_t param_stride,
              int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws, Scalar* dY, Scalar* grads, Scalar* dX) {
  Scalar* dZ = dY;
  if (layout.activated_out) {  // dY is the gradient of the last activation's output
    GMI_REQUIRE(count == 1, "mlp_backward: an activated output layer in a batched backward pass");
    dispatch(layout.act, [&](auto a) {
      act_backward(space, dY, ws.acts.data() + ws.act_offset.back(), std::size_t(layout.out()) * B, a);
    });
  }
  int dz_buffer = -1;  // which ping-pong buffer dZ is (-1: the caller's dY)
  Scalar* bufs[2] = {ws.grad_a.data(), ws.grad_b.data()};
  int next = 0;
  const long long stride = (long long)param_stride;
  if (grads && !ws.side && !SideStream::capturing(space)) ws.side = std::make_shared<SideStream>();
  SideGradients side{ws.side && blas::side_streams_safe() ? ws.side.get() : nullptr};
  for (std::size_t li = layout.layers.size(); li-- > 0;) {
    const Layer& ly = layout.layers[li];
    const Scalar* A_prev = li == 0 ? X : ws.acts.data() + ws.act_offset[li - 1];
    const long long a_stride = li == 0 ? 0LL : (long long)ly.in * B;
    const bool more = li > 0 || dX;  // main-chain work follows this layer's gradients
    // Main writes this layer's dA into bufs[next] below: the side's older reads of it end first.
    if (more && li > 0) side.before_write(space, next);
    // dW = dZ * A_prev^T, db = dZ * 1 (not wanted when only dX is: grads null)
    if (grads) {
      Scalar* partials = ws.bias_partials.data() + ws.act_offset[li] / std::size_t(ws.capacity) *
                                                        ((std::size_t(ws.capacity) + kBiasChunk - 1) / kBiasChunk);
      auto g = [&](const ExecSpace& sp) {
        layer_grads(sp, ly, dZ, A_prev, a_stride, B, count, stride, ws.ones.data(), partials, grads);
      };
      if (more) side.run(space, dz_buffer, g);
      else g(space);
    }
    if (!more) break;
    Scalar* dA = li == 0 ? dX : bufs[next];
    bool derived = false;  // dA already holds the lower layer's activation derivative
    if constexpr (std::is_same_v<Scalar, float>) {
      derived = count == 1 && li > 0 &&
                tile_gemm::input_grad(space, layout.act, ly.out, ly.in, B, params + ly.w, dZ, A_prev, dA);
    }
    if (derived) {
      // one tile kernel did the product and the derivative
    } else if (count == 1) {
      blas::gemm<Scalar>(space, blas::Op::T, blas::Op::N, ly.in, B, ly.out, Scalar(1), params + ly.w, ly.out, dZ,
                         ly.out, Scalar(0), dA, ly.in);
    } else if constexpr (std::is_same_v<Scalar, float>) {
      blas::gemm_strided_batched<Scalar>(space, blas::Op::T, blas::Op::N, ly.in, B, ly.out, Scalar(1), params + ly.w,
                                         ly.out, stride, dZ, ly.out, (long long)ly.out * B, Scalar(0), dA, ly.in,
                                         (long long)ly.in * B, count);
    }
    if (li > 0 && !derived)
      dispatch(layout.act, [&](auto a) { act_backward(space, dA, A_prev, std::size_t(ly.in) * B * count, a); });
    dZ = dA;
    dz_buffer = li > 0 ? next : -1;
    next ^= 1;
  }
  side.join(space);
}

}  // namespace detail

template <class Scalar>
void mlp_forward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                 const Scalar* X, int B, MlpWorkspace<Scalar>& ws) {
  GMI_REQUIRE(B > 0 && B <= ws.capacity, "mlp_forward: batch exceeds the workspace capacity");
  const Scalar* in = X;
  const std::size_t L = layout.layers.size();
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& ly = layout.layers[l];
    Scalar* Z = ws.acts.data() + ws.act_offset[l];
    detail::layer_forward(space, layout, l, params + ly.w, 0LL, params + ly.b, in, 0LL, Z, B, 1);
    in = Z;
  }
}

template <class Scalar>
void mlp_backward(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                  const Scalar* X, int B, MlpWorkspace<Scalar>& ws, Scalar* dY, Scalar* grads,
                  Scalar* dX) {
  GMI_REQUIRE(B > 0 && B <= ws.capacity, "mlp_backward: batch exceeds the workspace capacity");
  detail::backward(space, layout, params, 0, 1, X, B, ws, dY, grads, dX);
}

template <class Scalar>
void mlp_forward_batched(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                         std::size_t param_stride, int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws) {
  GMI_REQUIRE(B > 0 && count > 0 && std::int64_t(B) * count <= ws.capacity,
              "mlp_forward_batched: batch exceeds the workspace capacity");
  const Scalar* in = X;
  const std::size_t L = layout.layers.size();
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& ly = layout.layers[l];
    Scalar* Z = ws.acts.data() + ws.act_offset[l];
    detail::layer_forward(space, layout, l, params + ly.w, (long long)param_stride, params + ly.b, in,
                          l == 0 ? 0LL : (long long)ly.in * B, Z, B, count);
    in = Z;
  }
}

template <class Scalar>
void mlp_backward_batched(const ExecSpace& space, const MlpLayout& layout, const Scalar* params,
                          std::size_t param_stride, int count, const Scalar* X, int B, MlpWorkspace<Scalar>& ws,
                          Scalar* dY, Scalar* grads, Scalar* dX) {
  GMI_REQUIRE(B > 0 && count > 0 && std::int64_t(B) * count <= ws.capacity,
              "mlp_backward_batched: batch exceeds the workspace capacity");
  detail::backward(space, layout, params, param_stride, count, X, B, ws, dY, grads, dX);
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
