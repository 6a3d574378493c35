// ppo_loss<double> against an independent host implementation of CleanRL's minibatch loss
// (ppo.py / ppo_continuous_action.py), written from CleanRL's code rather than from the kernel:
//   mb_adv = (adv - adv.mean()) / (adv.std() + 1e-8)          (torch .std(): unbiased)
//   pg     = max(-A r, -A clamp(r, 1-c, 1+c)).mean()
//   v      = 0.5 * max((V-R)^2, (V_old + clamp(V-V_old, -c, c) - R)^2).mean()   (clip_vloss)
//          = 0.5 * ((V-R)^2).mean()                                               (otherwise)
//   loss   = pg - ent_coef * entropy.mean() + vf_coef * v
// The kernel's analytic gradients (d_actor_out, d_values, and the per-sample log-std terms
// summed over the minibatch) are compared with central finite differences of the host loss, and
// its LossStats sums with the host's.  Data are drawn so that ratios fall inside and outside the
// clip range on both sides, with both signs of the advantage, and value deltas are clipped on
// both sides with either branch of the max active; every finite-difference point stays at least
// 1e-3 away from a kink.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/rl/ppo_loss.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::rl {
namespace {

using gmi::test::to_device;
using gmi::test::to_host;

constexpr double kLog2Pi = 1.83787706640934548356;  // log(2 pi)

struct Config {
  int num_actions = 0;  ///< > 0: categorical
  int act_dim = 1;
  std::vector<int> nvec;  ///< MultiDiscrete groups (num_actions their sum, act_dim their number)
  double clip = 0.2, ent_coef = 0.05, vf_coef = 0.5;
  bool clip_vloss = true, norm_adv = true;
};

/// The minibatch: network outputs (the differentiated variables) and rollout data.
struct Batch {
  int B = 0;
  std::vector<double> actor_out, values, log_std;                    // variables
  std::vector<double> actions, old_logp, adv, returns, old_values;  // data
};

struct HostResult {
  double loss = 0;
  // Sums over the minibatch, as LossStats.
  double pg = 0, v = 0, entropy = 0, approx_kl = 0, clipfrac = 0;
  // Per-sample diagnostics for choosing data.
  std::vector<double> ratio, A, dvo, lu, lc;
};

int out_width(const Config& c) { return c.num_actions > 0 ? c.num_actions : c.act_dim; }

/// The categorical head's groups: nvec, or one of every action.
std::vector<int> groups_of(const Config& c) { return c.nvec.empty() ? std::vector<int>{c.num_actions} : c.nvec; }

/// A MultiDiscrete(nvec) config.
Config multi_discrete(std::vector<int> nvec) {
  Config c;
  c.nvec = nvec;
  c.act_dim = int(nvec.size());
  for (int n : nvec) c.num_actions += n;
  return c;
}

/// log pi(a|s) and entropy H for sample i, directly from the distributions' definitions.
void host_logp_entropy(const Config& c, const Batch& b, int i, double& logp, double& ent) {
  const int out = out_width(c);
  const double* y = b.actor_out.data() + std::size_t(i) * out;
  if (c.num_actions > 0) {
    // A product of independent softmaxes, one per group: log-probabilities and entropies add.
    logp = 0;
    ent = 0;
    int at = 0, g = 0;
    for (int n : groups_of(c)) {
      double z = 0;
      for (int j = 0; j < n; ++j) z += std::exp(y[at + j]);
      const int a = int(b.actions[std::size_t(i) * c.act_dim + g]);
      logp += std::log(std::exp(y[at + a]) / z);
      for (int j = 0; j < n; ++j) {
        const double pj = std::exp(y[at + j]) / z;
        ent -= pj * std::log(pj);
      }
      at += n;
      ++g;
    }
  } else {
    logp = 0;
    ent = 0;
    for (int j = 0; j < c.act_dim; ++j) {
      const double sd = std::exp(b.log_std[j]);
      const double a = b.actions[std::size_t(i) * c.act_dim + j];
      // log N(a; mu, sd^2) and the Gaussian entropy 0.5 log(2 pi e sd^2).
      logp += -0.5 * std::pow((a - y[j]) / sd, 2) - std::log(sd) - 0.5 * kLog2Pi;
      ent += 0.5 * (1.0 + kLog2Pi) + std::log(sd);
    }
  }
}

HostResult host_loss(const Config& c, const Batch& b) {
  HostResult r;
  const int B = b.B;
  std::vector<double> A = b.adv;
  if (c.norm_adv) {
    double mean = 0;
    for (double a : A) mean += a;
    mean /= B;
    double ss = 0;
    for (double a : A) ss += (a - mean) * (a - mean);
    const double sd = std::sqrt(ss / (B - 1));  // torch.std(): Bessel-corrected
    for (double& a : A) a = (a - mean) / (sd + 1e-8);
  }
  double pg = 0, vl = 0, ent_sum = 0;
  for (int i = 0; i < B; ++i) {
    double logp, ent;
    host_logp_entropy(c, b, i, logp, ent);
    const double logratio = logp - b.old_logp[i];
    const double ratio = std::exp(logratio);
    const double clipped = std::min(std::max(ratio, 1 - c.clip), 1 + c.clip);
    const double pgi = std::max(-A[i] * ratio, -A[i] * clipped);
    double vli;
    const double V = b.values[i], R = b.returns[i], Vo = b.old_values[i];
    const double lu = (V - R) * (V - R);
    double lc = lu;
    if (c.clip_vloss) {
      const double vclip = Vo + std::min(std::max(V - Vo, -c.clip), c.clip);
      lc = (vclip - R) * (vclip - R);
      vli = 0.5 * std::max(lu, lc);
    } else {
      vli = 0.5 * lu;
    }
    pg += pgi;
    vl += vli;
    ent_sum += ent;
    r.approx_kl += (ratio - 1) - logratio;
    r.clipfrac += std::fabs(ratio - 1) > c.clip ? 1 : 0;
    r.ratio.push_back(ratio);
    r.A.push_back(A[i]);
    r.dvo.push_back(V - Vo);
    r.lu.push_back(lu);
    r.lc.push_back(lc);
  }
  r.pg = pg;
  r.v = vl;
  r.entropy = ent_sum;
  r.loss = pg / B - c.ent_coef * ent_sum / B + c.vf_coef * vl / B;
  return r;
}

/// Whether every kink is at least `margin` away, and every branch of the loss is visited.
bool good_batch(const Config& c, const HostResult& r, double margin) {
  int in = 0, out_zero = 0, out_active = 0, v_in = 0, v_out_u = 0, v_out_c = 0;
  for (std::size_t i = 0; i < r.ratio.size(); ++i) {
    const double rt = r.ratio[i];
    if (std::fabs(rt - (1 - c.clip)) < margin || std::fabs(rt - (1 + c.clip)) < margin) return false;
    if (std::fabs(r.A[i]) < margin) return false;
    if (std::fabs(rt - 1) < c.clip) {
      ++in;
    } else {
      // Outside the clip range the gradient is zero exactly when the clipped term is the max.
      const bool clipped_wins = (rt > 1) == (r.A[i] > 0);
      (clipped_wins ? out_zero : out_active)++;
    }
    if (c.clip_vloss) {
      const double d = r.dvo[i];
      if (std::fabs(std::fabs(d) - c.clip) < margin) return false;
      if (std::fabs(d) < c.clip) {
        ++v_in;
      } else {
        if (std::fabs(r.lu[i] - r.lc[i]) < margin) return false;
        (r.lu[i] > r.lc[i] ? v_out_u : v_out_c)++;
      }
    }
  }
  const bool v_ok = !c.clip_vloss || (v_in > 0 && v_out_u > 0 && v_out_c > 0);
  return in > 0 && out_zero > 0 && out_active > 0 && v_ok;
}

Batch make_batch(const Config& c, int B, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::normal_distribution<double> n01(0, 1);
  Batch b;
  b.B = B;
  const int out = out_width(c);
  b.actor_out.resize(std::size_t(out) * B);
  for (auto& y : b.actor_out) y = 1.5 * u(g);
  if (c.num_actions > 0) {
    for (int i = 0; i < B; ++i)
      for (int n : groups_of(c)) b.actions.push_back(double(g() % n));
  } else {
    for (int j = 0; j < c.act_dim; ++j) b.log_std.push_back(-0.3 + 0.5 * j + 0.1 * u(g));
    for (int i = 0; i < B; ++i)
      for (int j = 0; j < c.act_dim; ++j)
        b.actions.push_back(b.actor_out[std::size_t(i) * out + j] + std::exp(b.log_std[j]) * n01(g));
  }
  for (int i = 0; i < B; ++i) {
    b.adv.push_back(0.3 + n01(g));
    b.values.push_back(u(g));
    b.old_values.push_back(b.values.back() + 0.4 * u(g));
    b.returns.push_back(b.values.back() + n01(g));
  }
  // old_logp = current logp + offset in [-0.5, 0.5]: ratios in [0.61, 1.65].
  for (int i = 0; i < B; ++i) {
    double logp, ent;
    host_logp_entropy(c, b, i, logp, ent);
    b.old_logp.push_back(logp + 0.5 * u(g));
  }
  return b;
}

struct KernelResult {
  std::vector<double> d_actor_out, d_values, d_log_std;  // d_log_std summed over samples
  LossStats stats;
};

enum class Kernel { Dispatch, PerSample, Wide };

KernelResult run_kernel(const Config& c, const Batch& b, Kernel which = Kernel::Dispatch) {
  const int out = out_width(c);
  ExecSpace space;
  auto actor_out = to_device(b.actor_out), values = to_device(b.values),
       actions = to_device(b.actions), old_logp = to_device(b.old_logp), adv = to_device(b.adv),
       returns = to_device(b.returns), old_values = to_device(b.old_values);
  View1<double> log_std("log_std", c.act_dim);
  if (c.num_actions == 0) log_std = to_device(b.log_std);
  View1<double> d_actor("d_actor", std::size_t(out) * b.B), d_values("d_values", b.B),
      d_ls("d_ls", std::size_t(c.act_dim) * b.B);
  View1<Moments> mom("moments", 1);
  View1<LossStats> stats("stats", 1);

  PpoLossArgs<double> a;
  a.B = b.B;
  a.num_actions = c.num_actions;
  a.categories = categories(c.nvec, "test");
  a.act_dim = c.act_dim;
  a.clip_coef = c.clip;
  a.ent_coef = c.ent_coef;
  a.vf_coef = c.vf_coef;
  a.clip_vloss = c.clip_vloss;
  a.norm_adv = c.norm_adv;
  a.actor_out = actor_out.data();
  a.values = values.data();
  a.log_std = c.num_actions == 0 ? log_std.data() : nullptr;
  a.actions = actions.data();
  a.old_logp = old_logp.data();
  a.adv = adv.data();
  a.returns = returns.data();
  a.old_values = old_values.data();
  a.adv_moments = mom.data();
  a.d_actor_out = d_actor.data();
  a.d_values = d_values.data();
  a.d_log_std_terms = c.num_actions == 0 ? d_ls.data() : nullptr;
  if (c.norm_adv) moments(space, adv.data(), b.B, mom.data());
  if (which == Kernel::PerSample)
    ppo_loss_per_sample(space, a, stats.data());
  else if (which == Kernel::Wide)
    ppo_loss_wide(space, a, stats.data());
  else
    ppo_loss(space, a, stats.data());
  space.fence();

  KernelResult r;
  r.d_actor_out = to_host(d_actor);
  r.d_values = to_host(d_values);
  r.stats = to_host(stats)[0];
  if (c.num_actions == 0) {
    const auto t = to_host(d_ls);
    r.d_log_std.assign(c.act_dim, 0.0);
    for (int i = 0; i < b.B; ++i)
      for (int j = 0; j < c.act_dim; ++j) r.d_log_std[j] += t[std::size_t(i) * c.act_dim + j];
  }
  return r;
}

/// Central difference of the host loss in one variable.  h = 1e-6: truncation h^2 |L'''| / 6
/// ~ 1e-12 and rounding ~ eps |L| / h ~ 1e-10 with |L| ~ 1, so 1e-8 + 1e-6 |g| is a wide margin
/// that still catches any wrong factor or sign.
double fd(const Config& c, Batch b, std::vector<double> Batch::*var, std::size_t k) {
  const double h = 1e-6;
  const double x0 = (b.*var)[k];
  (b.*var)[k] = x0 + h;
  const double lp = host_loss(c, b).loss;
  (b.*var)[k] = x0 - h;
  const double lm = host_loss(c, b).loss;
  return (lp - lm) / (2 * h);
}

double fd_tol(double g) { return 1e-8 + 1e-6 * std::fabs(g); }

void check_case(const Config& c) {
  SCOPED_TRACE(::testing::Message() << (c.num_actions > 0 ? "categorical" : "gaussian")
                                    << " clip_vloss=" << c.clip_vloss << " norm_adv=" << c.norm_adv);
  const int B = 24;
  Batch b;
  HostResult ref;
  // Deterministic search for data with every branch present and all kinks >= 1e-3 away.
  std::uint64_t seed = 1000 * (c.num_actions + 1) + 10 * c.clip_vloss + c.norm_adv;
  for (int tries = 0;; ++tries) {
    ASSERT_LT(tries, 1000) << "no suitable batch found";
    b = make_batch(c, B, seed + tries);
    ref = host_loss(c, b);
    if (good_batch(c, ref, 1e-3)) break;
  }

  const auto k = run_kernel(c, b);
  const int out = out_width(c);

  for (std::size_t q = 0; q < std::size_t(out) * B; ++q) {
    const double f = fd(c, b, &Batch::actor_out, q);
    EXPECT_NEAR(k.d_actor_out[q], f, fd_tol(f))
        << "dL/dactor_out sample " << q / out << " component " << q % out
        << " ratio " << ref.ratio[q / out] << " A " << ref.A[q / out];
  }
  for (int i = 0; i < B; ++i) {
    const double f = fd(c, b, &Batch::values, i);
    EXPECT_NEAR(k.d_values[i], f, fd_tol(f))
        << "dL/dV sample " << i << " V-V_old " << ref.dvo[i] << " lu " << ref.lu[i] << " lc "
        << ref.lc[i];
  }
  if (c.num_actions == 0)
    for (int j = 0; j < c.act_dim; ++j) {
      const double f = fd(c, b, &Batch::log_std, j);
      EXPECT_NEAR(k.d_log_std[j], f, fd_tol(f)) << "dL/dlog_std[" << j << "]";
    }

  // Sums of the loss terms; the host evaluates them in a different order and through different
  // formulas (softmax probabilities vs log-sum-exp), so agreement is to rounding.
  auto rel = [](double x) { return 1e-12 * (1 + std::fabs(x)); };
  EXPECT_NEAR(k.stats.pg, ref.pg, rel(ref.pg));
  EXPECT_NEAR(k.stats.v, ref.v, rel(ref.v));
  EXPECT_NEAR(k.stats.entropy, ref.entropy, rel(ref.entropy));
  EXPECT_NEAR(k.stats.approx_kl, ref.approx_kl, rel(ref.approx_kl));
  EXPECT_EQ(k.stats.clipfrac, ref.clipfrac);
  // The loss the stats describe is the one differentiated.
  const double loss_from_stats =
      k.stats.pg / B - c.ent_coef * k.stats.entropy / B + c.vf_coef * k.stats.v / B;
  EXPECT_NEAR(loss_from_stats, ref.loss, rel(ref.loss));
}

class PpoLoss : public ::testing::TestWithParam<std::tuple<bool, bool, bool>> {};

TEST_P(PpoLoss, GradientsMatchFiniteDifferencesOfCleanRlLoss) {
  Config c;
  const bool categorical = std::get<0>(GetParam());
  c.num_actions = categorical ? 3 : 0;
  c.act_dim = categorical ? 1 : 2;
  c.clip_vloss = std::get<1>(GetParam());
  c.norm_adv = std::get<2>(GetParam());
  check_case(c);
}

INSTANTIATE_TEST_SUITE_P(
    Heads, PpoLoss, ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) ? "Categorical" : "Gaussian") +
             (std::get<1>(info.param) ? "_ClipV" : "_NoClipV") +
             (std::get<2>(info.param) ? "_NormAdv" : "_RawAdv");
    });

TEST(PpoLossExtra, OtherCoefficientsAndWiderGaussian) {
  // A larger entropy coefficient and clip range, 5 action dimensions.
  Config c;
  c.num_actions = 0;
  c.act_dim = 5;
  c.clip = 0.3;
  c.ent_coef = 0.2;
  c.vf_coef = 1.3;
  check_case(c);
  c.num_actions = 6;
  c.act_dim = 1;
  check_case(c);
  c.num_actions = 40;  // at least kWideCategorical: the lane-parallel kernel
  check_case(c);
}

// MultiDiscrete heads: one softmax per group of logits, log-probabilities and entropies summed
// (WarpDrive's Tag policies: 21 acceleration and 21 turn levels); groups wider than
// kWideCategorical stay on the per-sample kernel.
TEST(PpoLossExtra, MultiDiscreteGradientsMatchFiniteDifferences) {
  for (const std::vector<int>& nvec : {std::vector<int>{3, 2}, std::vector<int>{21, 21}, std::vector<int>{2, 5, 1, 40}}) {
    Config c = multi_discrete(nvec);
    check_case(c);
    c.clip_vloss = false;
    c.norm_adv = false;
    check_case(c);
  }
}

// The lane-parallel kernel of wide categorical heads and the one-thread-per-sample kernel agree
// to rounding (their sums over the logits run in another order), for narrow and wide heads.
TEST(PpoLossExtra, WideCategoricalKernelMatchesPerSampleKernel) {
  const std::vector<std::vector<int>> heads = {{3}, {33}, {441}, {21, 21}, {3, 2, 40}};
  for (const std::vector<int>& nvec : heads) {
    SCOPED_TRACE(::testing::Message() << nvec.size() << " groups, " << nvec.back() << " logits in the last");
    Config c = nvec.size() > 1 ? multi_discrete(nvec) : Config{};
    if (nvec.size() == 1) c.num_actions = nvec[0];
    const Batch b = make_batch(c, 70, 7 + c.num_actions);  // 70 samples: a partial last team
    const KernelResult x = run_kernel(c, b, Kernel::PerSample), y = run_kernel(c, b, Kernel::Wide);
    ASSERT_EQ(x.d_actor_out.size(), y.d_actor_out.size());
    for (std::size_t q = 0; q < x.d_actor_out.size(); ++q)
      ASSERT_NEAR(x.d_actor_out[q], y.d_actor_out[q], 1e-14 + 1e-12 * std::fabs(x.d_actor_out[q])) << q;
    EXPECT_EQ(x.d_values, y.d_values);
    auto rel = [](double v) { return 1e-12 * (1 + std::fabs(v)); };
    EXPECT_NEAR(x.stats.pg, y.stats.pg, rel(x.stats.pg));
    EXPECT_NEAR(x.stats.entropy, y.stats.entropy, rel(x.stats.entropy));
    EXPECT_NEAR(x.stats.v, y.stats.v, rel(x.stats.v));
    EXPECT_NEAR(x.stats.approx_kl, y.stats.approx_kl, rel(x.stats.approx_kl));
    EXPECT_EQ(x.stats.clipfrac, y.stats.clipfrac);
  }
}

TEST(PpoLossExtra, MomentsAreSums) {
  std::vector<double> x = {0.5, -1.25, 3.0, 2.0, -0.75};
  auto dx = to_device(x);
  View1<Moments> m("m", 1);
  ExecSpace space;
  moments(space, dx.data(), int(x.size()), m.data());
  space.fence();
  const Moments h = to_host(m)[0];
  EXPECT_DOUBLE_EQ(h.s, 3.5);
  EXPECT_DOUBLE_EQ(h.s2, 0.25 + 1.5625 + 9 + 4 + 0.5625);
}

}  // namespace
}  // namespace gmi::rl
