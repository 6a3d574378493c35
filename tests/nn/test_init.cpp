// Orthogonal initialisation (torch.nn.init.orthogonal_ semantics) and the actor-critic flat
// layout: orthonormal rows or columns scaled by the gain, determinism in (seed, stream), biases
// zero, log-std at its initial value, offsets contiguous, and parameter counts computed here
// from the widths alone.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/nn/actor_critic.hpp"
#include "kernels/nn/init.hpp"

namespace gmi::nn {
namespace {

/// Largest |(G - gain^2 I)_ij| with G = W W^T (rows <= cols) or W^T W (rows >= cols).
double orthogonality_error(const std::vector<double>& W, int rows, int cols, double gain) {
  auto w = [&](int i, int j) { return W[std::size_t(j) * rows + i]; };
  double worst = 0;
  if (rows <= cols) {
    for (int a = 0; a < rows; ++a)
      for (int b = 0; b < rows; ++b) {
        long double s = 0;
        for (int j = 0; j < cols; ++j) s += (long double)w(a, j) * w(b, j);
        worst = std::max(worst, double(std::fabs(s - (a == b ? gain * gain : 0.0))));
      }
  }
  if (rows >= cols) {
    for (int a = 0; a < cols; ++a)
      for (int b = 0; b < cols; ++b) {
        long double s = 0;
        for (int i = 0; i < rows; ++i) s += (long double)w(i, a) * w(i, b);
        worst = std::max(worst, double(std::fabs(s - (a == b ? gain * gain : 0.0))));
      }
  }
  return worst;
}

std::vector<double> ortho(int rows, int cols, double gain, std::uint64_t seed, std::uint64_t stream) {
  std::vector<double> W(std::size_t(rows) * cols, std::nan(""));
  orthogonal(W.data(), rows, cols, gain, seed, stream);
  return W;
}

TEST(Init, OrthogonalRowsOrColumns) {
  const int shapes[][2] = {{3, 7}, {7, 3}, {5, 5}, {64, 4}, {4, 64}, {1, 10}, {10, 1}, {64, 64},
                           {2, 1}, {1, 1}};
  for (const auto& s : shapes)
    for (double gain : {1.0, std::sqrt(2.0), 0.01}) {
      const int r = s[0], c = s[1];
      const auto W = ortho(r, c, gain, 42, 3);
      for (double x : W) ASSERT_TRUE(std::isfinite(x)) << r << "x" << c;
      // Relative to gain^2: the tolerance is on the orthonormal factor.
      EXPECT_LT(orthogonality_error(W, r, c, gain), 1e-10 * gain * gain)
          << r << "x" << c << " gain " << gain;
    }
}

TEST(Init, OrthogonalIsNotDegenerate) {
  // A Haar-random orthogonal 64×64 matrix has entries of typical size 1/8 and both signs; a
  // permutation or a sign-flipped identity would also pass the orthogonality test.
  const auto W = ortho(64, 64, 1.0, 7, 0);
  int pos = 0, big = 0;
  double ss = 0;
  for (double x : W) {
    pos += x > 0;
    big += std::fabs(x) > 0.4;
    ss += x * x;
  }
  EXPECT_NEAR(ss, 64.0, 1e-9);
  EXPECT_GT(pos, 1800);  // of 4096; expected 2048, sd 32
  EXPECT_LT(pos, 2300);
  EXPECT_LT(big, 10);  // |x| > 0.4 is > 3 sd for N(0, 1/64)
}

TEST(Init, OrthogonalIsDeterministicPerSeedAndStream) {
  const auto a = ortho(9, 5, 1.0, 123, 4);
  EXPECT_EQ(a, ortho(9, 5, 1.0, 123, 4));
  auto differs = [](const std::vector<double>& x, const std::vector<double>& y) {
    int n = 0;
    for (std::size_t i = 0; i < x.size(); ++i) n += x[i] != y[i];
    return n;
  };
  EXPECT_EQ(differs(a, ortho(9, 5, 1.0, 124, 4)), int(a.size())) << "seed must change the matrix";
  EXPECT_EQ(differs(a, ortho(9, 5, 1.0, 123, 5)), int(a.size())) << "stream must change it";
  // The gain only scales.
  const auto g = ortho(9, 5, 0.5, 123, 4);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(g[i], 0.5 * a[i]);
}

/// Parameter count of in:h1:...:out, from the widths alone.
std::size_t mlp_count(std::vector<int> widths) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i)
    n += std::size_t(widths[i]) * widths[i + 1] + widths[i + 1];
  return n;
}

void check_layout_and_init(const ActorCriticSpec& s, std::size_t expected_actor,
                           std::size_t expected_critic) {
  const ActorCriticLayout l(s);
  const bool cont = s.num_actions == 0;
  EXPECT_EQ(l.continuous(), cont);
  // Each layer's W starts 16-byte aligned: fewer than 4 padding entries per layer.
  const std::size_t na = l.actor.layers.size(), nc = l.critic.layers.size();
  EXPECT_GE(l.actor.num_params, expected_actor);
  EXPECT_LT(l.actor.num_params, expected_actor + 4 * na);
  EXPECT_GE(l.critic.num_params, expected_critic);
  EXPECT_LT(l.critic.num_params, expected_critic + 4 * nc);
  const std::size_t n_log_std = cont ? std::size_t(s.act_dim) : 0;
  EXPECT_EQ(l.num_params, l.actor.num_params + n_log_std + l.critic.num_params);
  EXPECT_EQ(l.actor_out(), cont ? s.act_dim : s.num_actions);
  EXPECT_EQ(l.critic.out(), 1);
  EXPECT_EQ(l.actor.in(), s.obs_dim);
  EXPECT_EQ(l.critic.in(), s.obs_dim);

  // [ actor | log_std | critic ], each MLP as W0 b0 W1 b1 ..., gaps only to align each W.
  std::size_t next = 0;
  auto walk = [&](const MlpLayout& m) {
    EXPECT_EQ(m.offset, next);
    for (const auto& ly : m.layers) {
      next = (next + 3) / 4 * 4;
      EXPECT_EQ(ly.w % 4, 0u);
      EXPECT_EQ(ly.w, next);
      next += std::size_t(ly.in) * ly.out;
      EXPECT_EQ(ly.b, next);
      next += ly.out;
    }
  };
  walk(l.actor);
  if (cont) {
    EXPECT_EQ(l.log_std, next);
    next += s.act_dim;
  }
  walk(l.critic);
  EXPECT_EQ(next, l.num_params);

  const auto p = init_actor_critic<double>(l, s, 2024);
  ASSERT_EQ(p.size(), l.num_params);
  // padding entries (not inside any W, b or log_std) stay zero
  std::vector<bool> used(l.num_params, false);
  for (const MlpLayout* m : {&l.actor, &l.critic})
    for (const auto& ly : m->layers)
      for (std::size_t i = ly.w; i < ly.b + ly.out; ++i) used[i] = true;
  if (cont)
    for (int k = 0; k < s.act_dim; ++k) used[l.log_std + k] = true;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!used[i]) {
      EXPECT_EQ(p[i], 0.0) << "padding entry " << i;
    }
  for (double x : p) ASSERT_TRUE(std::isfinite(x));
  auto check_mlp = [&](const MlpLayout& m, double out_gain) {
    for (std::size_t li = 0; li < m.layers.size(); ++li) {
      const auto& ly = m.layers[li];
      for (int k = 0; k < ly.out; ++k) EXPECT_EQ(p[ly.b + k], 0.0) << "bias must start at zero";
      const std::vector<double> W(p.begin() + ly.w, p.begin() + ly.w + std::size_t(ly.in) * ly.out);
      const double gain = li + 1 == m.layers.size() ? out_gain : std::sqrt(2.0);
      EXPECT_LT(orthogonality_error(W, ly.out, ly.in, gain), 1e-10 * gain * gain)
          << "layer " << li << " (" << ly.out << "x" << ly.in << ") gain " << gain;
    }
  };
  check_mlp(l.actor, s.actor_output_gain);
  check_mlp(l.critic, s.critic_output_gain);
  if (cont) {
    for (int k = 0; k < s.act_dim; ++k) EXPECT_EQ(p[l.log_std + k], s.log_std_init);
  }

  // Actor and critic first layers have the same shape but are drawn from different streams.
  const auto& a0 = l.actor.layers[0];
  const auto& c0 = l.critic.layers[0];
  if (a0.out == c0.out) {
    int same = 0;
    for (std::size_t k = 0; k < std::size_t(a0.in) * a0.out; ++k) same += p[a0.w + k] == p[c0.w + k];
    EXPECT_EQ(same, 0);
  }

  // Deterministic in the seed, float equals double rounded, another seed differs.
  EXPECT_EQ(p, init_actor_critic<double>(l, s, 2024));
  const auto pf = init_actor_critic<float>(l, s, 2024);
  for (std::size_t k = 0; k < p.size(); ++k) ASSERT_EQ(pf[k], float(p[k])) << k;
  const auto q = init_actor_critic<double>(l, s, 2025);
  std::size_t changed = 0;
  for (std::size_t k = 0; k < p.size(); ++k) changed += p[k] != q[k];
  std::size_t weights = 0;
  for (const auto* m : {&l.actor, &l.critic})
    for (const auto& ly : m->layers) weights += std::size_t(ly.in) * ly.out;
  EXPECT_EQ(changed, weights) << "every weight (and nothing else) depends on the seed";
}

TEST(Init, CategoricalActorCritic) {
  ActorCriticSpec s;
  s.obs_dim = 4;
  s.num_actions = 2;
  // CartPole: 4:64:64:2 = 4610 and 4:64:64:1 = 4545.
  EXPECT_EQ(mlp_count({4, 64, 64, 2}), 4610u);
  EXPECT_EQ(mlp_count({4, 64, 64, 1}), 4545u);
  check_layout_and_init(s, 4610, 4545);
}

TEST(Init, ContinuousActorCritic) {
  ActorCriticSpec s;
  s.obs_dim = 5;
  s.act_dim = 3;
  s.num_actions = 0;
  s.actor_hidden = {32, 16};
  s.critic_hidden = {24};
  s.activation = Activation::Elu;
  s.log_std_init = -0.5;
  s.actor_output_gain = 0.01;
  s.critic_output_gain = 1.0;
  // 5:32:16:3 = 192 + 528 + 51 = 771 ; 5:24:1 = 144 + 25 = 169.
  EXPECT_EQ(mlp_count({5, 32, 16, 3}), 771u);
  EXPECT_EQ(mlp_count({5, 24, 1}), 169u);
  check_layout_and_init(s, 771, 169);
}

TEST(Init, InitMlpRejectsSmallBuffer) {
  const MlpLayout l(3, {4}, 2, Activation::Tanh, 5);
  std::vector<double> flat(5 + l.num_params - 1);
  EXPECT_THROW(init_mlp(flat, l, 1.0, 1.0, 1, 0), gmi::Error);
}

}  // namespace
}  // namespace gmi::nn
