// mlp_forward / mlp_backward against independent oracles:
//  * the forward pass against a naive host loop in long double (layout, activations, bias);
//  * every parameter gradient and dL/dX against central finite differences of the scalar loss
//    L = sum(C .* Y) (random C), in double, for tanh, relu and elu and several shapes, with the
//    MLP placed at an offset inside a larger flat buffer (as the critic is) whose other entries
//    must not be written;
//  * float forward against double forward, batching against column-by-column evaluation,
//    and the workspace-capacity precondition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/nn/blas.hpp"
#include "kernels/nn/mlp.hpp"
#include "kernels/nn/tensor_core.hpp"
#include "kernels/nn/tile_gemm.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::nn {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

/// The tile kernels' process-wide settings for one test (the smallest batch they take), put back
/// however the test ends: the default floor, the timed tile choice, the kernels on, fp32.
struct TileSettings {
  explicit TileSettings(int min_batch) { tile_gemm::set_min_batch(min_batch); }
  ~TileSettings() {
    tile_gemm::set_min_batch(0);
    tile_gemm::force_tiles(-1);
    tile_gemm::set_enabled(true);
    blas::set_matmul_precision(blas::MatmulPrecision::FP32);
  }
  TileSettings(const TileSettings&) = delete;
  TileSettings& operator=(const TileSettings&) = delete;
};

template <class T>
void upload(const std::vector<T>& h, const View1<T>& d) {
  Kokkos::deep_copy(d, Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                           h.data(), h.size()));
}

std::vector<double> random_vec(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

/// Parameters with weights ~ U(-1.5, 1.5)/sqrt(in) (pre-activations O(1), so tanh and elu are
/// exercised on both their linear and saturating parts) and biases ~ U(-0.5, 0.5).
std::vector<double> random_params(const MlpLayout& l, std::size_t total, std::uint64_t seed) {
  auto p = random_vec(total, -1.0, 1.0, seed);
  for (const auto& ly : l.layers) {
    const double s = 1.5 / std::sqrt(double(ly.in));
    for (std::size_t k = 0; k < std::size_t(ly.in) * ly.out; ++k) p[ly.w + k] *= s;
    for (int k = 0; k < ly.out; ++k) p[ly.b + k] *= 0.5;
  }
  return p;
}

/// Naive forward in long double.  Returns Y (out × B) and the smallest |pre-activation| of the
/// hidden layers (distance to the relu/elu kink).
struct HostForward {
  std::vector<long double> Y;
  double min_abs_pre = std::numeric_limits<double>::infinity();
};

HostForward host_forward(const MlpLayout& l, const std::vector<double>& P,
                         const std::vector<double>& X, int B) {
  HostForward r;
  std::vector<long double> in(X.begin(), X.end());
  for (std::size_t li = 0; li < l.layers.size(); ++li) {
    const Layer& ly = l.layers[li];
    const bool hidden = li + 1 < l.layers.size() || l.activated_out;
    std::vector<long double> out(std::size_t(ly.out) * B);
    for (int b = 0; b < B; ++b)
      for (int o = 0; o < ly.out; ++o) {
        long double z = P[ly.b + o];
        for (int i = 0; i < ly.in; ++i)
          z += (long double)P[ly.w + std::size_t(i) * ly.out + o] * in[std::size_t(b) * ly.in + i];
        if (hidden) {
          r.min_abs_pre = std::min(r.min_abs_pre, double(std::fabs(z)));
          switch (l.act) {
            case Activation::Tanh: z = std::tanh(z); break;
            case Activation::Relu: z = z > 0 ? z : 0; break;
            case Activation::Elu: z = z > 0 ? z : std::expm1(z); break;
          }
        }
        out[std::size_t(b) * ly.out + o] = z;
      }
    in.swap(out);
  }
  r.Y = std::move(in);
  return r;
}

/// One MLP inside a flat buffer [pre | MLP | post], with device copies of everything.
struct Fixture {
  MlpLayout layout;
  std::size_t total;
  int B;
  std::vector<double> P, X, C;
  double min_abs_pre;

  Fixture(int in, std::vector<int> hidden, int out, Activation act, int B_, std::size_t pre,
          std::size_t post, std::uint64_t seed, bool activated_out = false)
      : B(B_) {
    layout = MlpLayout(in, hidden, out, act, pre);
    layout.activated_out = activated_out;
    total = pre + layout.num_params + post;
    // Look for a seed whose hidden pre-activations all stay >= 1e-3 away from 0, so that no
    // finite-difference step (1e-6 on a parameter or an input, moving a pre-activation by at
    // most ~1e-5) crosses the kink of relu (or the second-derivative jump of elu).
    for (std::uint64_t s = seed;; s += 7919) {
      P = random_params(layout, total, s);
      X = random_vec(std::size_t(in) * B, -1.0, 1.0, s + 1);
      min_abs_pre = host_forward(layout, P, X, B).min_abs_pre;
      if (min_abs_pre > 1e-3) break;
    }
    C = random_vec(std::size_t(out) * B, -1.0, 1.0, seed + 2);
  }
};

/// L = sum(C .* Y) with Y from the kernel's forward pass.
double loss(const ExecSpace& space, const Fixture& f, const View1<double>& dP,
            const View1<double>& dX, MlpWorkspace<double>& ws) {
  mlp_forward<double>(space, f.layout, dP.data(), dX.data(), f.B, ws);
  space.fence();
  const auto Y = gmi::test::to_host(ws.output(f.layout), std::size_t(f.layout.out()) * f.B);
  double L = 0;
  for (std::size_t k = 0; k < Y.size(); ++k) L += f.C[k] * Y[k];
  return L;
}

void gradient_check(const Fixture& f) {
  SCOPED_TRACE(::testing::Message() << "activation " << activation_name(f.layout.act) << ", "
                                    << f.layout.layers.size() << " layers, B=" << f.B);
  ExecSpace space;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto dP = to_device(f.P), dX = to_device(f.X);
  MlpWorkspace<double> ws(f.layout, f.B + 3);  // capacity above the batch, as in training

  // Forward against the naive loop.
  mlp_forward<double>(space, f.layout, dP.data(), dX.data(), f.B, ws);
  space.fence();
  const auto Y = to_host(ws.output(f.layout), std::size_t(f.layout.out()) * f.B);
  const auto ref = host_forward(f.layout, f.P, f.X, f.B);
  for (std::size_t k = 0; k < Y.size(); ++k)
    EXPECT_NEAR(Y[k], double(ref.Y[k]), 1e-12 * (1 + std::fabs(double(ref.Y[k])))) << "Y[" << k << "]";

  // Analytic gradients; outputs start as NaN to check that they are overwritten (not
  // accumulated), and entries of the flat buffer that are no W or b of this MLP (outside it, or
  // alignment padding) carry a sentinel that must survive.
  const double sentinel = 12345.0;
  std::vector<double> g0(f.total, sentinel);
  std::vector<bool> is_param(f.total, false);
  for (const auto& ly : f.layout.layers)
    for (std::size_t k = ly.w; k < ly.b + ly.out; ++k) g0[k] = nan, is_param[k] = true;
  auto dG = to_device(g0);
  auto dGX = to_device(std::vector<double>(f.X.size(), nan));
  auto dY = to_device(f.C);  // dL/dY = C; overwritten by the backward pass
  mlp_backward<double>(space, f.layout, dP.data(), dX.data(), f.B, ws, dY.data(), dG.data(),
                       dGX.data());
  space.fence();
  const auto G = to_host(dG);
  const auto GX = to_host(dGX);

  // The same without dX must give the same parameter gradients.
  auto dG2 = to_device(g0);
  upload(f.C, dY);
  mlp_backward<double>(space, f.layout, dP.data(), dX.data(), f.B, ws, dY.data(), dG2.data());
  space.fence();
  const auto G2 = to_host(dG2);
  for (std::size_t k = 0; k < f.total; ++k) ASSERT_EQ(G[k], G2[k]) << "param " << k;

  for (std::size_t k = 0; k < f.total; ++k)
    if (!is_param[k]) {
      ASSERT_EQ(G[k], sentinel) << "gradient written outside W and b at " << k;
    }

  // Central differences with h = 1e-6: truncation error h^2/6 |L'''| ~ 1e-13, rounding error
  // ~ eps |L| / h ~ 1e-9 (|L| ~ 10).  Tolerance 1e-7 + 1e-6 |g| leaves two orders of margin
  // and is still many orders below the error of a wrong term.
  const double h = 1e-6;
  auto tol = [](double g) { return 1e-7 + 1e-6 * std::fabs(g); };
  double worst = 0;
  std::vector<double> P = f.P;
  for (std::size_t k = f.layout.offset; k < f.layout.offset + f.layout.num_params; ++k) {
    if (!is_param[k]) continue;  // alignment padding: no parameter there
    const double p0 = P[k];
    P[k] = p0 + h;
    upload(P, dP);
    const double Lp = loss(space, f, dP, dX, ws);
    P[k] = p0 - h;
    upload(P, dP);
    const double Lm = loss(space, f, dP, dX, ws);
    P[k] = p0;
    const double fd = (Lp - Lm) / (2 * h);
    worst = std::max(worst, std::fabs(G[k] - fd) / tol(fd));
    EXPECT_NEAR(G[k], fd, tol(fd)) << "dL/dparam[" << k << "] (flat index)";
  }
  upload(P, dP);
  std::vector<double> X = f.X;
  for (std::size_t k = 0; k < X.size(); ++k) {
    const double x0 = X[k];
    X[k] = x0 + h;
    upload(X, dX);
    const double Lp = loss(space, f, dP, dX, ws);
    X[k] = x0 - h;
    upload(X, dX);
    const double Lm = loss(space, f, dP, dX, ws);
    X[k] = x0;
    const double fd = (Lp - Lm) / (2 * h);
    worst = std::max(worst, std::fabs(GX[k] - fd) / tol(fd));
    EXPECT_NEAR(GX[k], fd, tol(fd)) << "dL/dX[" << k << "]";
  }
  ::testing::Test::RecordProperty(std::string("worst_error_over_tolerance_") + activation_name(f.layout.act) +
                     "_" + std::to_string(f.layout.layers.size()),
                 std::to_string(worst));
}

class MlpGrad : public ::testing::TestWithParam<Activation> {};

TEST_P(MlpGrad, DeepUnevenWidths) {
  // 7:16:12:9:3, batch 8, at offset 5 of a larger buffer.
  gradient_check(Fixture(7, {16, 12, 9}, 3, GetParam(), 8, 5, 4, 11));
}

TEST_P(MlpGrad, OneHiddenLayer) {
  gradient_check(Fixture(4, {5}, 2, GetParam(), 5, 0, 0, 23));
}

TEST_P(MlpGrad, WideOutputSmallBatch) {
  gradient_check(Fixture(3, {6, 6}, 10, GetParam(), 1, 2, 0, 37));
}

// The last layer activated too (an actor-critic's shared trunk): dY is the activation's output
// gradient.
TEST_P(MlpGrad, ActivatedOutputLayer) {
  gradient_check(Fixture(5, {7}, 4, GetParam(), 6, 3, 2, 41, true));
}

INSTANTIATE_TEST_SUITE_P(Activations, MlpGrad,
                         ::testing::Values(Activation::Tanh, Activation::Relu, Activation::Elu),
                         [](const auto& info) { return std::string(activation_name(info.param)); });

TEST(Mlp, LinearOnlyGradient) {
  // No hidden layer: one affine map.
  gradient_check(Fixture(6, {}, 4, Activation::Tanh, 7, 1, 1, 41));
}

TEST(Mlp, FloatForwardAgreesWithDouble) {
  const TileSettings tile(1);  // GPU builds: the float pass through the tile kernels where they fit
  for (Activation act : {Activation::Tanh, Activation::Relu, Activation::Elu}) {
    SCOPED_TRACE(activation_name(act));
    const Fixture f(7, {16, 12, 9}, 3, act, 9, 0, 0, 53);
    std::vector<float> Pf(f.P.begin(), f.P.end()), Xf(f.X.begin(), f.X.end());
    // Reference: the double forward of the float-rounded parameters and inputs.
    const std::vector<double> Pd(Pf.begin(), Pf.end()), Xd(Xf.begin(), Xf.end());
    ExecSpace space;
    MlpWorkspace<float> wsf(f.layout, f.B);
    MlpWorkspace<double> wsd(f.layout, f.B);
    auto dPf = to_device(Pf), dXf = to_device(Xf);
    auto dPd = to_device(Pd), dXd = to_device(Xd);
    mlp_forward<float>(space, f.layout, dPf.data(), dXf.data(), f.B, wsf);
    mlp_forward<double>(space, f.layout, dPd.data(), dXd.data(), f.B, wsd);
    space.fence();
    const std::size_t n = std::size_t(f.layout.out()) * f.B;
    const auto Yf = to_host(wsf.output(f.layout), n);
    const auto Yd = to_host(wsd.output(f.layout), n);
    // Each layer adds a relative error of about (fan-in + 2) eps_float on its pre-activations
    // (weights are O(1/sqrt(in)), so activations stay O(1) and errors are not amplified); allow
    // 4 times the sum over layers.
    double fan = 0;
    for (const auto& ly : f.layout.layers) fan += ly.in + 2;
    const double tol = 4 * fan * std::numeric_limits<float>::epsilon();
    for (std::size_t k = 0; k < n; ++k)
      EXPECT_NEAR(Yf[k], Yd[k], tol * (1 + std::fabs(Yd[k]))) << "Y[" << k << "]";
  }
}

TEST(Mlp, BatchColumnsAreIndependent) {
  // Forward of a batch equals the forward of each column alone (no mixing of samples, no
  // dependence on the batch size).  The BLAS may pick different kernels for 1 and B columns,
  // so agreement is to rounding, not bitwise.
  const Fixture f(7, {16, 12, 9}, 3, Activation::Tanh, 10, 0, 0, 67);
  ExecSpace space;
  MlpWorkspace<double> ws(f.layout, 16);
  auto dP = to_device(f.P), dX = to_device(f.X);
  mlp_forward<double>(space, f.layout, dP.data(), dX.data(), f.B, ws);
  space.fence();
  const int out = f.layout.out(), in = f.layout.in();
  const auto Y = to_host(ws.output(f.layout), std::size_t(out) * f.B);
  for (int b = 0; b < f.B; ++b) {
    const std::vector<double> col(f.X.begin() + std::size_t(b) * in,
                                  f.X.begin() + std::size_t(b + 1) * in);
    auto dcol = to_device(col);
    mlp_forward<double>(space, f.layout, dP.data(), dcol.data(), 1, ws);
    space.fence();
    const auto y = to_host(ws.output(f.layout), std::size_t(out));
    for (int o = 0; o < out; ++o)
      EXPECT_NEAR(y[o], Y[std::size_t(b) * out + o], 1e-13) << "sample " << b << " output " << o;
  }
}

TEST(Mlp, WorkspaceCapacityIsChecked) {
  const MlpLayout l(3, {4}, 2, Activation::Relu, 0);
  MlpWorkspace<double> ws(l, 4);
  auto P = to_device(random_vec(l.num_params, -1, 1, 1));
  auto X = to_device(random_vec(3 * 5, -1, 1, 2));
  auto dY = to_device(random_vec(2 * 5, -1, 1, 3));
  View1<double> G("G", l.num_params);
  ExecSpace space;
  EXPECT_THROW(mlp_forward<double>(space, l, P.data(), X.data(), 5, ws), gmi::Error);
  EXPECT_THROW(mlp_forward<double>(space, l, P.data(), X.data(), 0, ws), gmi::Error);
  EXPECT_NO_THROW(mlp_forward<double>(space, l, P.data(), X.data(), 4, ws));
  EXPECT_THROW(mlp_backward<double>(space, l, P.data(), X.data(), 5, ws, dY.data(), G.data()),
               gmi::Error);
  EXPECT_THROW(MlpWorkspace<double>(l, 0), gmi::Error);
  EXPECT_THROW(MlpLayout(0, {4}, 2, Activation::Relu, 0), gmi::Error);
  space.fence();
}

TEST(Mlp, LayoutOffsetsAreContiguousUpToAlignment) {
  const MlpLayout l(7, {16, 12, 9}, 3, Activation::Tanh, 13);
  std::size_t next = 13;
  std::size_t padding = 0;
  ASSERT_EQ(l.layers.size(), 4u);
  const int widths[] = {7, 16, 12, 9, 3};
  for (std::size_t i = 0; i < l.layers.size(); ++i) {
    EXPECT_EQ(l.layers[i].in, widths[i]);
    EXPECT_EQ(l.layers[i].out, widths[i + 1]);
    const std::size_t aligned = (next + 3) / 4 * 4;  // W starts on a 16-byte boundary
    padding += aligned - next;
    next = aligned;
    EXPECT_EQ(l.layers[i].w, next);
    next += std::size_t(widths[i]) * widths[i + 1];
    EXPECT_EQ(l.layers[i].b, next);
    next += widths[i + 1];
  }
  EXPECT_EQ(l.num_params, std::size_t(7 * 16 + 16 + 16 * 12 + 12 + 12 * 9 + 9 + 9 * 3 + 3) + padding);
  EXPECT_EQ(padding, 3u + 0u + 0u + 3u);  // 13 -> 16, 144 ok, 348 ok, 465 -> 468
  EXPECT_EQ(l.offset + l.num_params, next);
  EXPECT_EQ(l.max_width(), 16);
}

}  // namespace
}  // namespace gmi::nn

namespace gmi::nn {
namespace {

// Twin networks (SAC's Q1 and Q2) through the batched passes equal two separate passes: outputs,
// weight gradients and input gradients, bit for bit up to the BLAS's summation order.
// The float passes (cuBLAS, cuBLASLt or the tile kernels on GPU builds, in fp32; the two-pass bias
// sums beyond their epilogues' batches) against the double passes of the float-rounded inputs,
// whose gradients the finite differences above check.
TEST(Mlp, FloatGradientsAgreeWithDouble) {
  const TileSettings tile(1);  // GPU builds: the float pass through the tile kernels where they fit
  for (Activation act : {Activation::Tanh, Activation::Relu})
    for (int B : {9, 256, 5000}) {
      SCOPED_TRACE(::testing::Message() << activation_name(act) << " B=" << B);
      struct {
        MlpLayout layout;
        std::size_t total;
        int B;
      } f{MlpLayout(17, {64, 48}, 5, act, 4), 0, B};
      f.total = 4 + f.layout.num_params + 3;
      const auto P = random_params(f.layout, f.total, 61), X = random_vec(std::size_t(17) * B, -1.0, 1.0, 62),
                 C = random_vec(std::size_t(5) * B, -1.0, 1.0, 63);
      std::vector<float> Pf(P.begin(), P.end()), Xf(X.begin(), X.end()), Cf(C.begin(), C.end());
      const std::vector<double> Pd(Pf.begin(), Pf.end()), Xd(Xf.begin(), Xf.end()), Cd(Cf.begin(), Cf.end());
      ExecSpace space;
      MlpWorkspace<float> wsf(f.layout, f.B + 5);
      MlpWorkspace<double> wsd(f.layout, f.B);
      auto dPf = to_device(Pf), dXf = to_device(Xf), dCf = to_device(Cf);
      auto dPd = to_device(Pd), dXd = to_device(Xd), dCd = to_device(Cd);
      View1<float> gf("gf", f.total), gxf("gxf", Xf.size());
      View1<double> gd("gd", f.total), gxd("gxd", Xd.size());
      mlp_forward<float>(space, f.layout, dPf.data(), dXf.data(), f.B, wsf);
      mlp_backward<float>(space, f.layout, dPf.data(), dXf.data(), f.B, wsf, dCf.data(), gf.data(), gxf.data());
      mlp_forward<double>(space, f.layout, dPd.data(), dXd.data(), f.B, wsd);
      mlp_backward<double>(space, f.layout, dPd.data(), dXd.data(), f.B, wsd, dCd.data(), gd.data(), gxd.data());
      space.fence();
      const auto Gf = to_host(gf), GXf = to_host(gxf);
      const auto Gd = to_host(gd), GXd = to_host(gxd);
      // Each gradient sums B (weights, biases) or a layer width (inputs) products of O(1) terms
      // through three layers: a few hundred float roundings, relative to the largest entry.
      double scale = 0;
      for (double g : Gd) scale = std::max(scale, std::fabs(g));
      for (const auto& ly : f.layout.layers)
        for (std::size_t k = ly.w; k < ly.b + ly.out; ++k)
          EXPECT_NEAR(Gf[k], Gd[k], 2e-5 * scale) << "param " << k;
      double xscale = 0;
      for (double g : GXd) xscale = std::max(xscale, std::fabs(g));
      for (std::size_t k = 0; k < GXd.size(); ++k) EXPECT_NEAR(GXf[k], GXd[k], 2e-5 * xscale) << "dX[" << k << "]";
    }
}

// A float test problem: uniform(-1, 1) draws from one generator in this order, the parameters
// (times param_scale), the inputs, the output gradients.
struct Problem {
  std::vector<float> params, x, dy;
};
Problem random_problem(unsigned seed, std::size_t n_params, float param_scale, std::size_t n_x, std::size_t n_dy) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Problem p{std::vector<float>(n_params), std::vector<float>(n_x), std::vector<float>(n_dy)};
  for (float& v : p.params) v = u(g) * param_scale;
  for (float& v : p.x) v = u(g);
  for (float& v : p.dy) v = u(g);
  return p;
}

// A network's output and gradients.
struct EpilogueRun {
  std::vector<float> y, grads, dx;
};

// One network's forward and backward pass on problem p (in inputs, a batch of B) in a workspace of
// `capacity` columns (0: B); dX only where asked (else empty).
EpilogueRun single_pass(const MlpLayout& a, const Problem& p, int in, int B, int capacity = 0, bool with_dx = true) {
  auto P = to_device(p.params), X = to_device(p.x), dY = to_device(p.dy);
  MlpWorkspace<float> w(a, capacity > 0 ? capacity : B);
  View1<float> grads("grads", p.params.size()), dx("dx", with_dx ? std::size_t(B) * in : 0);
  mlp_forward(ExecSpace(), a, P.data(), X.data(), B, w);
  mlp_backward(ExecSpace(), a, P.data(), X.data(), B, w, dY.data(), grads.data(), with_dx ? dx.data() : nullptr);
  return {to_host(w.output(a), std::size_t(B) * a.out()), to_host(grads), with_dx ? to_host(dx) : std::vector<float>{}};
}

// The two-pass bias sums: with and without dX (the last layer's gradients on the main stream
// beside the side stream's, each in its own scratch) and in a workspace of twice the batch (more
// chunks than the batch fills), the same bits.
TEST(Mlp, BiasSumsIgnoreCapacityAndInputGradient) {
  const MlpLayout a(19, {64, 40}, 5, Activation::Tanh, 0);
  const int B = 5000;
  const Problem p = random_problem(17, a.num_params, 0.2f, std::size_t(B) * 19, std::size_t(B) * 5);
  auto grads_of = [&](int capacity, bool with_dx) { return single_pass(a, p, 19, B, capacity, with_dx).grads; };
  const auto base = grads_of(B, true);
  EXPECT_EQ(grads_of(B, false), base) << "without dX";
  EXPECT_EQ(grads_of(2 * B, true), base) << "in a workspace of twice the batch";
  double bias_sum = 0;  // the bias gradients are not all zero (the comparison bites)
  for (const auto& ly : a.layers)
    for (int k = 0; k < ly.out; ++k) bias_sum += std::fabs(base[ly.b + k]);
  EXPECT_GT(bias_sum, 0.0);
}

TEST(MlpBatched, TwinNetworksMatchTwoSeparatePasses) {
  const int in = 5, B = 7;
  MlpLayout a(in, {6, 4}, 1, Activation::Relu, 8);
  const std::size_t stride = (a.num_params + 3) / 4 * 4;
  MlpLayout b(in, {6, 4}, 1, Activation::Relu, 8 + stride);
  const auto [params, x, dy] = random_problem(4, 8 + 2 * stride, 1.0f, std::size_t(B) * in, 2 * B);
  auto P = to_device(params), X = to_device(x);
  // separate
  MlpWorkspace<float> wa(a, B), wb(b, B);
  mlp_forward(ExecSpace(), a, P.data(), X.data(), B, wa);
  mlp_forward(ExecSpace(), b, P.data(), X.data(), B, wb);
  const auto ya = to_host(wa.output(a), B), yb = to_host(wb.output(b), B);
  View1<float> ga("ga", params.size()), dxa("dxa", std::size_t(B) * in), dxb("dxb", std::size_t(B) * in);
  auto dya = to_device(std::vector<float>(dy.begin(), dy.begin() + B)),
       dyb = to_device(std::vector<float>(dy.begin() + B, dy.end()));
  mlp_backward(ExecSpace(), a, P.data(), X.data(), B, wa, dya.data(), ga.data(), dxa.data());
  mlp_backward(ExecSpace(), b, P.data(), X.data(), B, wb, dyb.data(), ga.data(), dxb.data());
  // batched
  MlpWorkspace<float> w2(a, 2 * B);
  mlp_forward_batched(ExecSpace(), a, P.data(), stride, 2, X.data(), B, w2);
  const auto y2 = to_host(w2.output(a), 2 * B);
  View1<float> g2("g2", params.size()), dx2("dx2", 2 * std::size_t(B) * in);
  auto dy2 = to_device(dy);
  mlp_backward_batched(ExecSpace(), a, P.data(), stride, 2, X.data(), B, w2, dy2.data(), g2.data(), dx2.data());
  for (int i = 0; i < B; ++i) {
    EXPECT_NEAR(y2[i], ya[i], 1e-6);
    EXPECT_NEAR(y2[B + i], yb[i], 1e-6);
  }
  const auto h1 = to_host(ga), h2 = to_host(g2);
  for (std::size_t k = 8; k < params.size(); ++k) EXPECT_NEAR(h2[k], h1[k], 1e-5) << "parameter " << k;
  const auto xa = to_host(dxa), xb = to_host(dxb), x2 = to_host(dx2);
  for (int k = 0; k < B * in; ++k) {
    EXPECT_NEAR(x2[k], xa[k], 1e-5);
    EXPECT_NEAR(x2[B * in + k], xb[k], 1e-5);
  }
  // weight gradients not wanted: only dX
  View1<float> dx3("dx3", 2 * std::size_t(B) * in);
  dy2 = to_device(dy);
  mlp_forward_batched(ExecSpace(), a, P.data(), stride, 2, X.data(), B, w2);
  mlp_backward_batched<float>(ExecSpace(), a, P.data(), stride, 2, X.data(), B, w2, dy2.data(), nullptr, dx3.data());
  EXPECT_EQ(to_host(dx3), x2);
}

// device.gemm_epilogues: the products with the bias, ReLU and bias gradient in cuBLASLt's
// epilogues (CUDA builds; the same kernels on host builds) against the separate kernels, for twin
// ReLU networks the size of SAC's critics (batched, the input shared), a tanh network (only its
// output layer's bias fused) and an MLP at an unaligned offset; parameters outside the networks
// must stay unwritten.
EpilogueRun run_epilogues(bool on, const MlpLayout& a, std::size_t stride, int count, int in, int B, std::size_t n_params) {
  blas::set_epilogues(on);
  const auto [params, x, dy] =
      random_problem(11, n_params, 0.2f, std::size_t(B) * in, std::size_t(count) * B * a.layers.back().out);
  auto P = to_device(params), X = to_device(x), dY = to_device(dy);
  MlpWorkspace<float> w(a, count * B);
  View1<float> grads("grads", n_params), dx("dx", std::size_t(count) * B * in);
  if (count == 1) {
    mlp_forward(ExecSpace(), a, P.data(), X.data(), B, w);
    mlp_backward(ExecSpace(), a, P.data(), X.data(), B, w, dY.data(), grads.data(), dx.data());
  } else {
    mlp_forward_batched(ExecSpace(), a, P.data(), stride, count, X.data(), B, w);
    mlp_backward_batched(ExecSpace(), a, P.data(), stride, count, X.data(), B, w, dY.data(), grads.data(), dx.data());
  }
  EpilogueRun r{to_host(w.output(a), std::size_t(count) * B * a.layers.back().out), to_host(grads), to_host(dx)};
  blas::set_epilogues(true);
  return r;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what, double tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " " << i;
}

TEST(MlpEpilogues, FusedProductsAgreeWithSeparateKernels) {
  struct Case {
    int in, B, count;
    std::vector<int> hidden;
    int out;
    Activation act;
    std::size_t offset;
  };
  // tf32: both paths round the products' operands to 10-bit mantissas (in different kernels; the
  // fused bias gradient may sum rounded values where the separate sum adds fp32 ones), so only
  // agreement to TF32's precision is asked there.
  for (const auto& [precision, tol] : {std::pair{blas::MatmulPrecision::FP32, 1e-4},
                                       std::pair{blas::MatmulPrecision::TF32, 2e-2}}) {
    blas::set_matmul_precision(precision);
    for (const Case& c : {Case{23, 256, 2, {256, 256}, 1, Activation::Relu, 0},
                          Case{17, 100, 1, {64, 64}, 12, Activation::Relu, 4},
                          Case{40, 64, 1, {128, 64}, 6, Activation::Tanh, 8},
                          Case{5, 7, 2, {6, 4}, 1, Activation::Relu, 8}}) {
      SCOPED_TRACE(testing::Message() << (precision == blas::MatmulPrecision::TF32 ? "tf32 " : "fp32 ") << c.in
                                      << " inputs, batch " << c.B << ", " << c.count << " net(s)");
      const MlpLayout a(c.in, c.hidden, c.out, c.act, c.offset);
      const std::size_t stride = (a.num_params + 3) / 4 * 4;
      const std::size_t n = c.offset + stride * std::size_t(c.count) + 5;
      const EpilogueRun on = run_epilogues(true, a, stride, c.count, c.in, c.B, n);
      const EpilogueRun off = run_epilogues(false, a, stride, c.count, c.in, c.B, n);
      expect_close(on.y, off.y, "output", tol);
      expect_close(on.grads, off.grads, "gradient", tol);
      expect_close(on.dx, off.dx, "dX", tol);
      for (std::size_t k = 0; k < c.offset; ++k) EXPECT_EQ(on.grads[k], 0.0f) << "written below the networks: " << k;
      for (std::size_t k = c.offset + stride * std::size_t(c.count); k < n; ++k)
        EXPECT_EQ(on.grads[k], 0.0f) << "written above the networks: " << k;
    }
  }
  blas::set_matmul_precision(blas::MatmulPrecision::FP32);
}

// device.tile_gemm: a hidden layer's product with its bias and activation, and the input
// gradient's product with the lower layer's activation derivative, one CUTLASS kernel each (CUDA
// builds with CUTLASS: TF32 tensor cores under tf32, SIMT under fp32; host builds run the separate
// kernels both times),
// against cuBLAS and the separate passes: Humanoid-sized tanh networks, ELU and ReLU ones, batches
// that are not whole tiles, inputs and outputs whose widths are not multiples of 4, and a hidden
// layer whose width is not (it falls back).
TEST(MlpTileGemm, TileKernelsAgreeWithSeparatePasses) {
  struct Case {
    int in, B;
    std::vector<int> hidden;
    int out;
    Activation act;
  };
  const TileSettings settings(1);  // the small batches here exercise the kernels
  EXPECT_EQ(tile_gemm::enabled(), tile_gemm::candidates() > 0) << "built, yet switched off";
  auto run = [](bool tile, const MlpLayout& a, int in, int B) {
    tile_gemm::set_enabled(tile);
    const EpilogueRun r =
        single_pass(a, random_problem(5, a.num_params, 0.15f, std::size_t(B) * in, std::size_t(B) * a.out()), in, B);
    tile_gemm::set_enabled(true);
    return r;
  };
  for (const auto& [precision, tol] : {std::pair{blas::MatmulPrecision::FP32, 1e-4},
                                       std::pair{blas::MatmulPrecision::TF32, 2e-2}}) {
    blas::set_matmul_precision(precision);
    for (const Case& c :
         {Case{376, 300, {256, 256}, 17, Activation::Tanh}, Case{64, 130, {128, 64}, 1, Activation::Elu},
          Case{13, 7, {64, 64}, 3, Activation::Relu}, Case{10, 50, {30, 20}, 2, Activation::Tanh}}) {
      SCOPED_TRACE(testing::Message() << (precision == blas::MatmulPrecision::TF32 ? "tf32 " : "fp32 ") << c.in
                                      << " inputs, batch " << c.B << ", " << activation_name(c.act));
      const MlpLayout a(c.in, c.hidden, c.out, c.act, 0);
      const EpilogueRun on = run(true, a, c.in, c.B), off = run(false, a, c.in, c.B);
      expect_close(on.y, off.y, "output", tol);
      expect_close(on.grads, off.grads, "gradient", tol);
      expect_close(on.dx, off.dx, "dX", tol);
    }
  }
}

// Where the tile kernels are built (tile_gemm::enabled), a layer whose result rows are a multiple of
// 4 runs them under tf32 and fp32 (its operands may have any width and address) and others are left
// to the caller, as is everything under bf16; elsewhere every call does nothing and says so.
TEST(MlpTileGemm, AppliesWhereTheEpilogueFits) {
  View1<float> W("W", 64 * 32), b("b", 64), X("X", 32 * 8), Z("Z", 64 * 8), Z2("Z2", 64 * 8);
  const bool built = tile_gemm::candidates() > 0;
  const TileSettings settings(8);
  for (auto p : {blas::MatmulPrecision::TF32, blas::MatmulPrecision::FP32}) {
    blas::set_matmul_precision(p);
    EXPECT_EQ(tile_gemm::forward(ExecSpace(), Activation::Tanh, 64, 32, 8, W.data(), b.data(), X.data(), Z.data()),
              built);
    EXPECT_EQ(
        tile_gemm::forward(ExecSpace(), Activation::Tanh, 64, 31, 8, W.data() + 1, b.data(), X.data(), Z.data()),
        built);
    EXPECT_FALSE(tile_gemm::forward(ExecSpace(), Activation::Tanh, 63, 32, 8, W.data(), b.data(), X.data(), Z.data()));
    EXPECT_FALSE(
        tile_gemm::forward(ExecSpace(), Activation::Tanh, 60, 32, 8, W.data(), b.data(), X.data(), Z.data() + 1));
    EXPECT_EQ(tile_gemm::input_grad(ExecSpace(), Activation::Elu, 17, 32, 8, W.data(), X.data(), Z.data(), Z2.data()),
              built);
    EXPECT_FALSE(tile_gemm::forward(ExecSpace(), Activation::Tanh, 64, 32, 7, W.data(), b.data(), X.data(), Z.data()))
        << "a batch below the smallest the kernels take";
  }
  tile_gemm::set_enabled(false);
  EXPECT_FALSE(tile_gemm::enabled());
  EXPECT_FALSE(tile_gemm::forward(ExecSpace(), Activation::Tanh, 64, 32, 8, W.data(), b.data(), X.data(), Z.data()));
  tile_gemm::set_enabled(true);
  blas::set_matmul_precision(blas::MatmulPrecision::BF16);
  EXPECT_FALSE(tile_gemm::forward(ExecSpace(), Activation::Tanh, 64, 32, 8, W.data(), b.data(), X.data(), Z.data()));
  EXPECT_FALSE(tile_gemm::input_grad(ExecSpace(), Activation::Tanh, 64, 32, 8, W.data(), Z.data(), X.data(), X.data()));
  ExecSpace().fence();
}

// Every tile shape a problem may time and keep gives the same bits (the choice is free to differ
// between runs, a resumed run included, without changing a result).
TEST(MlpTileGemm, EveryTileShapeGivesTheSameBits) {
  const MlpLayout a(37, {256, 128}, 5, Activation::Tanh, 0);
  const int B = 333;
  const Problem problem = random_problem(9, a.num_params, 0.15f, std::size_t(B) * 37, std::size_t(B) * 5);
  const TileSettings settings(1);
  for (auto p : {blas::MatmulPrecision::TF32, blas::MatmulPrecision::FP32}) {
    SCOPED_TRACE(p == blas::MatmulPrecision::TF32 ? "tf32" : "fp32");
    blas::set_matmul_precision(p);
    std::vector<EpilogueRun> runs;
    for (int c = 0; c < std::max(1, tile_gemm::candidates()); ++c) {
      tile_gemm::force_tiles(c);
      runs.push_back(single_pass(a, problem, 37, B));
    }
    tile_gemm::force_tiles(-1);
    for (std::size_t c = 1; c < runs.size(); ++c) {
      EXPECT_EQ(runs[c].y, runs[0].y) << "tile shape " << c;
      EXPECT_EQ(runs[c].grads, runs[0].grads) << "tile shape " << c;
      EXPECT_EQ(runs[c].dx, runs[0].dx) << "tile shape " << c;
    }
  }
}

}  // namespace
}  // namespace gmi::nn

// The fused kernels' fragment-native layouts (kernels/nn/tensor_core.hpp): every entry of a K x N
// operand and of an M x N accumulator matrix has one place, and bfrag_entry inverts bfrag_index.
TEST(TensorCoreLayout, FragmentIndicesAreBijections) {
  for (const auto& [K, N] : std::vector<std::pair<int, int>>{{8, 16}, {64, 64}, {64, 32}, {16, 48}}) {
    std::vector<int> seen(std::size_t(K) * N, 0);
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) {
        const int q = gmi::nn::tc::bfrag_index(K, k, n);
        ASSERT_GE(q, 0);
        ASSERT_LT(q, K * N);
        ++seen[std::size_t(q)];
        int k2 = -1, n2 = -1;
        gmi::nn::tc::bfrag_entry(K, q, k2, n2);
        EXPECT_EQ(k2, k);
        EXPECT_EQ(n2, n);
      }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), K * N);
    // lane (g, t)'s four floats of a k step: B(t, g), B(t + 4, g), B(t, 8 + g), B(t + 4, 8 + g)
    const int lane = 13, g = lane / 4, t = lane % 4;
    EXPECT_EQ(gmi::nn::tc::bfrag_index(K, t, g), lane * 4);
    EXPECT_EQ(gmi::nn::tc::bfrag_index(K, t + 4, g), lane * 4 + 1);
    EXPECT_EQ(gmi::nn::tc::bfrag_index(K, t, 8 + g), lane * 4 + 2);
    EXPECT_EQ(gmi::nn::tc::bfrag_index(K, t + 4, 8 + g), lane * 4 + 3);
  }
  const int M = 64, N = 32, MT = M / 16;
  std::vector<int> seen(std::size_t(M) * N, 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const int q = gmi::nn::tc::cfrag_index(MT, i, j);
      ASSERT_GE(q, 0);
      ASSERT_LT(q, M * N);
      ++seen[std::size_t(q)];
    }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), M * N);
  // mma's C layout: lane (g, t) holds (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of each
  // 8-column half, stored in that order, the second half after the first
  EXPECT_EQ(gmi::nn::tc::cfrag_index(MT, 2, 6), (2 * 4 + 3) * 8 + 0);
  EXPECT_EQ(gmi::nn::tc::cfrag_index(MT, 10, 7), (2 * 4 + 3) * 8 + 3);
  EXPECT_EQ(gmi::nn::tc::cfrag_index(MT, 2, 14), (2 * 4 + 3) * 8 + 4);
  EXPECT_EQ(gmi::nn::tc::cfrag_index(MT, 16 + 2, 16 + 6), (1 + MT) * 256 + (2 * 4 + 3) * 8);
}
