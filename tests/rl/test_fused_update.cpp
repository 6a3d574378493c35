// The fused PPO-update kernels against the layered path (gather, mlp_forward, mlp_backward),
// which test_mlp checks against finite differences: same minibatch samples, outputs, hidden
// activations and gradients up to float rounding (summation orders differ).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/nn/actor_critic.hpp"
#include "kernels/rl/fused_update.hpp"
#include "kernels/rl/normalizer.hpp"
#include "tests/support/test_util.hpp"

namespace {

using namespace gmi;

std::vector<float> randv(std::size_t n, std::mt19937& g, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float rel, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0;
  for (float x : b) scale = std::max(scale, double(std::fabs(x)));
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], rel * (scale + 1e-3)) << what << " [" << i << "]";
}

struct Case {
  int obs_dim, act_dim, num_actions;
  std::vector<int> actor_hidden, critic_hidden;
  nn::Activation act;
  int TN, B;
  bool normalize;
};

void check(const Case& c) {
  nn::ActorCriticSpec s;
  s.obs_dim = c.obs_dim;
  s.act_dim = c.act_dim;
  s.num_actions = c.num_actions;
  s.actor_hidden = c.actor_hidden;
  s.critic_hidden = c.critic_hidden;
  s.activation = c.act;
  s.actor_output_gain = 1.0;
  const nn::ActorCriticLayout L(s);
  ASSERT_TRUE(rl::fused_update_supported(L));
  std::mt19937 g(3);
  const auto params = test::to_device(nn::init_actor_critic<float>(L, s, 5));
  const auto obs = test::to_device(randv(std::size_t(c.TN) * c.obs_dim, g, -3, 3));
  const auto actions = test::to_device(randv(std::size_t(c.TN) * c.act_dim, g, 0, 1.99f));
  const auto logp = test::to_device(randv(c.TN, g)), adv = test::to_device(randv(c.TN, g)),
             ret = test::to_device(randv(c.TN, g)), val = test::to_device(randv(c.TN, g));
  rl::RunningMeanStd rms(c.obs_dim);
  rms.update(ExecSpace(), obs.data(), c.TN);
  const rl::Permutation perm(std::uint32_t(c.TN), 9, 4);
  const std::uint32_t base = std::uint32_t(c.TN - c.B) / 2;
  const int aout = L.actor_out(), B = c.B;

  // ---- fused ----
  View1<float> x("x", std::size_t(B) * c.obs_dim), ao("ao", std::size_t(B) * aout), vo("vo", B),
      ma("ma", std::size_t(B) * c.act_dim), ml("ml", B), madv("madv", B), mr("mr", B), mv("mv", B);
  std::vector<View1<float>> ah, ch;
  for (std::size_t l = 0; l + 1 < L.actor.layers.size(); ++l)
    ah.emplace_back("ah", std::size_t(B) * L.actor.layers[l].out);
  for (std::size_t l = 0; l + 1 < L.critic.layers.size(); ++l)
    ch.emplace_back("ch", std::size_t(B) * L.critic.layers[l].out);
  rl::FusedForwardArgs f;
  f.B = B;
  f.obs_dim = c.obs_dim;
  f.act_dim = c.act_dim;
  f.perm = perm;
  f.base = base;
  f.params = params.data();
  f.obs = obs.data();
  f.obs_stats = c.normalize ? rms.state().data() : nullptr;
  f.obs_clip = 2.0f;
  f.actions = actions.data();
  f.logp = logp.data();
  f.adv = adv.data();
  f.returns = ret.data();
  f.values = val.data();
  f.x = x.data();
  for (std::size_t l = 0; l < ah.size(); ++l) f.actor_hidden[l] = ah[l].data();
  for (std::size_t l = 0; l < ch.size(); ++l) f.critic_hidden[l] = ch[l].data();
  f.actor_out = ao.data();
  f.value_out = vo.data();
  f.mb_actions = ma.data();
  f.mb_logp = ml.data();
  f.mb_adv = madv.data();
  f.mb_returns = mr.data();
  f.mb_values = mv.data();
  rl::fused_forward_train(ExecSpace(), L, f);
  const auto dya = randv(std::size_t(B) * aout, g), dyv = randv(B, g);
  const auto dY_a = test::to_device(dya), dY_v = test::to_device(dyv);
  View1<float> grads_f("gf", L.num_params);
  rl::FusedBackwardArgs ba;
  ba.B = B;
  ba.params = params.data();
  ba.x = x.data();
  ba.grads = grads_f.data();
  for (std::size_t l = 0; l < ah.size(); ++l) ba.hidden[l] = ah[l].data();
  ba.dY = dY_a.data();
  rl::fused_backward(ExecSpace(), L.actor, ba);
  for (std::size_t l = 0; l < ch.size(); ++l) ba.hidden[l] = ch[l].data();
  ba.dY = dY_v.data();
  rl::fused_backward(ExecSpace(), L.critic, ba);

  // ---- reference: host gather, layered forward and backward ----
  const auto obs_h = test::to_host(obs);
  const auto st = test::to_host(rms.state());
  std::vector<float> xr(std::size_t(B) * c.obs_dim);  // sample-major for mlp_forward
  for (int i = 0; i < B; ++i) {
    const std::uint32_t j = perm(base + i);
    for (int k = 0; k < c.obs_dim; ++k) {
      float v = obs_h[std::size_t(j) * c.obs_dim + k];
      if (c.normalize)
        v = std::min(2.0f, std::max(-2.0f, float((v - st[k]) / std::sqrt(st[c.obs_dim + k] + 1e-8))));
      xr[std::size_t(i) * c.obs_dim + k] = v;
    }
  }
  const auto xr_d = test::to_device(xr);
  nn::MlpWorkspace<float> wa(L.actor, B), wc(L.critic, B);
  nn::mlp_forward(ExecSpace(), L.actor, params.data(), xr_d.data(), B, wa);
  nn::mlp_forward(ExecSpace(), L.critic, params.data(), xr_d.data(), B, wc);
  ExecSpace().fence();
  expect_close(test::to_host(ao), test::to_host(wa.output(L.actor), std::size_t(B) * aout), 1e-5f, "actor out");
  expect_close(test::to_host(vo), test::to_host(wc.output(L.critic), B), 1e-5f, "value");
  // x is stored feature-major; hidden activations too
  const auto xf = test::to_host(x);
  for (int i = 0; i < B; ++i)
    for (int k = 0; k < c.obs_dim; ++k)
      ASSERT_FLOAT_EQ(xf[std::size_t(k) * B + i], xr[std::size_t(i) * c.obs_dim + k]);
  const auto acts = test::to_host(wa.acts);
  for (std::size_t l = 0; l < ah.size(); ++l) {
    const int w = L.actor.layers[l].out;
    const auto h = test::to_host(ah[l]);
    for (int i = 0; i < B; ++i)
      for (int o = 0; o < w; ++o)
        ASSERT_NEAR(h[std::size_t(o) * B + i], acts[wa.act_offset[l] + std::size_t(i) * w + o], 1e-5f);
  }
  // stored per-sample data
  const auto ml_h = test::to_host(ml), logp_h = test::to_host(logp);
  for (int i = 0; i < B; ++i) ASSERT_EQ(ml_h[i], logp_h[perm(base + i)]);

  View1<float> grads_r("gr", L.num_params);
  auto dya_copy = test::to_device(dya), dyv_copy = test::to_device(dyv);
  nn::mlp_backward(ExecSpace(), L.actor, params.data(), xr_d.data(), B, wa, dya_copy.data(), grads_r.data());
  nn::mlp_backward(ExecSpace(), L.critic, params.data(), xr_d.data(), B, wc, dyv_copy.data(), grads_r.data());
  ExecSpace().fence();
  auto gf = test::to_host(grads_f), gr = test::to_host(grads_r);
  if (L.continuous())  // the log-std entries are not the networks' (set elsewhere)
    for (int k = 0; k < c.act_dim; ++k) gf[L.log_std + k] = gr[L.log_std + k] = 0;
  expect_close(gf, gr, 1e-4f, "gradients");
}

}  // namespace

TEST(FusedUpdate, CategoricalTanhMatchesLayered) {
  check({4, 1, 2, {64, 64}, {64, 64}, nn::Activation::Tanh, 1000, 250, false});
}

TEST(FusedUpdate, GaussianReluNormalisedRaggedTiles) {
  check({3, 2, 0, {32, 16, 24}, {40}, nn::Activation::Relu, 777, 333, true});
}

TEST(FusedUpdate, EluSmallBatch) {
  check({6, 1, 3, {8}, {8, 8}, nn::Activation::Elu, 50, 7, true});
}
