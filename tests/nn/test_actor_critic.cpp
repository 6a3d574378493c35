// Actor-critic passes (kernels/nn/actor_critic.hpp) with and without shared hidden layers: every
// weight's gradient of L = sum(Cp .* policy outputs) + sum(Cv .* values) against central finite
// differences of the forward passes (float: h = 1e-2 on O(1) weights, a tolerance far below the
// error of a missing term, such as the critic head's share of the trunk's gradient); the layout's
// offsets; the Gaussian head's log-std untouched by ac_backward.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/nn/actor_critic.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::nn {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

ActorCriticSpec spec(bool shared, bool continuous) {
  ActorCriticSpec s;
  s.obs_dim = 4;
  s.act_dim = continuous ? 2 : 1;
  s.num_actions = continuous ? 0 : 3;
  s.actor_hidden = {6, 5};
  s.critic_hidden = {6, 5};
  s.shared_hidden = shared;
  s.activation = Activation::Tanh;
  s.actor_output_gain = 1.0;  // O(1) outputs: the finite differences see every weight
  return s;
}

struct Case {
  ActorCriticLayout L;
  int B = 7;
  std::vector<float> P, X, Cp, Cv;
  explicit Case(const ActorCriticSpec& s) : L(s) {
    std::mt19937_64 g(5);
    std::uniform_real_distribution<float> u(-1, 1);
    P = init_actor_critic<float>(L, s, 3);
    for (float& p : P) p += 0.2f * u(g);  // biases away from 0, weights off their initial values
    for (int k = 0; k < L.obs_dim * B; ++k) X.push_back(u(g));
    for (int k = 0; k < L.actor_out() * B; ++k) Cp.push_back(u(g));
    for (int k = 0; k < B; ++k) Cv.push_back(u(g));
  }
  double loss(const std::vector<float>& p) const {
    ExecSpace space;
    ActorCriticWorkspace ws(L, B);
    auto dp = to_device(p), dx = to_device(X);
    ac_forward(space, L, dp.data(), dx.data(), B, ws, true, true);
    space.fence();
    const auto y = gmi::test::to_host(ac_policy_out(L, ws), std::size_t(L.actor_out()) * B);
    const auto v = gmi::test::to_host(ac_values(L, ws), std::size_t(B));
    double s = 0;
    for (std::size_t k = 0; k < y.size(); ++k) s += double(Cp[k]) * y[k];
    for (int k = 0; k < B; ++k) s += double(Cv[k]) * v[k];
    return s;
  }
  std::vector<float> grads() const {
    ExecSpace space;
    ActorCriticWorkspace ws(L, B + 2, true, true, true);
    auto dp = to_device(P), dx = to_device(X), dcp = to_device(Cp), dcv = to_device(Cv);
    auto dg = to_device(std::vector<float>(L.num_params, 777.0f));
    ac_forward(space, L, dp.data(), dx.data(), B, ws, true, true);
    ac_backward(space, L, dp.data(), dx.data(), B, ws, dcp.data(), dcv.data(), dg.data());
    space.fence();
    return to_host(dg);
  }
};

void check(bool shared, bool continuous) {
  SCOPED_TRACE(::testing::Message() << (shared ? "shared" : "separate") << (continuous ? ", Gaussian" : ", categorical"));
  const ActorCriticSpec s = spec(shared, continuous);
  const Case c(s);
  const std::vector<float> G = c.grads();
  std::vector<bool> weight(c.L.num_params, false);
  for (const MlpLayout* m : {&c.L.trunk, &c.L.actor, &c.L.critic})
    for (const Layer& ly : m->layers)
      for (std::size_t k = ly.w; k < ly.b + ly.out; ++k) weight[k] = true;
  const float h = 1e-2f;
  std::vector<float> p = c.P;
  for (std::size_t k = 0; k < c.L.num_params; ++k) {
    if (!weight[k]) {
      EXPECT_EQ(G[k], 777.0f) << "written outside the networks' weights at " << k;
      continue;
    }
    p[k] = c.P[k] + h;
    const double lp = c.loss(p);
    p[k] = c.P[k] - h;
    const double lm = c.loss(p);
    p[k] = c.P[k];
    const double fd = (lp - lm) / (2.0 * h);
    EXPECT_NEAR(G[k], fd, 2e-3 + 2e-3 * std::fabs(fd)) << "param " << k;
  }
}

TEST(ActorCritic, GradientsMatchFiniteDifferences) {
  for (bool shared : {false, true})
    for (bool continuous : {false, true}) check(shared, continuous);
}

TEST(ActorCritic, SharedLayoutPutsTheTrunkFirstAndAHeadEach) {
  const ActorCriticLayout L(spec(true, true));
  ASSERT_TRUE(L.shared());
  EXPECT_TRUE(L.trunk.activated_out);
  ASSERT_EQ(L.trunk.layers.size(), 2u);
  EXPECT_EQ(L.trunk.in(), 4);
  EXPECT_EQ(L.trunk.out(), 5);
  ASSERT_EQ(L.actor.layers.size(), 1u);
  ASSERT_EQ(L.critic.layers.size(), 1u);
  EXPECT_EQ(L.actor.in(), 5);
  EXPECT_EQ(L.actor.out(), 2);
  EXPECT_EQ(L.critic.out(), 1);
  EXPECT_EQ(L.actor.offset, L.trunk.num_params);
  EXPECT_EQ(L.log_std, L.actor.offset + L.actor.num_params);
  EXPECT_EQ(L.critic.offset, L.log_std + 2);
  EXPECT_EQ(L.num_params, L.critic.offset + L.critic.num_params);
  const ActorCriticLayout separate(spec(false, true));
  EXPECT_FALSE(separate.shared());
  EXPECT_GT(separate.num_params, L.num_params);
}

}  // namespace
}  // namespace gmi::nn
