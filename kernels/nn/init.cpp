#include "kernels/nn/init.hpp"

#include <cmath>

#include "kernels/core/error.hpp"
#include "kernels/core/random.hpp"

extern "C" {
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
}

namespace gmi::nn {

void orthogonal(double* W, int rows, int cols, double gain, std::uint64_t seed, std::uint64_t stream) {
  // Work on the tall orientation m >= n, as torch does (transpose when rows < cols).
  const bool transpose = rows < cols;
  const int m = transpose ? cols : rows, n = transpose ? rows : cols;
  std::vector<double> a(std::size_t(m) * n);
  for (std::size_t i = 0; i < a.size(); i += 2) {
    const auto bits = rng::philox(seed, i / 2, rng::tag(rng::kInit, stream));
    // Box-Muller in double from 2 x 32 bits per uniform.
    const double u1 = (double(bits.v[0]) * 4294967296.0 + bits.v[1] + 0.5) / 18446744073709551616.0;
    const double u2 = (double(bits.v[2]) * 4294967296.0 + bits.v[3] + 0.5) / 18446744073709551616.0;
    const double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
    a[i] = r * std::cos(t);
    if (i + 1 < a.size()) a[i + 1] = r * std::sin(t);
  }
  std::vector<double> tau(n);
  int info = 0, lwork = -1;
  double wq = 0;
  dgeqrf_(&m, &n, a.data(), &m, tau.data(), &wq, &lwork, &info);
  lwork = int(wq);
  std::vector<double> work(std::max(1, lwork));
  dgeqrf_(&m, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  GMI_REQUIRE(info == 0, "orthogonal: LAPACK dgeqrf failed");
  std::vector<double> sign(n);
  for (int j = 0; j < n; ++j) sign[j] = a[std::size_t(j) * m + j] < 0 ? -1.0 : 1.0;
  lwork = -1;
  dorgqr_(&m, &n, &n, a.data(), &m, tau.data(), &wq, &lwork, &info);
  lwork = int(wq);
  work.assign(std::max(1, lwork), 0.0);
  dorgqr_(&m, &n, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  GMI_REQUIRE(info == 0, "orthogonal: LAPACK dorgqr failed");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const double q = a[std::size_t(j) * m + i] * sign[j] * gain;  // Q(i, j)
      if (transpose)
        W[std::size_t(i) * rows + j] = q;  // W(j, i) = Q(i, j), W is rows × cols = n × m
      else
        W[std::size_t(j) * rows + i] = q;
    }
}

template <class Scalar>
void init_mlp(std::vector<Scalar>& flat, const MlpLayout& layout, double hidden_gain,
              double output_gain, std::uint64_t seed, std::uint64_t stream) {
  GMI_REQUIRE(flat.size() >= layout.offset + layout.num_params, "init_mlp: buffer too small");
  for (std::size_t l = 0; l < layout.layers.size(); ++l) {
    const Layer& ly = layout.layers[l];
    const double gain = l + 1 == layout.layers.size() ? output_gain : hidden_gain;
    std::vector<double> w(std::size_t(ly.out) * ly.in);
    orthogonal(w.data(), ly.out, ly.in, gain, seed, (stream << 16) | l);
    for (std::size_t k = 0; k < w.size(); ++k) flat[ly.w + k] = Scalar(w[k]);
    for (int k = 0; k < ly.out; ++k) flat[ly.b + k] = Scalar(0);
  }
}

template <class Scalar>
void init_mlp_uniform(std::vector<Scalar>& flat, const MlpLayout& layout, std::uint64_t seed, std::uint64_t stream) {
  GMI_REQUIRE(flat.size() >= layout.offset + layout.num_params, "init_mlp_uniform: buffer too small");
  for (std::size_t l = 0; l < layout.layers.size(); ++l) {
    const Layer& ly = layout.layers[l];
    const double bound = 1.0 / std::sqrt(double(ly.in));
    const std::size_t n = std::size_t(ly.out) * ly.in + ly.out;  // W, then b
    for (std::size_t k = 0; k < n; k += 4) {
      const auto bits = rng::philox(seed, k / 4, rng::tag(rng::kInit, (std::uint64_t(1) << 40) | (stream << 16) | l));
      for (std::size_t j = 0; j < 4 && k + j < n; ++j) {
        const double u = (double(bits.v[j]) + 0.5) / 4294967296.0;  // (0, 1)
        const Scalar v = Scalar((2.0 * u - 1.0) * bound);
        const std::size_t i = k + j;
        if (i < std::size_t(ly.out) * ly.in) flat[ly.w + i] = v;
        else flat[ly.b + (i - std::size_t(ly.out) * ly.in)] = v;
      }
    }
  }
}

template void init_mlp_uniform<float>(std::vector<float>&, const MlpLayout&, std::uint64_t, std::uint64_t);

template void init_mlp<float>(std::vector<float>&, const MlpLayout&, double, double, std::uint64_t,
                              std::uint64_t);
template void init_mlp<double>(std::vector<double>&, const MlpLayout&, double, double, std::uint64_t,
                               std::uint64_t);

}  // namespace gmi::nn
