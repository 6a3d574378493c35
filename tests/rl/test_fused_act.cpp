// The fused rollout kernel (actor + critic + sampling in one launch) against the layered path
// (mlp_forward per network, then sample_actions), which test_mlp and test_sample check against
// independent references.  Same weights, observations and random counters: same values,
// log-probabilities and actions up to float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/nn/actor_critic.hpp"
#include "kernels/rl/fused_act.hpp"
#include "kernels/rl/normalizer.hpp"
#include "kernels/rl/sample.hpp"
#include "tests/support/test_util.hpp"

namespace {

struct Case {
  int obs_dim, act_dim, num_actions;
  std::vector<int> hidden;
  gmi::nn::Activation act;
  int N;
  bool normalize;
  bool tf32 = false;  ///< one TF32 pass on tensor cores (GPU builds): looser tolerances
  bool deterministic = false;  ///< the mode (argmax, mean) instead of samples
};

void check(const Case& c) {
  using namespace gmi;
  nn::ActorCriticSpec s;
  s.obs_dim = c.obs_dim;
  s.act_dim = c.act_dim;
  s.num_actions = c.num_actions;
  s.actor_hidden = c.hidden;
  s.critic_hidden = {c.hidden.back()};
  s.activation = c.act;
  s.actor_output_gain = 1.0;  // non-trivial logits / means
  s.log_std_init = -0.3;
  const nn::ActorCriticLayout L(s);
  ASSERT_TRUE(rl::fused_act_supported(L));
  const auto params = test::to_device(nn::init_actor_critic<float>(L, s, 11));

  std::mt19937 g(5);
  std::normal_distribution<float> nd(0.5f, 2.0f);
  std::vector<float> obs_h(std::size_t(c.N) * c.obs_dim);
  for (auto& x : obs_h) x = nd(g);
  const auto obs = test::to_device(obs_h);
  rl::RunningMeanStd rms(c.obs_dim);
  rms.update(ExecSpace(), obs.data(), c.N / 2);  // statistics of part of the batch
  std::vector<float> lo(c.act_dim, -1.0f), hi(c.act_dim, 1.0f);
  const auto act_lo = test::to_device(lo), act_hi = test::to_device(hi);

  const std::size_t NA = std::size_t(c.N) * c.act_dim;
  View1<float> a1("a1", NA), e1("e1", NA), lp1("lp1", c.N), v1("v1", c.N);
  View1<float> a2("a2", NA), e2("e2", NA), lp2("lp2", c.N), v2("v2", c.N);
  const bool cont = c.num_actions == 0;

  rl::FusedActArgs f;
  f.N = c.N;
  f.obs_dim = c.obs_dim;
  f.act_dim = c.act_dim;
  f.num_actions = c.num_actions;
  f.seed = 77;
  f.step = 123;
  f.env_offset = 1000;
  f.params = params.data();
  f.log_std = L.log_std;
  f.obs = obs.data();
  f.obs_stats = c.normalize ? rms.state().data() : nullptr;
  f.obs_clip = 3.0f;
  f.act_low = act_lo.data();
  f.act_high = act_hi.data();
  f.actions = a1.data();
  f.env_actions = cont ? e1.data() : a1.data();
  f.logp = lp1.data();
  f.values = v1.data();
  f.tf32 = c.tf32;
  f.deterministic = c.deterministic;
  rl::fused_act(ExecSpace(), L, f);

  // the same step with the tensor-core layers' weights read from fragment copies: equal bit for bit
  {
    View1<float> frag("frag", std::max<std::size_t>(1, rl::fused_act_fragment_floats(L)));
    rl::fused_act_prepare(ExecSpace(), L, params.data(), frag.data());
    View1<float> a3("a3", NA), e3("e3", NA), lp3("lp3", c.N), v3("v3", c.N);
    rl::FusedActArgs g3 = f;
    g3.frag = frag.data();
    g3.actions = a3.data();
    g3.env_actions = cont ? e3.data() : a3.data();
    g3.logp = lp3.data();
    g3.values = v3.data();
    rl::fused_act(ExecSpace(), L, g3);
    ExecSpace().fence();
    EXPECT_EQ(test::to_host(a3), test::to_host(a1)) << "actions with fragment copies";
    EXPECT_EQ(test::to_host(lp3), test::to_host(lp1)) << "log-probabilities with fragment copies";
    EXPECT_EQ(test::to_host(v3), test::to_host(v1)) << "values with fragment copies";
    if (cont) {
      EXPECT_EQ(test::to_host(e3), test::to_host(e1)) << "env actions with fragment copies";
    }
  }

  View1<float> normed("normed", obs_h.size());
  const float* in = obs.data();
  if (c.normalize) {
    rms.normalize(ExecSpace(), obs.data(), normed.data(), c.N, 3.0f);
    in = normed.data();
  }
  nn::MlpWorkspace<float> wa(L.actor, c.N), wc(L.critic, c.N);
  nn::mlp_forward(ExecSpace(), L.actor, params.data(), in, c.N, wa);
  nn::mlp_forward(ExecSpace(), L.critic, params.data(), in, c.N, wc);
  rl::SampleArgs sa;
  sa.N = c.N;
  sa.num_actions = c.num_actions;
  sa.act_dim = c.act_dim;
  sa.seed = 77;
  sa.step = 123;
  sa.env_offset = 1000;
  sa.actor_out = wa.output(L.actor);
  sa.log_std = cont ? params.data() + L.log_std : nullptr;
  sa.act_low = act_lo.data();
  sa.act_high = act_hi.data();
  sa.critic_out = wc.output(L.critic);
  sa.actions = a2.data();
  sa.env_actions = cont ? e2.data() : a2.data();
  sa.logp = lp2.data();
  sa.values = v2.data();
  sa.deterministic = c.deterministic;
  rl::sample_actions(ExecSpace(), sa);
  ExecSpace().fence();

  const auto A1 = test::to_host(a1), A2 = test::to_host(a2), E1 = test::to_host(e1),
             E2 = test::to_host(e2), L1 = test::to_host(lp1), L2 = test::to_host(lp2),
             V1 = test::to_host(v1), V2 = test::to_host(v2);
  // TF32 keeps 10 mantissa bits: about 1e-3 relative per product, a few times that through the
  // layers; actions may then cross a CDF boundary more often
  const float tol = c.tf32 ? 2e-2f : 1e-4f;
  int mismatched = 0;
  for (int i = 0; i < c.N; ++i) {
    EXPECT_NEAR(V1[i], V2[i], tol * (1 + std::fabs(V2[i]))) << "value " << i;
    if (!cont) {
      // The inverse-CDF choice can differ only if u falls within rounding of a CDF boundary.
      if (A1[i] != A2[i]) {
        ++mismatched;
        continue;
      }
    }
    EXPECT_NEAR(L1[i], L2[i], tol * (1 + std::fabs(L2[i]))) << "logp " << i;
    for (int j = 0; j < c.act_dim; ++j) {
      const std::size_t k = std::size_t(i) * c.act_dim + j;
      EXPECT_NEAR(A1[k], A2[k], tol * (1 + std::fabs(A2[k]))) << "action " << k;
      if (cont) {
        EXPECT_NEAR(E1[k], E2[k], tol) << "env action " << k;
        EXPECT_LE(std::fabs(E1[k]), 1.0f);
      }
    }
  }
  EXPECT_LE(mismatched, c.tf32 ? c.N / 100 : 1) << "of " << c.N;
}

}  // namespace

TEST(FusedAct, CategoricalMatchesLayeredPath) {
  check({4, 1, 2, {64, 64}, gmi::nn::Activation::Tanh, 1000, false});
  check({6, 1, 3, {32, 16, 8}, gmi::nn::Activation::Relu, 77, true});
}

TEST(FusedAct, TensorCoreInputLayerMatchesLayeredPath) {
  // 8 observations: the input layer runs on tensor cores too (and reads fragment copies)
  check({8, 1, 2, {64, 48}, gmi::nn::Activation::Tanh, 700, true});
}

TEST(FusedAct, GaussianMatchesLayeredPath) {
  check({3, 1, 0, {64, 64}, gmi::nn::Activation::Tanh, 513, true});
  check({5, 6, 0, {24, 40}, gmi::nn::Activation::Elu, 130, false});
}

TEST(FusedAct, Tf32StaysCloseToTheLayeredPath) {
  // 64-wide layers and 16-sample tiles: tensor cores on GPU builds (host builds ignore tf32)
  Case c{4, 1, 2, {64, 64}, gmi::nn::Activation::Tanh, 1000, false};
  c.tf32 = true;
  check(c);
  Case g{3, 1, 0, {64, 64}, gmi::nn::Activation::Tanh, 4096, true};
  g.tf32 = true;
  check(g);
}

TEST(FusedAct, DeterministicMatchesLayeredPath) {
  Case c{4, 1, 2, {64, 64}, gmi::nn::Activation::Tanh, 1000, true};
  c.deterministic = true;
  check(c);
  Case g{5, 6, 0, {24, 40}, gmi::nn::Activation::Elu, 130, true};
  g.deterministic = true;
  check(g);
}

TEST(FusedAct, TooWideNetworksAreRefused) {
  gmi::nn::ActorCriticSpec s;
  s.obs_dim = 211;
  s.act_dim = 20;
  s.actor_hidden = {512, 512, 512, 256};
  s.critic_hidden = {512, 512, 512, 256};
  const gmi::nn::ActorCriticLayout L(s);
  if (!gmi::device_is_host()) {
    EXPECT_FALSE(gmi::rl::fused_act_supported(L));
  }
}
