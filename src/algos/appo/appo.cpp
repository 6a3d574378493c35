// APPO's update (algo: appo): PPO's trainer with minibatches of whole trajectories and V-trace
// targets (kernels/rl/vtrace.hpp) computed per minibatch from the current networks, as Sample
// Factory's APPO learner does; the rollout, the loss, the optimiser and the checkpoints are PPO's.
#include <algorithm>

#include "kernels/nn/mlp.hpp"
#include "kernels/rl/normalizer.hpp"
#include "kernels/rl/vtrace.hpp"
#include "src/algos/appo/section.hpp"
#include "src/algos/ppo/ppo.hpp"

namespace gmi::algos {

void PpoTrainer::vtrace_gradients(const rl::Permutation& envs, int mb, int k, float* grads, rl::PpoLossArgs<float> la) {
  const int N = N_, T = T_, od = od_, ad = ad_;
  const int n = N / cfg_.section<PpoConfig>().num_minibatches;  // envs per minibatch: B_ = T * n
  const std::uint32_t first = std::uint32_t(mb) * std::uint32_t(n);
  const bool norm = cfg_.section<PpoConfig>().normalize_obs;
  const float clip = float(cfg_.section<PpoConfig>().obs_clip);
  auto st = obs_rms_.state();
  auto obs = obs_;
  auto act = actions_;
  auto logp = logp_;
  auto val = values_;
  auto rew = rewards_;
  auto term = terminated_;
  auto trunc = truncated_;
  auto mbo = mb_obs_;
  auto mba = mb_actions_;
  auto mbl = mb_logp_;
  auto mbv = mb_values_;
  auto mbr = mb_rewards_;
  auto mbd = mb_done_;
  auto boot = policy_in_;  // each env's last observation, for the critic's bootstrap value
  // Row i = t * n + c holds step t of the minibatch's env c (the [T][n] layout vtrace() reads);
  // rows T * n + c are the envs' last observations (obs_ row T, the next rollout's start).
  const int W = std::max(od, ad);
  Kokkos::parallel_for(
      "gmi::appo::gather_trajectories", Range64(space_, 0, std::int64_t(T + 1) * n * W),
      KOKKOS_LAMBDA(const std::int64_t q) {
        const int i = int(q / W), d = int(q - std::int64_t(i) * W);
        const int t = i / n, c = i - t * n;
        const std::size_t j = std::size_t(t) * N + envs(first + std::uint32_t(c));
        const auto feature = [&](int dd) {
          const float x = obs(j * od + dd);
          return norm ? rl::normalize_feature(x, st.data(), od, dd, clip) : x;
        };
        if (t == T) {
          if (d < od) boot(std::size_t(c) * od + d) = feature(d);
          return;
        }
        if (d < od) mbo(std::size_t(i) * od + d) = feature(d);
        if (d < ad) mba(std::size_t(i) * ad + d) = act(j * ad + d);
        if (d == 0) {
          mbl(i) = logp(j);
          mbv(i) = val(j);
          mbr(i) = rew(j);
          mbd(i) = term(j) || trunc(j) ? 1 : 0;
        }
      });
  minibatch_gradients(k, grads, la);
}

void PpoTrainer::vtrace_targets(const rl::PpoLossArgs<float>& la) {
  const int n = N_ / cfg_.section<PpoConfig>().num_minibatches;
  nn::ac_forward(space_, layout_, params_.data(), policy_in_.data(), n, roll_, false, true);
  rl::action_logp(space_, B_, layout_.num_actions, ad_, la.actor_out, la.log_std, mb_actions_.data(),
                  mb_logp_now_.data(), la.categories);
  rl::VtraceArgs<float> va;
  va.T = T_;
  va.N = n;
  va.gamma = float(cfg_.section<PpoConfig>().gamma);
  va.lambda = float(cfg_.section<PpoConfig>().gae_lambda);
  va.rho_bar = float(cfg_.section<AppoConfig>().vtrace_rho);
  va.c_bar = float(cfg_.section<AppoConfig>().vtrace_c);
  va.rewards = mb_rewards_.data();
  va.done = mb_done_.data();
  va.values = la.values;
  va.bootstrap = nn::ac_values(layout_, roll_);
  va.logp = mb_logp_now_.data();
  va.behaviour_logp = mb_logp_.data();
  va.vs = mb_returns_.data();
  va.pg_adv = mb_adv_.data();
  rl::vtrace(space_, va);
  mark(Phase::Advantages);
}

}  // namespace gmi::algos
