#pragma once
/// \file
/// \brief PPO loss (CleanRL ppo.py / ppo_continuous_action.py) and its gradient with respect to
/// the network outputs, one minibatch per launch:
///   L = mean(max(-A r, -A clip(r, 1-c, 1+c))) - ent_coef * mean(H) + vf_coef * L_V,
///   L_V = 0.5 * mean(max((V-R)^2, (V_old + clip(V-V_old, -c, c) - R)^2))   (clip_vloss)
///       = 0.5 * mean((V-R)^2)                                                (otherwise)
/// with r = exp(logp - logp_old) and A normalised per minibatch when norm_adv
/// (mean, unbiased std + 1e-8, as torch's .std()).  The kernel writes dL/d(actor output),
/// dL/dV and, for the Gaussian head, per-sample dL/dlog_std terms that one GEMV sums.
#include <algorithm>
#include <cstdint>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/rl/heads.hpp"

namespace gmi::rl {

/// Sums over a minibatch (divide by its size for means).
struct LossStats {
  double pg = 0, v = 0, entropy = 0, approx_kl = 0, clipfrac = 0;
  KOKKOS_INLINE_FUNCTION LossStats() {}
  KOKKOS_INLINE_FUNCTION void operator+=(const LossStats& o) {
    pg += o.pg, v += o.v, entropy += o.entropy, approx_kl += o.approx_kl, clipfrac += o.clipfrac;
  }
  // Kokkos 3.4 joins reductions through volatile references.
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile LossStats& o) volatile {
    pg += o.pg, v += o.v, entropy += o.entropy, approx_kl += o.approx_kl, clipfrac += o.clipfrac;
  }
};

/// Sum and sum of squares (advantage normalisation).
struct Moments {
  double s = 0, s2 = 0;
  KOKKOS_INLINE_FUNCTION Moments() {}
  KOKKOS_INLINE_FUNCTION void operator+=(const Moments& o) { s += o.s, s2 += o.s2; }
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile Moments& o) volatile { s += o.s, s2 += o.s2; }
};

}  // namespace gmi::rl

namespace Kokkos {
template <>
struct reduction_identity<gmi::rl::LossStats> {
  KOKKOS_FORCEINLINE_FUNCTION static gmi::rl::LossStats sum() { return gmi::rl::LossStats(); }
};
template <>
struct reduction_identity<gmi::rl::Moments> {
  KOKKOS_FORCEINLINE_FUNCTION static gmi::rl::Moments sum() { return gmi::rl::Moments(); }
};
}  // namespace Kokkos

namespace gmi::rl {

template <class S>
struct PpoLossArgs {
  int B = 0;                     ///< minibatch size
  int num_actions = 0;           ///< > 0: categorical head (its logits, every group's)
  Categories categories;         ///< the categorical head's groups (act_dim of them)
  int act_dim = 1;
  S clip_coef = 0.2, ent_coef = 0, vf_coef = 0.5;
  bool clip_vloss = true, norm_adv = true;
  // inputs (device)
  const S* actor_out = nullptr;   ///< [out × B] logits or means
  const S* values = nullptr;      ///< [B] critic outputs
  const S* log_std = nullptr;     ///< [act_dim] (Gaussian head)
  const S* actions = nullptr;     ///< [act_dim × B]
  const S* old_logp = nullptr;    ///< [B]
  const S* adv = nullptr;         ///< [B]
  const S* returns = nullptr;     ///< [B]
  const S* old_values = nullptr;  ///< [B]
  const Moments* adv_moments = nullptr;  ///< sums over the minibatch (norm_adv)
  // outputs (device)
  S* d_actor_out = nullptr;       ///< [out × B]
  S* d_values = nullptr;          ///< [B]
  S* d_log_std_terms = nullptr;   ///< [act_dim × B] (Gaussian head; summed afterwards)
};

/// Sum and sum of squares of x[0..n) into *out (device memory).
template <class S>
void moments(const ExecSpace& space, const S* x, int n, Moments* out) {
  Kokkos::View<Moments, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(out);
  Kokkos::parallel_reduce(
      "gmi::rl::moments", Range(space, 0, n),
      KOKKOS_LAMBDA(const int i, Moments& m) {
        const double v = x[i];
        m.s += v;
        m.s2 += v * v;
      },
      Kokkos::Sum<Moments, MemSpace>(r));
}

namespace detail {

/// Sample i's advantage, normalised over the minibatch when p.norm_adv.
template <class S>
KOKKOS_INLINE_FUNCTION S advantage(const PpoLossArgs<S>& p, int i) {
  S A = p.adv[i];
  if (p.norm_adv) {
    const double mean = p.adv_moments->s / p.B;
    const double var = p.B > 1 ? (p.adv_moments->s2 - p.adv_moments->s * mean) / (p.B - 1) : 0.0;
    A = S((A - mean) / (math::sqrt(math::max(var, 0.0)) + 1e-8));
  }
  return A;
}

/// The clipped policy-gradient term of sample i given log pi(a|s): its pg, approx_kl and clipfrac
/// into st; returns dL/dlogp.
template <class S>
KOKKOS_INLINE_FUNCTION S policy_terms(const PpoLossArgs<S>& p, int i, S logp, LossStats& st) {
  const S invB = S(1) / S(p.B);
  const S A = advantage(p, i);
  const S logratio = logp - p.old_logp[i];
  const S ratio = math::exp(logratio);
  const S pg1 = -A * ratio;
  const S pg2 = -A * math::clamp(ratio, S(1) - p.clip_coef, S(1) + p.clip_coef);
  // d max(pg1, pg2)/d ratio: -A unless the clipped branch is strictly larger (then clip'
  // is 0, because the unclipped and clipped terms agree wherever clip is the identity).
  const S g_ratio = pg1 >= pg2 ? -A : S(0);
  st.pg += double(math::max(pg1, pg2));
  st.approx_kl += double((ratio - S(1)) - logratio);
  st.clipfrac += math::fabs(ratio - S(1)) > p.clip_coef ? 1.0 : 0.0;
  return g_ratio * ratio * invB;
}

/// The value loss of sample i: dL/dV into p.d_values[i], the loss into st.
template <class S>
KOKKOS_INLINE_FUNCTION void value_terms(const PpoLossArgs<S>& p, int i, LossStats& st) {
  const S invB = S(1) / S(p.B);
  const S v = p.values[i], R = p.returns[i];
  S vl, dv;
  if (p.clip_vloss) {
    const S dvo = v - p.old_values[i];
    const S vc = p.old_values[i] + math::clamp(dvo, -p.clip_coef, p.clip_coef);
    const S lu = (v - R) * (v - R), lc = (vc - R) * (vc - R);
    const bool inside = dvo > -p.clip_coef && dvo < p.clip_coef;
    vl = S(0.5) * math::max(lu, lc);
    dv = lu >= lc ? (v - R) : (inside ? (vc - R) : S(0));
  } else {
    vl = S(0.5) * (v - R) * (v - R);
    dv = v - R;
  }
  p.d_values[i] = p.vf_coef * dv * invB;
  st.v += double(vl);
}

/// dL/dy_j of a categorical head: dlogp/dy_j = [j == a] - p_j ; dH/dy_j = -p_j (log p_j + H).
template <class S>
KOKKOS_INLINE_FUNCTION S categorical_grad(S y, S lse, S ent, bool taken, S g_logp, S g_ent) {
  const S lpj = y - lse;
  const S pj = math::exp(lpj);
  return g_logp * ((taken ? S(1) : S(0)) - pj) + g_ent * (-pj * (lpj + ent));
}

}  // namespace detail

/// Categorical heads with a group of at least this many logits run the loss with a vector of lanes
/// per sample (ppo_loss_wide): one thread per sample walks its logits four times, and on GPUs a
/// warp's loads then touch a cache line per lane (continuous Tag's 441 joint actions: 19 % of an
/// iteration).  Narrower groups stay on one thread a sample: with WarpDrive's 21 + 21 logits the
/// lanes' loss took 40 ms of a 208 ms update on an H100, one thread a sample 24 ms.
inline constexpr int kWideCategorical = 32;

/// The loss kernel, one thread per sample; sums of the loss terms go to *stats (device memory).
template <class S>
void ppo_loss_per_sample(const ExecSpace& space, const PpoLossArgs<S>& a, LossStats* stats) {
  Kokkos::View<LossStats, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  const PpoLossArgs<S> p = a;
  Kokkos::parallel_reduce(
      "gmi::rl::ppo_loss", Range(space, 0, p.B),
      KOKKOS_LAMBDA(const int i, LossStats& st) {
        const S invB = S(1) / S(p.B);
        // log pi(a|s) and entropy of the current policy
        // One group (Discrete): scalars; several: per-group arrays (local memory on GPUs).
        S logp, ent, lse1 = 0, lse[Categories::kMaxGroups], ents[Categories::kMaxGroups];
        const int out = p.num_actions > 0 ? p.num_actions : p.act_dim;
        const bool grouped = p.categories.groups() > 1;
        const S* y = p.actor_out + std::size_t(i) * out;
        if (p.num_actions > 0 && !grouped) {
          lse1 = logsumexp(y, p.num_actions);
          logp = y[int(p.actions[i])] - lse1;
          ent = categorical_entropy(y, p.num_actions, lse1);
        } else if (p.num_actions > 0) {
          categorical_logp_entropy(y, p.num_actions, p.categories, p.actions + std::size_t(i) * p.act_dim, logp, ent,
                                   lse, ents);
        } else {
          logp = gaussian_logp(p.actions + std::size_t(i) * p.act_dim, y, p.log_std, p.act_dim);
          ent = gaussian_entropy(p.log_std, p.act_dim);
        }
        const S g_logp = detail::policy_terms(p, i, logp, st);  // dL/dlogp for this sample
        const S g_ent = -p.ent_coef * invB;                      // dL/dH for this sample
        S* dy = p.d_actor_out + std::size_t(i) * out;
        if (p.num_actions > 0 && !grouped) {
          const int act = int(p.actions[i]);
          for (int j = 0; j < p.num_actions; ++j) dy[j] = detail::categorical_grad(y[j], lse1, ent, j == act, g_logp, g_ent);
        } else if (p.num_actions > 0) {
          // Group g's logits see its own entropy: H = sum_g H_g, dH/dy_j = -p_j (log p_j + H_g).
          for (int g = 0, at = 0; g < p.categories.groups(); ++g) {
            const int n = p.categories.size_of(g, p.num_actions), act = int(p.actions[std::size_t(i) * p.act_dim + g]);
            for (int j = 0; j < n; ++j)
              dy[at + j] = detail::categorical_grad(y[at + j], lse[g], ents[g], j == act, g_logp, g_ent);
            at += n;
          }
        } else {
          const S* act = p.actions + std::size_t(i) * p.act_dim;
          for (int j = 0; j < p.act_dim; ++j) {
            const S inv_std = math::exp(-p.log_std[j]);
            const S z = (act[j] - y[j]) * inv_std;
            dy[j] = g_logp * z * inv_std;  // dlogp/dmean = z / std
            // dlogp/dlog_std = z^2 - 1 ; dH/dlog_std = 1
            p.d_log_std_terms[std::size_t(i) * p.act_dim + j] = g_logp * (z * z - S(1)) + g_ent;
          }
        }
        detail::value_terms(p, i, st);
        st.entropy += double(ent);
      },
      Kokkos::Sum<LossStats, MemSpace>(r));
}

/// The loss kernel of a categorical head with a vector of lanes per sample (a warp on GPUs, one
/// lane on host backends): each group's max, sum of exponentials and entropy are lane reductions,
/// their gradients written by consecutive lanes.  The same sums as ppo_loss_per_sample up to
/// their order.
template <class S>
void ppo_loss_wide(const ExecSpace& space, const PpoLossArgs<S>& a, LossStats* stats) {
  GMI_REQUIRE(a.num_actions > 0, "ppo_loss_wide: a categorical head only");
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  Kokkos::View<LossStats, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  const PpoLossArgs<S> p = a;
  const int lanes = device_is_host() ? 1 : 32, per_team = device_is_host() ? 1 : 4;
  Kokkos::parallel_reduce(
      "gmi::rl::ppo_loss_wide", Policy(space, (p.B + per_team - 1) / per_team, per_team, lanes),
      KOKKOS_LAMBDA(const Member& m, LossStats& st) {
        const int i = m.league_rank() * m.team_size() + m.team_rank();
        if (i >= p.B) return;
        const int G = p.categories.groups();
        const S* y = p.actor_out + std::size_t(i) * p.num_actions;
        const S* act = p.actions + std::size_t(i) * p.act_dim;
        S lse[Categories::kMaxGroups], ents[Categories::kMaxGroups], logp = 0, ent = 0;
        for (int g = 0, at = 0; g < G; ++g) {
          const int n = p.categories.size_of(g, p.num_actions);
          const S* yg = y + at;
          S mx;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(m, n), [&](const int j, S& v) { v = math::max(v, yg[j]); }, Kokkos::Max<S>(mx));
          S sum = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(m, n), [&](const int j, S& v) { v += math::exp(yg[j] - mx); }, sum);
          lse[g] = mx + math::log(sum);
          S h = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(m, n),
              [&](const int j, S& v) {
                const S lp = yg[j] - lse[g];
                v -= math::exp(lp) * lp;
              },
              h);
          ents[g] = h;
          logp += yg[int(act[g])] - lse[g];
          ent += h;
          at += n;
        }
        LossStats mine;
        const S g_logp = detail::policy_terms(p, i, logp, mine);
        const S g_ent = -p.ent_coef * (S(1) / S(p.B));
        S* dy = p.d_actor_out + std::size_t(i) * p.num_actions;
        for (int g = 0, at = 0; g < G; ++g) {
          const int n = p.categories.size_of(g, p.num_actions), k = int(act[g]);
          // one group: its entropy is the whole entropy (the same expression as before groups)
          const S l = lse[g], h = G > 1 ? ents[g] : ent;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, n), [&](const int j) {
            dy[at + j] = detail::categorical_grad(y[at + j], l, h, j == k, g_logp, g_ent);
          });
          at += n;
        }
        Kokkos::single(Kokkos::PerThread(m), [&] {
          detail::value_terms(p, i, mine);
          mine.entropy += double(ent);
          st += mine;
        });
      },
      Kokkos::Sum<LossStats, MemSpace>(r));
}

/// The loss kernel; sums of the loss terms go to *stats (device memory).
template <class S>
void ppo_loss(const ExecSpace& space, const PpoLossArgs<S>& a, LossStats* stats) {
  int widest = 0;
  for (int g = 0; g < a.categories.groups(); ++g) widest = std::max(widest, a.categories.size_of(g, a.num_actions));
  if (a.num_actions > 0 && widest >= kWideCategorical)
    ppo_loss_wide(space, a, stats);
  else
    ppo_loss_per_sample(space, a, stats);
}

}  // namespace gmi::rl
