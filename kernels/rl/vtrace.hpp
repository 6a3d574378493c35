#pragma once
/// \file
/// \brief V-trace (Espeholt et al. 2018, "IMPALA", §4.1) over [T][N] trajectories of a behaviour
/// policy mu, for a target policy pi: value targets v_s and policy-gradient advantages, in the
/// recursive form of the paper's Remark 1, one thread per trajectory walking back from its
/// bootstrap value:
///   rho_t = min(rho_bar, pi/mu),  c_t = lambda * min(c_bar, pi/mu),  live_t = 1 - done_t
///   delta_t = rho_t (r_t + gamma live_t V(x_{t+1}) - V(x_t))
///   v_t     = V(x_t) + delta_t + gamma live_t c_t (v_{t+1} - V(x_{t+1}))
///   A_t     = rho_t (r_t + gamma live_t v_{t+1} - V(x_t))
/// with V(x_T) = v_T = the bootstrap value.  Transition t ends its episode when terminated or
/// truncated (the caller has added gamma * V(final_obs) to a truncated transition's reward where it
/// bootstraps them, as for gae.hpp).  lambda scales the traces only (the paper's lambda variant, as in Retrace); rlax's
/// `lambda_` also mixes V(x_{t+1}) into the advantages' next value, which this does not (with that
/// mix the shipped APPO configs learned worse under mapping.template async: CartPole 277 against
/// 500).  With lambda = 1 these are Sample Factory's APPO targets.  On-policy (pi = mu, rho_bar,
/// c_bar >= 1) v_t is GAE(lambda)'s return.
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/rl/heads.hpp"

namespace gmi::rl {

template <class S>
struct VtraceArgs {
  int T = 0, N = 0;  ///< steps, trajectories; sample j = t * N + e
  S gamma = 0.99, lambda = 1, rho_bar = 1, c_bar = 1;
  // inputs (device)
  const S* rewards = nullptr;           ///< [T*N]
  const std::uint8_t* done = nullptr;   ///< [T*N] transition ended its episode (terminated or truncated)
  const S* values = nullptr;            ///< [T*N] V(x_t) of the target policy's critic
  const S* bootstrap = nullptr;         ///< [N] V(x_T)
  const S* logp = nullptr;              ///< [T*N] log pi(a_t|x_t)
  const S* behaviour_logp = nullptr;    ///< [T*N] log mu(a_t|x_t)
  // outputs (device)
  S* vs = nullptr;      ///< [T*N] value targets v_t
  S* pg_adv = nullptr;  ///< [T*N] policy-gradient advantages A_t
};

/// V-trace targets and advantages (the formulas above).
template <class S>
void vtrace(const ExecSpace& space, const VtraceArgs<S>& a) {
  const VtraceArgs<S> p = a;
  Kokkos::parallel_for(
      "gmi::rl::vtrace", Range(space, 0, p.N), KOKKOS_LAMBDA(const int e) {
        S next_value = p.bootstrap[e], next_vs = p.bootstrap[e];
        for (int t = p.T - 1; t >= 0; --t) {
          const std::size_t j = std::size_t(t) * p.N + e;
          const S ratio = math::exp(p.logp[j] - p.behaviour_logp[j]);
          const S rho = math::min(p.rho_bar, ratio), c = p.lambda * math::min(p.c_bar, ratio);
          const S discount = p.done[j] ? S(0) : p.gamma;
          const S v = p.values[j];
          const S delta = rho * (p.rewards[j] + discount * next_value - v);
          const S vs = v + delta + discount * c * (next_vs - next_value);
          p.pg_adv[j] = rho * (p.rewards[j] + discount * next_vs - v);
          p.vs[j] = vs;
          next_value = v;
          next_vs = vs;
        }
      });
}

/// log pi(a_i|x_i) of B samples from the actor's outputs ([B x out]: logits of a categorical head
/// with num_actions > 0, in `categories`' groups, else Gaussian means with log_std) and the actions
/// taken ([B x act_dim]; a categorical action as one index per group in floats), into logp[B].
template <class S>
void action_logp(const ExecSpace& space, int B, int num_actions, int act_dim, const S* actor_out, const S* log_std,
                 const S* actions, S* logp, Categories categories = {}) {
  Kokkos::parallel_for(
      "gmi::rl::action_logp", Range(space, 0, B), KOKKOS_LAMBDA(const int i) {
        if (num_actions > 0) {
          logp[i] = categorical_logp(actor_out + std::size_t(i) * num_actions, num_actions, categories,
                                     actions + std::size_t(i) * act_dim);
        } else {
          logp[i] = gaussian_logp(actions + std::size_t(i) * act_dim, actor_out + std::size_t(i) * act_dim, log_std,
                                  act_dim);
        }
      });
}

}  // namespace gmi::rl
