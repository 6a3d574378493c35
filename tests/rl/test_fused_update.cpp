// The fused PPO update (gather + forward + loss + backward per tile, two kernels and a reduction)
// against the layered path: host gather, mlp_forward, moments, ppo_loss, mlp_backward and the
// log-std GEMV, each checked elsewhere against finite differences or an independent host loss.
// Same gradients and loss sums up to float summation order; bitwise equal on a repeat.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/nn/actor_critic.hpp"
#include "kernels/nn/blas.hpp"
#include "kernels/nn/mlp.hpp"
#include "kernels/rl/fused_update.hpp"
#include "kernels/rl/normalizer.hpp"
#include "kernels/rl/ppo_loss.hpp"
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
  ASSERT_GT(scale, 0.0) << what << ": the reference is all zeros";
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], rel * scale) << what << " [" << i << "]";
}

struct Case {
  int obs_dim, act_dim, num_actions;
  std::vector<int> actor_hidden, critic_hidden;
  nn::Activation act;
  int TN, B;
  bool normalize, norm_adv, clip_vloss;
  bool tf32 = false;  ///< one TF32 pass on tensor cores (GPU builds): looser tolerances
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
  s.log_std_init = -0.3;
  const nn::ActorCriticLayout L(s);
  ASSERT_TRUE(rl::FusedUpdate::supported(L));
  std::mt19937 g(3);
  const auto params = test::to_device(nn::init_actor_critic<float>(L, s, 5));
  const auto obs = test::to_device(randv(std::size_t(c.TN) * c.obs_dim, g, -3, 3));
  const float amax = c.num_actions > 0 ? c.num_actions - 0.01f : 1.0f;
  auto act_h = randv(std::size_t(c.TN) * c.act_dim, g, c.num_actions > 0 ? 0.0f : -1.0f, amax);
  if (c.num_actions > 0)
    for (auto& x : act_h) x = std::floor(x);
  const auto actions = test::to_device(act_h);
  // old log-probs near the current ones so that some ratios fall inside the clip range
  const auto logp = test::to_device(randv(c.TN, g, -1.5f, -0.3f)), adv = test::to_device(randv(c.TN, g)),
             ret = test::to_device(randv(c.TN, g)), val = test::to_device(randv(c.TN, g));
  rl::RunningMeanStd rms(c.obs_dim);
  rms.update(ExecSpace(), obs.data(), c.TN);
  const rl::Permutation perm(std::uint32_t(c.TN), 9, 4);
  const std::uint32_t base = std::uint32_t(c.TN - c.B) / 2;
  const int aout = L.actor_out(), B = c.B;
  const float clip_coef = 0.2f, ent_coef = 0.01f, vf_coef = 0.5f;

  // ---- fused ----
  View1<rl::Moments> moments_f("mf", 1);
  View1<rl::LossStats> stats_f("sf", 1);
  rl::FusedUpdateArgs f;
  f.B = B;
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
  f.adv_moments = moments_f.data();
  f.norm_adv = c.norm_adv;
  f.clip_vloss = c.clip_vloss;
  f.clip_coef = clip_coef;
  f.ent_coef = ent_coef;
  f.vf_coef = vf_coef;
  View1<float> grads_f("gf", L.num_params);
  Kokkos::deep_copy(grads_f, 7.0f);  // every entry must be written
  f.grads = grads_f.data();
  f.stats = stats_f.data();
  f.tf32 = c.tf32;
  const rl::FusedUpdate fused(L, B);
  rl::permuted_moments(ExecSpace(), adv.data(), perm, base, B, moments_f.data());
  fused.gradients(ExecSpace(), f);
  ExecSpace().fence();
  const auto gf = test::to_host(grads_f);
  const auto sf = test::to_host(stats_f);

  // a repeat gives the same bits (exact restarts depend on it)
  View1<float> grads_f2("gf2", L.num_params);
  f.grads = grads_f2.data();
  fused.gradients(ExecSpace(), f);
  ExecSpace().fence();
  EXPECT_EQ(test::to_host(grads_f2), gf) << "fused gradients differ between two identical calls";

  // ---- reference: host gather, layered forward, loss and backward ----
  const auto obs_h = test::to_host(obs);
  const auto st = test::to_host(rms.state());
  const auto logp_h = test::to_host(logp), adv_h = test::to_host(adv), ret_h = test::to_host(ret),
             val_h = test::to_host(val);
  std::vector<float> xr(std::size_t(B) * c.obs_dim), ar(std::size_t(B) * c.act_dim), lr(B), advr(B), rr(B), vr(B);
  for (int i = 0; i < B; ++i) {
    const std::uint32_t j = perm(base + i);
    for (int k = 0; k < c.obs_dim; ++k) {
      float v = obs_h[std::size_t(j) * c.obs_dim + k];
      if (c.normalize)
        v = std::min(2.0f, std::max(-2.0f, float((v - st[k]) / std::sqrt(st[c.obs_dim + k] + 1e-8))));
      xr[std::size_t(i) * c.obs_dim + k] = v;
    }
    for (int k = 0; k < c.act_dim; ++k) ar[std::size_t(i) * c.act_dim + k] = act_h[std::size_t(j) * c.act_dim + k];
    lr[i] = logp_h[j], advr[i] = adv_h[j], rr[i] = ret_h[j], vr[i] = val_h[j];
  }
  const auto xr_d = test::to_device(xr), ar_d = test::to_device(ar), lr_d = test::to_device(lr),
             advr_d = test::to_device(advr), rr_d = test::to_device(rr), vr_d = test::to_device(vr);
  nn::MlpWorkspace<float> wa(L.actor, B), wc(L.critic, B);
  nn::mlp_forward(ExecSpace(), L.actor, params.data(), xr_d.data(), B, wa);
  nn::mlp_forward(ExecSpace(), L.critic, params.data(), xr_d.data(), B, wc);
  View1<rl::Moments> moments_r("mr", 1);
  View1<rl::LossStats> stats_r("sr", 1);
  rl::moments(ExecSpace(), advr_d.data(), B, moments_r.data());
  View1<float> d_actor("da", std::size_t(B) * aout), d_values("dv", B), d_ls("dls", std::size_t(B) * c.act_dim);
  rl::PpoLossArgs<float> la;
  la.B = B;
  la.num_actions = c.num_actions;
  la.act_dim = c.act_dim;
  la.clip_coef = clip_coef;
  la.ent_coef = ent_coef;
  la.vf_coef = vf_coef;
  la.clip_vloss = c.clip_vloss;
  la.norm_adv = c.norm_adv;
  la.actor_out = wa.output(L.actor);
  la.values = wc.output(L.critic);
  la.log_std = L.continuous() ? params.data() + L.log_std : nullptr;
  la.actions = ar_d.data();
  la.old_logp = lr_d.data();
  la.adv = advr_d.data();
  la.returns = rr_d.data();
  la.old_values = vr_d.data();
  la.adv_moments = moments_r.data();
  la.d_actor_out = d_actor.data();
  la.d_values = d_values.data();
  la.d_log_std_terms = d_ls.data();
  rl::ppo_loss(ExecSpace(), la, stats_r.data());
  View1<float> grads_r("gr", L.num_params);
  nn::mlp_backward(ExecSpace(), L.actor, params.data(), xr_d.data(), B, wa, d_actor.data(), grads_r.data());
  nn::mlp_backward(ExecSpace(), L.critic, params.data(), xr_d.data(), B, wc, d_values.data(), grads_r.data());
  if (L.continuous()) {
    View1<float> ones("ones", B);
    Kokkos::deep_copy(ones, 1.0f);
    blas::gemv<float>(ExecSpace(), blas::Op::N, c.act_dim, B, 1.0f, d_ls.data(), c.act_dim, ones.data(), 0.0f,
                      grads_r.data() + L.log_std);
  }
  ExecSpace().fence();
  const auto gr = test::to_host(grads_r);
  // FP32 (3xTF32 on tensor cores, FMA elsewhere) agrees to rounding; one TF32 pass keeps 10
  // mantissa bits per operand
  const double tol = c.tf32 ? 100 : 1;
  expect_close(gf, gr, float(2e-5 * tol), "gradients");
  const auto sr = test::to_host(stats_r);
  EXPECT_NEAR(sf[0].pg, sr[0].pg, 1e-4 * tol * B);
  EXPECT_NEAR(sf[0].v, sr[0].v, 1e-4 * tol * B);
  EXPECT_NEAR(sf[0].entropy, sr[0].entropy, 1e-4 * tol * B);
  EXPECT_NEAR(sf[0].approx_kl, sr[0].approx_kl, 1e-4 * tol * B);
  EXPECT_NEAR(sf[0].clipfrac, sr[0].clipfrac, c.tf32 ? 0.01 * B : 0.0);
  EXPECT_GT(sr[0].clipfrac, 0.0);  // the case exercises both branches of the clip
  EXPECT_LT(sr[0].clipfrac, double(B));
}

}  // namespace

TEST(FusedUpdate, CategoricalTanhMatchesLayered) {
  check({4, 1, 2, {64, 64}, {64, 64}, nn::Activation::Tanh, 1000, 250, false, true, true});
}

TEST(FusedUpdate, PaddedTensorCoreLayersMatchLayered) {
  // 62-wide hidden layers pad to 64: tensor-core products (GPU builds) over zero-padded fragments
  check({8, 1, 2, {62, 62}, {62, 30}, nn::Activation::Tanh, 900, 300, true, true, true});
}

TEST(FusedUpdate, GaussianReluNormalisedRaggedTiles) {
  check({3, 2, 0, {32, 16, 24}, {40}, nn::Activation::Relu, 777, 333, true, true, false});
}

TEST(FusedUpdate, EluSmallBatchThreeActions) {
  check({6, 1, 3, {8}, {8, 8}, nn::Activation::Elu, 50, 7, true, false, true});
}

TEST(FusedUpdate, ManyTilesPerTeam) {
  check({4, 1, 2, {64, 64}, {64, 64}, nn::Activation::Tanh, 20000, 5000, true, true, true});
}

TEST(FusedUpdate, Tf32StaysClose) {
  Case c{4, 1, 2, {64, 64}, {64, 64}, nn::Activation::Tanh, 4000, 1000, true, true, true};
  c.tf32 = true;
  check(c);
}

TEST(FusedUpdate, TooWideNetworksAreRefused) {
  nn::ActorCriticSpec s;
  s.obs_dim = 211;
  s.num_actions = 20;
  s.actor_hidden = {512, 512, 512, 256};
  s.critic_hidden = {512, 512, 512, 256};
  const nn::ActorCriticLayout L(s);
  // GPUs: shared memory cannot hold the accumulators; host builds use level-1 scratch
  if (!device_is_host()) {
    EXPECT_FALSE(rl::FusedUpdate::supported(L));
  }
  nn::ActorCriticSpec g = s;
  g.num_actions = 0;
  g.act_dim = rl::FusedUpdate::kMaxActDim + 1;
  g.obs_dim = 4;
  g.actor_hidden = g.critic_hidden = {8};
  EXPECT_FALSE(rl::FusedUpdate::supported(nn::ActorCriticLayout(g)));
}
