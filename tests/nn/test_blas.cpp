// gmi::blas (CBLAS on hosts, cuBLAS on GPUs) against naive host loops in long double: every
// transpose combination of gemm, non-square shapes, leading dimensions larger than the rows
// (padding that must be neither read nor written), beta != 0 and beta == 0 over garbage, gemv in
// both orientations, and nrm2 including magnitudes whose squares over/underflow.
//
// Tolerances follow the standard forward error bound of a dot product of length k (Higham,
// "Accuracy and Stability of Numerical Algorithms", eq. 3.5):
//   |fl(c) - c| <= gamma_{k+2} * (|alpha| * sum_p |a_ip||b_pj| + |beta| |c_ij|),  gamma_n ~ n u,
// with u = eps/2 the unit roundoff of the scalar type.  The tests allow 2 gamma_{k+2} (= (k+2) eps),
// which holds for any summation order (blocked, split-k, FMA), so it does not depend on the BLAS
// implementation, yet is far below the error of a wrong index (O(1) relative).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/nn/blas.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::blas {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

/// Random values with |x| in [0.25, 1] and a random sign: never zero, so no product vanishes.
template <class T>
std::vector<T> random_vec(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> mag(0.25, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = T((g() & 1 ? 1.0 : -1.0) * mag(g));
  return v;
}

template <class T>
T nan() {
  return std::numeric_limits<T>::quiet_NaN();
}

struct GemmCase {
  Op ta, tb;
  int m, n, k;
  int pad_a, pad_b, pad_c;  ///< lda - (rows of the stored A), etc.
  double alpha, beta;
  bool garbage_c;  ///< fill C with NaN (only with beta == 0: BLAS must not read C then)
};

template <class T>
void check_gemm(const GemmCase& c, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "ta=" << (c.ta == Op::N ? 'N' : 'T')
                                    << " tb=" << (c.tb == Op::N ? 'N' : 'T') << " m=" << c.m
                                    << " n=" << c.n << " k=" << c.k << " pads=" << c.pad_a << ","
                                    << c.pad_b << "," << c.pad_c << " alpha=" << c.alpha
                                    << " beta=" << c.beta);
  // Stored shapes: op(A) is m×k, so A is m×k (N) or k×m (T); op(B) is k×n, so B is k×n or n×k.
  const int a_rows = c.ta == Op::N ? c.m : c.k, a_cols = c.ta == Op::N ? c.k : c.m;
  const int b_rows = c.tb == Op::N ? c.k : c.n, b_cols = c.tb == Op::N ? c.n : c.k;
  const int lda = a_rows + c.pad_a, ldb = b_rows + c.pad_b, ldc = c.m + c.pad_c;
  auto A = random_vec<T>(std::size_t(lda) * a_cols, seed);
  auto B = random_vec<T>(std::size_t(ldb) * b_cols, seed + 1);
  auto C = random_vec<T>(std::size_t(ldc) * c.n, seed + 2);
  // Padding of A and B is NaN: reading it would poison the result.
  for (int j = 0; j < a_cols; ++j)
    for (int i = a_rows; i < lda; ++i) A[std::size_t(j) * lda + i] = nan<T>();
  for (int j = 0; j < b_cols; ++j)
    for (int i = b_rows; i < ldb; ++i) B[std::size_t(j) * ldb + i] = nan<T>();
  if (c.garbage_c)
    for (int j = 0; j < c.n; ++j)
      for (int i = 0; i < c.m; ++i) C[std::size_t(j) * ldc + i] = nan<T>();
  // Padding of C keeps its random values and must come back bit-identical.

  auto opA = [&](int i, int p) -> long double {
    return c.ta == Op::N ? A[std::size_t(p) * lda + i] : A[std::size_t(i) * lda + p];
  };
  auto opB = [&](int p, int j) -> long double {
    return c.tb == Op::N ? B[std::size_t(j) * ldb + p] : B[std::size_t(p) * ldb + j];
  };

  auto dA = to_device(A), dB = to_device(B), dC = to_device(C);
  ExecSpace space;
  gemm<T>(space, c.ta, c.tb, c.m, c.n, c.k, T(c.alpha), dA.data(), lda, dB.data(), ldb, T(c.beta),
          dC.data(), ldc);
  space.fence();
  const auto out = to_host(dC);

  const long double eps = std::numeric_limits<T>::epsilon();
  int bad = 0;
  for (int j = 0; j < c.n; ++j) {
    for (int i = 0; i < c.m; ++i) {
      long double dot = 0, absdot = 0;
      for (int p = 0; p < c.k; ++p) {
        dot += opA(i, p) * opB(p, j);
        absdot += std::fabs(opA(i, p) * opB(p, j));
      }
      const long double c0 = c.garbage_c ? 0.0L : (long double)C[std::size_t(j) * ldc + i];
      const long double ref = (long double)T(c.alpha) * dot + (long double)T(c.beta) * c0;
      const long double bound =
          (c.k + 2) * eps * (std::fabs((long double)T(c.alpha)) * absdot +
                             std::fabs((long double)T(c.beta) * c0));
      const T got = out[std::size_t(j) * ldc + i];
      if (!(std::fabs((long double)got - ref) <= bound) && bad++ < 5)
        ADD_FAILURE() << "C(" << i << "," << j << ") = " << got << ", reference " << (double)ref
                      << ", bound " << (double)bound;
    }
    for (int i = c.m; i < ldc; ++i) {
      const std::size_t q = std::size_t(j) * ldc + i;
      if (out[q] != C[q] && bad++ < 5)
        ADD_FAILURE() << "padding C(" << i << "," << j << ") was written: " << out[q];
    }
  }
  EXPECT_EQ(bad, 0);
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> cs;
  for (Op ta : {Op::N, Op::T})
    for (Op tb : {Op::N, Op::T}) {
      cs.push_back({ta, tb, 5, 7, 13, 0, 0, 0, 1.0, 0.0, false});      // plain, non-square
      cs.push_back({ta, tb, 5, 7, 13, 3, 2, 4, 0.7, -1.3, false});     // padded, beta != 0
      cs.push_back({ta, tb, 33, 17, 65, 1, 5, 2, -1.1, 0.5, false});   // past small-size paths
      cs.push_back({ta, tb, 9, 1, 6, 2, 1, 3, 1.0, 1.0, false});       // n = 1
      cs.push_back({ta, tb, 1, 6, 11, 4, 0, 2, 2.0, 0.0, true});       // m = 1, beta 0 over NaN
      cs.push_back({ta, tb, 12, 10, 1, 2, 2, 1, 1.0, 0.25, false});    // k = 1 (outer product)
      cs.push_back({ta, tb, 64, 40, 70, 0, 3, 0, 1.0, 0.0, true});     // beta 0 over NaN
    }
  return cs;
}

TEST(Blas, GemmFloatMatchesNaive) {
  std::uint64_t seed = 100;
  for (const auto& c : gemm_cases()) check_gemm<float>(c, seed += 10);
}

// device.matmul bf16: the operands are rounded to bfloat16 (8 significant bits), the products
// accumulated in fp32.  1 + 2^-10 is exact in fp32 and TF32 but
// rounds to 1 in bfloat16, so each element of a k = 256 product of it with ones is 256.25 in fp32
// and exactly 256 with BF16 operands.  Host builds compute in fp32 whatever the setting.
TEST(Blas, Bf16PrecisionRoundsTheOperandsToBfloat16) {
  const int m = 256, n = 256, k = 256;
  const float x = 1.0f + 0x1p-10f;
  auto dA = to_device(std::vector<float>(std::size_t(m) * k, x)), dB = to_device(std::vector<float>(std::size_t(k) * n, 1.0f));
  auto dC = to_device(std::vector<float>(std::size_t(m) * n, 0.0f));
  ExecSpace space;
  const float fp32 = 256.25f;
#if defined(KOKKOS_ENABLE_CUDA)
  const float expected = 256.0f;
#else
  const float expected = fp32;
#endif
  auto count = [&](float v) {
    const auto h = to_host(dC);
    return std::count(h.begin(), h.end(), v);
  };
  set_matmul_precision(parse_matmul_precision("bf16"));
  gemm<float>(space, Op::N, Op::N, m, n, k, 1.0f, dA.data(), m, dB.data(), k, 0.0f, dC.data(), m);
  space.fence();
  EXPECT_EQ(count(expected), m * n);
  gemm_strided_batched<float>(space, Op::N, Op::N, m, n, k, 1.0f, dA.data(), m, 0, dB.data(), k, 0, 0.0f, dC.data(), m,
                              0, 1);
  space.fence();
  EXPECT_EQ(count(expected), m * n);
  set_matmul_precision(MatmulPrecision::FP32);
  gemm<float>(space, Op::N, Op::N, m, n, k, 1.0f, dA.data(), m, dB.data(), k, 0.0f, dC.data(), m);
  space.fence();
  EXPECT_EQ(count(fp32), m * n);
  EXPECT_THROW(parse_matmul_precision("fp16"), InputError);
}

TEST(Blas, GemmDoubleMatchesNaive) {
  std::uint64_t seed = 200;
  for (const auto& c : gemm_cases()) check_gemm<double>(c, seed += 10);
}

template <class T>
void check_gemv(Op ta, int m, int n, int pad, double alpha, double beta, bool garbage_y,
                std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "gemv ta=" << (ta == Op::N ? 'N' : 'T') << " m=" << m
                                    << " n=" << n << " pad=" << pad << " beta=" << beta);
  const int lda = m + pad;
  const int xn = ta == Op::N ? n : m, yn = ta == Op::N ? m : n;
  auto A = random_vec<T>(std::size_t(lda) * n, seed);
  for (int j = 0; j < n; ++j)
    for (int i = m; i < lda; ++i) A[std::size_t(j) * lda + i] = nan<T>();
  const auto x = random_vec<T>(xn, seed + 1);
  auto y = random_vec<T>(yn, seed + 2);
  if (garbage_y)
    for (auto& v : y) v = nan<T>();
  auto dA = to_device(A), dx = to_device(x), dy = to_device(y);
  ExecSpace space;
  gemv<T>(space, ta, m, n, T(alpha), dA.data(), lda, dx.data(), T(beta), dy.data());
  space.fence();
  const auto out = to_host(dy);
  const int k = ta == Op::N ? n : m;
  const long double eps = std::numeric_limits<T>::epsilon();
  for (int r = 0; r < yn; ++r) {
    long double dot = 0, absdot = 0;
    for (int p = 0; p < k; ++p) {
      const long double a = ta == Op::N ? A[std::size_t(p) * lda + r] : A[std::size_t(r) * lda + p];
      dot += a * x[p];
      absdot += std::fabs(a * x[p]);
    }
    const long double y0 = garbage_y ? 0.0L : (long double)y[r];
    const long double ref = (long double)T(alpha) * dot + (long double)T(beta) * y0;
    const long double bound = (k + 2) * eps *
                              (std::fabs((long double)T(alpha)) * absdot +
                               std::fabs((long double)T(beta) * y0));
    EXPECT_LE(std::fabs((long double)out[r] - ref), bound)
        << "y(" << r << ") = " << out[r] << ", reference " << (double)ref;
  }
}

TEST(Blas, GemvMatchesNaive) {
  std::uint64_t s = 300;
  for (Op ta : {Op::N, Op::T}) {
    check_gemv<float>(ta, 7, 5, 0, 1.0, 0.0, false, s += 10);
    check_gemv<float>(ta, 7, 5, 3, -0.6, 1.7, false, s += 10);
    check_gemv<float>(ta, 130, 67, 2, 1.0, 0.0, true, s += 10);  // beta 0 must ignore y
    check_gemv<float>(ta, 1, 9, 1, 1.0, 0.5, false, s += 10);
    check_gemv<double>(ta, 7, 5, 0, 1.0, 0.0, false, s += 10);
    check_gemv<double>(ta, 7, 5, 3, -0.6, 1.7, false, s += 10);
    check_gemv<double>(ta, 130, 67, 2, 1.0, 0.0, true, s += 10);
    check_gemv<double>(ta, 9, 1, 1, 1.0, 0.5, false, s += 10);
  }
}

/// nrm2 into device memory.  Bound: the sum of n squares has relative error <= gamma_n and the
/// square root halves it, so |err| <= (n + 2) eps / 2 * ||x||; the test allows (n + 2) eps.
template <class T>
void check_nrm2(int n, double scale, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "nrm2 n=" << n << " scale=" << scale);
  auto x = random_vec<T>(n, seed);
  for (auto& v : x) v = T(v * scale);
  long double ss = 0;
  for (const auto& v : x) ss += (long double)v * v;
  const long double ref = std::sqrt(ss);
  auto dx = to_device(x);
  View1<T> r("nrm2", 1);
  ExecSpace space;
  nrm2<T>(space, n, dx.data(), r.data());
  space.fence();
  const T got = to_host(r)[0];
  ASSERT_TRUE(std::isfinite(double(got)));
  EXPECT_LE(std::fabs((long double)got - ref), (n + 2) * std::numeric_limits<T>::epsilon() * ref)
      << "nrm2 = " << got << ", reference " << (double)ref;
}

TEST(Blas, Nrm2MatchesNaive) {
  for (int n : {1, 2, 17, 1000, 100003}) {
    check_nrm2<float>(n, 1.0, 400 + n);
    check_nrm2<double>(n, 1.0, 500 + n);
  }
}

TEST(Blas, Nrm2AvoidsOverflowAndUnderflow) {
  // Squares of 1e25 overflow float (max 3.4e38) and squares of 1e-25 underflow it; BLAS nrm2
  // scales to avoid both (reference BLAS, OpenBLAS, cuBLAS).
  check_nrm2<float>(1000, 1e25, 601);
  check_nrm2<float>(1000, 1e-25, 602);
  check_nrm2<double>(1000, 1e160, 603);
  check_nrm2<double>(1000, 1e-170, 604);
}

}  // namespace
}  // namespace gmi::blas
