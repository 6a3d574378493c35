#include "src/algos/ppo/ppo.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>

#include "kernels/core/host_copy.hpp"
#include "kernels/core/error.hpp"
#include "kernels/core/float4.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/blas.hpp"
#include "kernels/optim/adam.hpp"
#include "kernels/rl/fused_act.hpp"
#include "kernels/rl/fused_update.hpp"
#include "kernels/rl/gae.hpp"
#include "kernels/rl/sample.hpp"
#include "kernels/rl/shuffle.hpp"
#include "mpi/deadline.hpp"
#include "mpi/progress.hpp"
#include "src/algos/appo/section.hpp"
#include "src/algos/optimizer_step.hpp"
#include "src/algos/ppo/section.hpp"
#include "src/algos/trainer_state.hpp"

namespace gmi::algos {
namespace {

using Clock = std::chrono::steady_clock;
/// The checkpoint counter of the kernels a run uses: bit 0 the fused rollout, bit 1 the fused update.
constexpr const char* kPathsCounter = "kernel_paths";
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class T>
View1<T> alloc(const char* label, std::size_t n) {
  return View1<T>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
}

}  // namespace

/// device.fused_kernels: "on" uses every fused kernel that fits, "off" none.  "auto": on GPUs, a
/// trainer times both paths of each phase on its first iteration and keeps the faster
/// (PpoTrainer::choose_paths): the fused kernels stage each layer in shared memory, which wins for
/// narrow networks (CartPole 2x64: 22.2 vs 27.5 ms per rollout of 65536 envs on an H100) and loses
/// for wide ones (continuous Tag 256x256: the fused update 5.8x slower end to end).  Serving and
/// eval (ActorOptions) use the fused step wherever it fits.  Host builds run the layered kernels
/// under auto (OpenBLAS is faster there).  device.matmul bf16 has no fused kernel: it runs the
/// layered (cuBLAS) kernels.
bool fused_wanted(const config::Config& c) {
  const std::string& mode = c.device.fused_kernels;
  if (c.device.matmul == "bf16") return false;  // config::derive rejects bf16 with fused_kernels on
  return mode == "on" || (mode == "auto" && !device_is_host());
}

ActorOptions actor_options(const config::Config& cfg, const envs::EnvSpec& spec) {
  ActorOptions ao;
  ao.normalize_obs = cfg.section<PpoConfig>().normalize_obs;
  ao.obs_clip = float(cfg.section<PpoConfig>().obs_clip);
  ao.clip_actions = cfg.section<PpoConfig>().clip_actions;
  ao.act_low = spec.act_low;
  ao.act_high = spec.act_high;
  ao.fused = fused_wanted(cfg);
  ao.tf32 = cfg.device.matmul == "tf32";
  return ao;
}

nn::ActorCriticSpec policy_spec(const config::Config& c, const envs::EnvSpec& e) {
  nn::ActorCriticSpec s;
  s.obs_dim = e.obs_dim;
  s.act_dim = e.act_dim;
  s.num_actions = e.num_actions;
  s.action_nvec = e.action_nvec;
  s.actor_hidden = c.policy.actor_hidden;
  s.critic_hidden = c.policy.critic_hidden;
  s.activation = nn::parse_activation(c.policy.activation);
  s.log_std_init = c.policy.log_std_init;
  s.actor_output_gain = c.policy.actor_output_gain;
  s.critic_output_gain = c.policy.critic_output_gain;
  s.shared_hidden = c.policy.shared_hidden;
  return s;
}

nn::ActorCriticLayout PpoTrainer::policy_layout(const config::Config& cfg) {
  return nn::ActorCriticLayout(policy_spec(cfg, envs::env_spec(cfg.env.name, config::env_overrides(cfg))));
}

MemoryNeeds PpoTrainer::memory_needs(const config::Config& cfg) {
  return memory_needs(cfg, envs::env_spec(cfg.env.name, config::env_overrides(cfg)), cfg.env.num_envs);
}

MemoryNeeds PpoTrainer::memory_needs(const config::Config& cfg, const envs::EnvSpec& spec, int rows) {
  const nn::ActorCriticLayout L(policy_spec(cfg, spec));
  const double N = rows, TN = double(cfg.section<PpoConfig>().num_steps) * N, B = TN / cfg.section<PpoConfig>().num_minibatches;
  const double od = L.obs_dim, ad = L.act_dim, P = double(L.num_params);
  auto workspace = [&](double cap, bool backward) { return nn::ActorCriticWorkspace::size(L, cap, backward); };
  double floats = 4 * P;                                   // params, gradients, Adam moments
  floats += TN * (2 * od + ad + 6) + N * (2 * od + ad + 3);  // rollout storage and per-env rows
  floats += workspace(N, false);  // the rollout's layered workspaces
  if (!device_is_host() && rl::fused_act_supported(L) && fused_wanted(cfg)) floats += P;  // its fragment copies (<= P)
  // the update's buffers: auto keeps both paths' until its first iteration has timed them
  const bool vtrace = uses_vtrace(cfg);  // APPO: the layered update, with its minibatch's rewards and log-probabilities
  const bool fused = !vtrace && rl::FusedUpdate::supported(L) && fused_wanted(cfg);
  const bool layered = !fused || cfg.device.fused_kernels == "auto";
  if (fused)  // per-team partial sums and accumulators (upper bound); padded weights and their fragment copies
    floats += 2.0 * std::min(B / 32 + 1, 2048.0) * P + 3 * P;
  if (layered)
    floats += B * (od + 2 * ad + L.actor_out() + 6 + (vtrace ? 2.25 : 0)) + workspace(B, true);
  double bytes = 4 * floats + 2 * TN;         // + terminated, truncated
  bytes += N * ((od + 16) * 8 + spec.device_bytes_per_env);  // environment state (generous; device physics' scratch)
  MemoryNeeds m;
  m.drivers = {"env.num_envs", "ppo.num_steps", "policy.actor_hidden", "policy.critic_hidden"};
  m.device_bytes = bytes;
  // Checkpoints copy the state to the host: parameters, moments, this GMI's environments.
  if (!device_is_host()) m.host_bytes = 3 * 4 * P + N * (od + 16) * 8 + N * (od + 1) * 4;
  // Host-simulated environments live in host memory (MuJoCo: mjData, ~0.5 MB per env).
  m.host_bytes += N * spec.host_bytes_per_env;
  return m;
}

bool PpoTrainer::data_parallel() const { return reducer_ && reducer_->size() > 1; }

rl::RunningMeanStd::HostSum PpoTrainer::host_sum() const {
  if (!data_parallel()) return {};  // this GMI's statistics alone
  return [r = reducer_](double* v, int n) { r->allreduce_sum_host(v, n); };
}

PpoTrainer::PpoTrainer(const config::Config& cfg, std::uint64_t env_offset,
                       mpi::GradientReducer* reducer, EnvPtr env)
    : cfg_(cfg), reducer_(reducer), env_offset_(env_offset) {
  const std::uint64_t seed = std::uint64_t(cfg.train.seed);
  env_ = own_env(std::move(env), cfg, env_offset);
  spec_ = env_->spec();
  N_ = cfg.env.num_envs;
  init(seed);
  env_->reset_all(space_, obs_.data());
  space_.fence();
}

PpoTrainer::PpoTrainer(const config::Config& cfg, const envs::EnvSpec& role, int rows, std::uint64_t row_offset,
                       std::uint64_t init_seed, mpi::GradientReducer* reducer)
    : cfg_(cfg), spec_(role), reducer_(reducer), env_offset_(row_offset) {
  GMI_REQUIRE(rows > 0 && std::int64_t(rows) * cfg.section<PpoConfig>().num_steps % cfg.section<PpoConfig>().num_minibatches == 0,
              "PPO role: the rows do not split into ppo.num_minibatches");
  N_ = rows;
  cfg_.env.num_envs = rows;
  cfg_.batch_size = std::int64_t(rows) * cfg.section<PpoConfig>().num_steps;
  cfg_.minibatch_size = cfg_.batch_size / cfg.section<PpoConfig>().num_minibatches;
  init(init_seed);
  space_.fence();
}

void PpoTrainer::init(std::uint64_t seed) {
  const config::Config& cfg = cfg_;
  const envs::EnvSpec& spec = spec_;
  const nn::ActorCriticSpec acs = policy_spec(cfg, spec);
  layout_ = nn::ActorCriticLayout(acs);
  categories_ = rl::categories(layout_.action_nvec, spec.name + "'s action space");
  T_ = cfg.section<PpoConfig>().num_steps;
  od_ = spec.obs_dim;
  ad_ = spec.act_dim;
  B_ = int(cfg.minibatch_size);
  set_device_math(cfg);

  const std::size_t P = layout_.num_params, TN = std::size_t(T_) * N_;
  params_ = alloc<float>("gmi::ppo::params", P);
  grads_ = View1<float>("gmi::ppo::grads", P);
  adam_m_ = View1<float>("gmi::ppo::adam_m", P);
  adam_v_ = View1<float>("gmi::ppo::adam_v", P);
  {
    // Identical initial weights on every GMI: drawn on the host from the run's seed.
    const std::vector<float> init = nn::init_actor_critic<float>(layout_, acs, seed);
    auto h = Kokkos::create_mirror_view(params_);
    for (std::size_t i = 0; i < P; ++i) h(i) = init[i];
    Kokkos::deep_copy(params_, h);
  }

  obs_ = alloc<float>("gmi::ppo::obs", (TN + N_) * od_);
  final_obs_ = alloc<float>("gmi::ppo::final_obs", TN * od_);
  actions_ = alloc<float>("gmi::ppo::actions", TN * ad_);
  env_actions_ = alloc<float>("gmi::ppo::env_actions", std::size_t(N_) * ad_);
  logp_ = alloc<float>("gmi::ppo::logp", TN);
  values_ = alloc<float>("gmi::ppo::values", TN);
  rewards_ = alloc<float>("gmi::ppo::rewards", TN);
  advantages_ = alloc<float>("gmi::ppo::advantages", TN);
  returns_ = alloc<float>("gmi::ppo::returns", TN);
  last_values_ = alloc<float>("gmi::ppo::last_values", N_);
  policy_in_ = alloc<float>("gmi::ppo::policy_in", std::size_t(N_) * od_);
  return_acc_ = View1<float>("gmi::ppo::return_acc", N_);
  terminated_ = alloc<std::uint8_t>("gmi::ppo::terminated", TN);
  truncated_ = alloc<std::uint8_t>("gmi::ppo::truncated", TN);
  index_ = alloc<int>("gmi::ppo::index", TN);
  act_low_ = View1<float>("gmi::ppo::act_low", ad_);
  act_high_ = View1<float>("gmi::ppo::act_high", ad_);
  if (!spec.discrete()) to_device(act_low_, spec.act_low, "act_low"), to_device(act_high_, spec.act_high, "act_high");

  adv_moments_ = View1<rl::Moments>("gmi::ppo::adv_moments", 1);
  const int updates = cfg.section<PpoConfig>().update_epochs * cfg.section<PpoConfig>().num_minibatches;
  loss_stats_ = View1<rl::LossStats>("gmi::ppo::loss_stats", updates);
  grad_norms_ = View1<float>("gmi::ppo::grad_norms", updates);
  norm_sum_ = View1<double>("gmi::ppo::norm_sum", 1);
  adam_count_ = View1<std::int64_t>("gmi::ppo::adam_count", 1);
  adam_coeffs_ = View1<double>("gmi::ppo::adam_coeffs", 2);
  update_lr_ = View1<double>("gmi::ppo::learning_rate", 1);
  const int epochs = cfg.section<PpoConfig>().update_epochs;
  update_keys_ = View1<std::uint32_t>("gmi::ppo::shuffle_keys", 4 * std::size_t(epochs));
  // device.graphs: each epoch of the update, any env (a game's roles included); under auto only where
  // it was measured: one GMI, not bf16, while the update runs the layered kernels (update_graphs_apply)
  update_graphs_always_ = cfg.device.graphs == "on";
  const bool auto_measured = cfg.device.graphs == "auto" && !data_parallel() && cfg.device.matmul != "bf16";
  if ((update_graphs_always_ || auto_measured) && graphs_available())
    for (int e = 0; e < epochs; ++e)
      update_graphs_.push_back(
          std::make_unique<CapturedSequence>(fmt::format("device.graphs (PPO update, epoch {})", e), true));

  vtrace_ = uses_vtrace(cfg);
  const bool fuse_rollout = rl::fused_act_supported(layout_) && fused_wanted(cfg);
  const bool fuse_update = !vtrace_ && rl::FusedUpdate::supported(layout_) && fused_wanted(cfg);
  paths_open_ = cfg.device.fused_kernels == "auto" && (fuse_rollout || fuse_update);
  use_paths(fuse_rollout, fuse_update, paths_open_);
  group_ = env_ && env_->can_step_async() ? config::env_group_size(cfg.env) : N_;
  // device.graphs: the rollout of device envs (host-simulated envs and a game's roles step directly)
  const bool device_env = env_ && spec_.host_bytes_per_env == 0 && !env_->can_step_async();
  if (device_env && cfg.device.graphs != "off" && graphs_available()) {
    rollout_graph_ = std::make_unique<CapturedSequence>("device.graphs (PPO rollout)", true);
    step_base_ = View1<std::uint64_t>("gmi::ppo::step_base", 1);
  }
  roll_ = nn::ActorCriticWorkspace(layout_, N_);
  obs_rms_ = rl::RunningMeanStd(od_);
  ret_rms_ = rl::RunningMeanStd(1);
}

void PpoTrainer::use_paths(bool fused_rollout, bool fused_update, bool both) {
  if (fused_rollout != fused_rollout_ || fused_update != fused_update_) {
    // captured launches hold the old kernels: capture again after a direct rollout and update
    if (rollout_graph_) rollout_graph_->reset();
    for (auto& g : update_graphs_) g->reset();
    rollout_warm_ = update_warm_ = false;
  }
  fused_rollout_ = fused_rollout;
  fused_update_ = fused_update;
  // GPUs with tensor-core layers: the rollout's hidden layers read fragment-native weights,
  // written once per rollout (rl::fused_act_prepare, in begin_iteration()); elsewhere every layer is staged
  const bool frag = fused_rollout && rl::fused_act_fragments_help() && rl::fused_act_fragment_floats(layout_) > 0;
  if (!frag)
    act_frag_ = {};
  else if (act_frag_.size() == 0)
    act_frag_ = View1<float>("gmi::ppo::act_fragments", rl::fused_act_fragment_floats(layout_));
  if (!fused_update)
    fused_ = rl::FusedUpdate();
  else if (fused_.tile() == 0)
    fused_ = rl::FusedUpdate(layout_, B_);
  if (fused_update && !both) {
    mb_obs_ = mb_actions_ = mb_logp_ = mb_adv_ = mb_returns_ = mb_values_ = d_actor_ = d_values_ = d_log_std_ = {};
    mb_nets_ = nn::ActorCriticWorkspace();
    ones_ = {};
  } else if (mb_obs_.size() == 0) {
    // the layered update's gathered minibatch and loss gradients (the fused one keeps them on chip)
    mb_obs_ = alloc<float>("gmi::ppo::mb_obs", std::size_t(B_) * od_);
    mb_actions_ = alloc<float>("gmi::ppo::mb_actions", std::size_t(B_) * ad_);
    mb_logp_ = alloc<float>("gmi::ppo::mb_logp", B_);
    mb_adv_ = alloc<float>("gmi::ppo::mb_adv", B_);
    mb_returns_ = alloc<float>("gmi::ppo::mb_returns", B_);
    mb_values_ = alloc<float>("gmi::ppo::mb_values", B_);
    d_actor_ = alloc<float>("gmi::ppo::d_actor", std::size_t(B_) * layout_.actor_out());
    d_values_ = alloc<float>("gmi::ppo::d_values", B_);
    d_log_std_ = alloc<float>("gmi::ppo::d_log_std", std::size_t(B_) * ad_);
    mb_nets_ = nn::ActorCriticWorkspace(layout_, B_, true, true, true);
    ones_ = mb_nets_.actor.ones;
    if (vtrace_) {
      mb_rewards_ = alloc<float>("gmi::appo::mb_rewards", B_);
      mb_logp_now_ = alloc<float>("gmi::appo::mb_logp_now", B_);
      mb_done_ = alloc<std::uint8_t>("gmi::appo::mb_done", B_);
    }
  }
}

namespace {
/// Best of two timed passes after a warm-up one, in seconds; `pass` fences.  A candidate whose
/// warm-up pass took over a tenth of a second and over 3x `rival` (the other candidate's timed
/// pass, seconds; infinity: none yet) has lost: its warm-up time stands for it, and the timed
/// passes are skipped (a wide network's fused update can take seconds a pass).
double best_pass(const std::function<void()>& pass, double rival) {
  auto timed = [&] {
    const auto t0 = Clock::now();
    pass();
    return seconds_since(t0);
  };
  const double warm = timed();
  if (warm > 0.1 && warm > 3 * rival) return warm;
  return std::min(timed(), timed());
}
}  // namespace

double PpoTrainer::time_policy_steps(bool fused, double rival) {
  fused_rollout_ = fused;  // act()'s path (the fused candidate's fragment buffer exists: init)
  return best_pass(
      [&] {
        act_frag_ready_ = fused && act_frag_.size() > 0;
        if (act_frag_ready_) rl::fused_act_prepare(space_, layout_, params_.data(), act_frag_.data());
        for (int t = 0; t < T_; ++t) act(0, 0, N_);  // step 0's rows, T times: the rollout's policy work
        act_frag_ready_ = false;
        space_.fence();
        mpi::progress().beat();
      },
      rival);
}

double PpoTrainer::time_gradients(bool fused, double rival) {
  const int E = cfg_.section<PpoConfig>().update_epochs, M = cfg_.section<PpoConfig>().num_minibatches;
  const int reps = std::min(E * M, 4);
  const rl::Permutation perm(std::uint32_t(T_) * N_, std::uint64_t(cfg_.train.seed), 0);
  const rl::PpoLossArgs<float> la = loss_args();
  // The first pass is the warm-up (one minibatch); the timed ones run `reps` minibatches each.
  int passes = 0;
  const double per_pass = best_pass(
      [&] {
        const int n = passes++ == 0 ? 1 : reps;
        for (int i = 0; i < n; ++i) {
          const std::uint32_t base = std::uint32_t(i % M) * B_;
          if (fused)
            fused_gradients(perm, base, 0, grads_.data(), la);
          else
            layered_gradients(perm, base, 0, grads_.data(), la);
          space_.fence();
          mpi::progress().beat();
        }
      },
      rival / (E * M));
  return per_pass * (E * M) / (passes == 1 ? 1 : reps);
}

void PpoTrainer::choose_paths() {
  paths_open_ = false;
  paths_chosen_ = true;
  // the fused candidates (init); a role that does not learn (ppo.frozen_roles) keeps the fused update unused
  const bool try_rollout = fused_rollout_, try_update = fused_update_ && !frozen_;
  // The rollout's later rows and the update's inputs hold no samples yet: zeros, for the timing.
  const std::size_t row0 = std::size_t(N_) * od_;
  Kokkos::deep_copy(space_, Kokkos::subview(obs_, std::make_pair(row0, obs_.size())), 0.0f);
  for (auto* v : {&actions_, &logp_, &values_, &advantages_, &returns_}) Kokkos::deep_copy(space_, *v, 0.0f);
  double t[4] = {0, 0, 0, 0};  // policy steps layered, fused; gradients layered, fused
  const double none = std::numeric_limits<double>::infinity();
  if (try_rollout) t[0] = time_policy_steps(false, none), t[1] = time_policy_steps(true, t[0]);
  if (try_update) t[2] = time_gradients(false, none), t[3] = time_gradients(true, t[2]);
  if (data_parallel()) reducer_->allreduce_sum_host(t, 4);  // one choice on every GMI
  const double G = data_parallel() ? reducer_->size() : 1;
  std::vector<std::string> parts;
  auto part = [&](const char* what, double layered, double fused) {
    parts.push_back(fmt::format("{} fused {:.3g} ms, layered {:.3g} ms", what, 1e3 * fused / G, 1e3 * layered / G));
  };
  if (try_rollout) part("policy steps", t[0], t[1]);
  if (try_update) part("gradients", t[2], t[3]);
  trials_ = parts.empty() ? "none: nothing to time (a role that does not learn, its rollout on the layered kernels)"
                          : fmt::format("{} (per iteration{})", fmt::join(parts, "; "), G > 1 ? ", mean over GMIs" : "");
  use_paths(try_rollout && t[1] <= t[0], try_update ? t[3] <= t[2] : fused_update_);
  spdlog::info("device.fused_kernels auto: {} (timed: {})", kernels(), trials_);
}

std::vector<double> PpoTrainer::normalizer_state_host() const {
  std::vector<double> out;
  for (const rl::RunningMeanStd* r : {&obs_rms_, &ret_rms_}) {
    auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), r->state());
    out.insert(out.end(), h.data(), h.data() + h.extent(0));
  }
  return out;
}

StateBuffers PpoTrainer::state_buffers() const {
  StateBuffers b;
  b.params = params_;
  b.adam_m = adam_m_;
  b.adam_v = adam_v_;
  b.obs_rms = obs_rms_.state();
  b.ret_rms = ret_rms_.state();
  b.obs = start_obs();
  b.return_acc = return_acc_;
  b.env = env_.get();
  return b;
}

TrainerState PpoTrainer::save_state() const {
  TrainerState s = save_buffers(space_, state_buffers());
  s.iteration = iteration_;
  s.adam_step = adam_step_;
  s.nonfinite_streak = nonfinite_streak_;
  s.rng = {{"next_action_step", iteration_ * T_}, {"next_shuffle", iteration_ * cfg_.section<PpoConfig>().update_epochs}};
  // the kernels auto chose: a restart takes the same ones, so that it is exact
  if (paths_chosen_) s.counters.emplace_back(kPathsCounter, std::int64_t(fused_rollout_) | std::int64_t(fused_update_) << 1);
  return s;
}

void PpoTrainer::load_shared_state(const TrainerState& s, std::uint64_t first_episode) {
  const StateBuffers b = state_buffers();
  load_shared_buffers(space_, b, s);
  iteration_ = s.iteration;
  adam_step_ = s.adam_step;
  Kokkos::deep_copy(space_, adam_count_, adam_step_);
  nonfinite_streak_ = s.nonfinite_streak;
  restart_episodes(space_, b, first_episode);
  space_.fence();
}

void PpoTrainer::load_state(const TrainerState& s) {
  load_shared_state(s, 0);
  load_own_buffers(space_, state_buffers(), s);
  // device.fused_kernels: auto on a GPU resumes with the kernels the checkpointed run used, so
  // that the restart is exact (a resume on another layout, load_shared_state alone, times anew):
  // the ones it chose, or, from a checkpoint written before auto timed its kernels, the fused
  // ones wherever they fit (the rule then, which the candidates of init() are).
  if (!paths_open_) return;
  const auto saved = std::find_if(s.counters.begin(), s.counters.end(), [](const auto& c) { return c.first == kPathsCounter; });
  if (saved != s.counters.end())
    use_paths((saved->second & 1) && rl::fused_act_supported(layout_),
              (saved->second & 2) && rl::FusedUpdate::supported(layout_));
  else if (s.iteration > 0)
    use_paths(fused_rollout_, fused_update_);
  else
    return;  // a checkpoint before the first iteration: time as a fresh run does
  paths_open_ = false;
  paths_chosen_ = true;
  trials_ = saved != s.counters.end()
                ? "none: the checkpoint's kernels"
                : "none: the fused kernels where they fit, as auto ran before it timed them (the checkpoint names none)";
}

std::vector<float> PpoTrainer::params_host() const {
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), params_);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

std::vector<std::string> PpoTrainer::loss_columns() const {
  return {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac", "explained_variance"};
}

std::string PpoTrainer::describe() const {
  const auto& L = layout_;
  return fmt::format("{}: policy {} params ({}) | {} envs x {} steps = {} samples/iteration per GMI, {} minibatches "
                     "of {}, {} epochs | {} kernels",
                     vtrace_ ? "appo (V-trace targets per minibatch of whole trajectories)" : "ppo", L.num_params, cfg_.policy.activation, N_, T_, cfg_.batch_size, cfg_.section<PpoConfig>().num_minibatches,
                     cfg_.minibatch_size, cfg_.section<PpoConfig>().update_epochs, kernels());
}

std::string PpoTrainer::kernels() const {
  const std::string graph =
      std::string(rollout_graph_ ? " + rollout graph" : "") + (update_graphs_apply() ? " + update graphs" : "");
  if (paths_open_) return "auto (timed on the first iteration)" + graph;
  if (fused_rollout_ && fused_update_) return "fused" + graph;
  if (!fused_rollout_ && !fused_update_) return "layered" + graph;
  return (fused_rollout_ ? "fused rollout, layered update" : "layered rollout, fused update") + graph;
}

const float* PpoTrainer::policy_input(const float* raw_obs, int n) {
  if (!cfg_.section<PpoConfig>().normalize_obs) return raw_obs;
  obs_rms_.normalize(space_, raw_obs, policy_in_.data(), n, float(cfg_.section<PpoConfig>().obs_clip));
  return policy_in_.data();
}

void PpoTrainer::act(int t, int lo, int hi) {
  const std::size_t N = N_, n = std::size_t(hi - lo);
  const float* params = params_.data();
  const bool continuous = layout_.continuous();
  const std::size_t row = std::size_t(t) * N + std::size_t(lo);  // first sample of envs [lo, hi) at step t
  const float* obs = obs_.data() + row * od_;
  float* actions = actions_.data() + row * ad_;
  float* env_actions = continuous ? env_actions_.data() + std::size_t(lo) * ad_ : actions;  // clipped copy if continuous
  // With a rollout graph the global step's base is read on the device (set in rollout()).
  const std::uint64_t* step_base = rollout_graph_ ? step_base_.data() : nullptr;
  const std::uint64_t step = step_base ? std::uint64_t(t) : std::uint64_t(iteration_) * T_ + t;
  ActStep s;
  s.layout = &layout_;
  s.categories = categories_;
  s.params = params;
  s.obs = obs;
  s.n = int(n);
  s.seed = std::uint64_t(cfg_.train.seed);
  s.step = step;
  s.step_base = step_base;
  s.env_offset = env_offset_ + std::uint64_t(lo);
  s.clip_actions = cfg_.section<PpoConfig>().clip_actions;
  s.tf32 = cfg_.device.matmul == "tf32";
  s.obs_rms = cfg_.section<PpoConfig>().normalize_obs ? &obs_rms_ : nullptr;
  s.obs_clip = float(cfg_.section<PpoConfig>().obs_clip);
  s.act_low = act_low_.data();
  s.act_high = act_high_.data();
  s.actions = actions;
  s.env_actions = env_actions;
  s.logp = logp_.data() + row;
  s.values = values_.data() + row;
  act_step(space_, s,
           {fused_rollout_, act_frag_ready_ ? act_frag_.data() : nullptr, policy_in_.data(), &roll_, true});
}

envs::StepOutputs PpoTrainer::step_outputs(int t) const {
  const std::size_t row = std::size_t(t) * N_;
  envs::StepOutputs o;
  o.next_obs = obs_.data() + (row + N_) * od_;
  o.final_obs = final_obs_.data() + row * od_;
  o.reward = rewards_.data() + row;
  o.terminated = terminated_.data() + row;
  o.truncated = truncated_.data() + row;
  return o;
}

void PpoTrainer::rollout() {
  const float* env_actions = layout_.continuous() ? env_actions_.data() : nullptr;
  auto actions_of = [&](int t) { return env_actions ? env_actions : actions_.data() + std::size_t(t) * N_ * ad_; };
  // With a rollout graph, act() reads the global step's base on the device (graph or not).
  if (rollout_graph_) Kokkos::deep_copy(space_, step_base_, std::uint64_t(iteration_) * T_);
  if (group_ < N_) {
    // The envs in groups of group_ (env.batch_size), taken in turn: the threads step the groups
    // queued while the device computes the actions of the group that came back.  Every env sees
    // the same actions as in one batch (the same random numbers); only the last bits of the
    // policy's products over fewer envs may differ.
    const int groups = (N_ + group_ - 1) / group_;
    auto range = [&](int g) { return std::make_pair(g * group_, std::min(N_, (g + 1) * group_)); };
    try {
      for (int g = 0; g < groups; ++g) {
        const auto [lo, hi] = range(g);
        act(0, lo, hi);
        env_->step_async(space_, actions_of(0), step_outputs(0), lo, hi);
      }
      for (int t = 0; t < T_; ++t) {
        for (int g = 0; g < groups; ++g) {
          env_->step_wait(space_);  // group g's step t done (the oldest queued); its results are queued to the device
          if (t + 1 == T_) continue;
          const auto [lo, hi] = range(g);
          act(t + 1, lo, hi);
          env_->step_async(space_, actions_of(t + 1), step_outputs(t + 1), lo, hi);
        }
        mpi::progress().beat();
      }
    } catch (...) {
      // The steps still queued write into this trainer's buffers: let them end before it unwinds.
      for (int g = 0; g < groups; ++g) try {
          env_->step_wait(space_);
        } catch (...) {
        }
      throw;
    }
  } else if (rollout_graph_ && rollout_warm_ && !phases_ && !Kokkos::Tools::profileLibraryLoaded()) {
    // One graph launch for the whole rollout.  The first rollout launches directly, so that the
    // kernels' one-time set-up (attributes, lock arrays) happens outside the capture; profiled
    // iterations launch directly too (they fence between phases), and so does a run with a Kokkos
    // tool loaded (tools fence around every launch, which a capture cannot contain).
    rollout_graph_->run(space_, [&] {
      for (int t = 0; t < T_; ++t) {
        act(t, 0, N_);
        env_->step(space_, actions_of(t), step_outputs(t));
      }
    });
    mpi::progress().beat();
  } else {
    for (int t = 0; t < T_; ++t) {
      act(t, 0, N_);
      mark(Phase::Inference);
      env_->step(space_, actions_of(t), step_outputs(t));
      mark(Phase::EnvStep);
      mpi::progress().beat();  // a long rollout of host-simulated envs is progress, step by step
    }
    rollout_warm_ = true;
  }
  mark(Phase::EnvStep);  // in groups: policy and envs overlap; the whole rollout counts as env steps
  finish_rollout();
  mark(Phase::Inference);
}

void PpoTrainer::serve_rollout(std::int64_t index, HostRollout& out) {
  serve_device_rollout(index, out, [&] { rollout_to_host(out); });
}

void PpoTrainer::begin_served_rollout(std::int64_t index) {
  iteration_ = index;  // the rollout's action noise: steps [index T, (index + 1) T) of every env
  begin_iteration();
}

void PpoTrainer::rollout_to_host(HostRollout& out) {
  out.obs = to_host(obs_);
  out.final_obs = to_host(final_obs_);
  out.actions = to_host(actions_);
  out.logp = to_host(logp_);
  out.values = to_host(values_);
  out.rewards = to_host(rewards_);
  out.terminated = to_host(terminated_);
  out.truncated = to_host(truncated_);
}

void PpoTrainer::end_served_rollout() {
  next_rollout_start();
  space_.fence();
}

std::vector<DeviceRollout::Array> PpoTrainer::rollout_arrays() const {
  const std::size_t T = std::size_t(T_), N = std::size_t(N_);
  const auto array = [&](const auto& v, std::size_t steps, std::size_t width) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    GMI_REQUIRE(v.extent(0) == steps * N * width, "PPO: a rollout array of another size");
    return DeviceRollout::Array{reinterpret_cast<std::byte*>(v.data()), steps, N * width * sizeof(V)};
  };
  const std::size_t od = std::size_t(od_), ad = std::size_t(ad_);
  return {array(obs_, T + 1, od),    array(final_obs_, T, od), array(actions_, T, ad),
          array(logp_, T, 1),        array(values_, T, 1),     array(rewards_, T, 1),
          array(terminated_, T, 1),  array(truncated_, T, 1)};
}

std::optional<DeviceRollout> PpoTrainer::device_rollout() { return DeviceRollout{space_, rollout_arrays()}; }

void PpoTrainer::serve_device_rollout(std::int64_t index, HostRollout& out, const std::function<void()>& pack) {
  begin_served_rollout(index);
  rollout();
  out.episodes = env_->take_episode_stats(space_);
  pack();
  end_served_rollout();
}

void PpoTrainer::begin_device_rollout() { begin_iteration(); }

IterationMetrics PpoTrainer::learn_device_rollout(const HostRollout& in, double time_rollout) {
  finish_rollout();
  return learn(in.episodes, time_rollout);
}

IterationMetrics PpoTrainer::learn_rollout(const HostRollout& in, double time_rollout) {
  rollout_from_host(in);
  return learn(in.episodes, time_rollout);
}

void PpoTrainer::rollout_from_host(const HostRollout& in) {
  begin_iteration();
  to_device(obs_, in.obs, "a served rollout's observations");
  to_device(final_obs_, in.final_obs, "a served rollout's final observations");
  to_device(actions_, in.actions, "a served rollout's actions");
  to_device(logp_, in.logp, "a served rollout's log-probabilities");
  to_device(values_, in.values, "a served rollout's values");
  to_device(rewards_, in.rewards, "a served rollout's rewards");
  to_device(terminated_, in.terminated, "a served rollout's terminations");
  to_device(truncated_, in.truncated, "a served rollout's truncations");
  finish_rollout();
}

void PpoTrainer::set_policy(const std::vector<float>& params, const std::vector<double>& obs_rms) {
  to_device(params_, params, "the published parameters");
  auto st = obs_rms_.state();
  to_device(st, obs_rms, "the published observation statistics");
  act_frag_ready_ = false;
  space_.fence();
}

std::vector<double> PpoTrainer::acting_state_host() const { return to_host(obs_rms_.state()); }

View1<float> PpoTrainer::start_obs() const {
  return Kokkos::subview(obs_, std::make_pair(std::size_t(0), std::size_t(N_) * od_));  // step 0's rows
}

std::vector<float> PpoTrainer::start_obs_host() const { return to_host(start_obs()); }

void PpoTrainer::set_start_obs(const std::vector<float>& obs) {
  to_device(start_obs(), obs, "the observations a rollout starts from");
}

std::vector<envs::StateArray> PpoTrainer::env_state() const {
  space_.fence();
  return env_->save_state(space_);
}

void PpoTrainer::set_env_state(const std::vector<envs::StateArray>& state) {
  env_->load_state(space_, state);
  space_.fence();
}

void PpoTrainer::next_rollout_start() {
  // The last observation starts the next rollout.
  const std::size_t row = std::size_t(T_) * N_ * od_;
  Kokkos::deep_copy(space_, Kokkos::subview(obs_, std::make_pair(std::size_t(0), std::size_t(N_) * od_)),
                    Kokkos::subview(obs_, std::make_pair(row, row + std::size_t(N_) * od_)));
}

float* PpoTrainer::obs_at(int t) const { return obs_.data() + std::size_t(t) * N_ * od_; }

const float* PpoTrainer::actions_at(int t) const {
  return layout_.continuous() ? env_actions_.data() : actions_.data() + std::size_t(t) * N_ * ad_;
}

void PpoTrainer::finish_rollout() {
  act_frag_ready_ = false;  // the update changes the weights
  // V(s_T) for the bootstrap at the end of the rollout
  const float* in = policy_input(obs_.data() + std::size_t(T_) * N_ * od_, N_);
  nn::ac_forward(space_, layout_, params_.data(), in, N_, roll_, false, true);
  Kokkos::deep_copy(space_, last_values_,
                    Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        nn::ac_values(layout_, roll_), N_));
}

void PpoTrainer::scale_rewards() {
  // Gymnasium NormalizeReward: divide by the std of the running discounted return.  The return
  // is accumulated per env through the rollout (reset at episode ends) and the statistics are
  // updated with this rollout before its rewards are scaled.
  const int T = T_, N = N_;
  const float gamma = float(cfg_.section<PpoConfig>().gamma);
  auto acc = return_acc_;
  auto rew = rewards_;
  auto term = terminated_;
  auto trunc = truncated_;
  auto disc = advantages_;  // scratch: the discounted return at every step
  Kokkos::parallel_for(
      "gmi::ppo::discounted_return", Range(space_, 0, N), KOKKOS_LAMBDA(const int e) {
        float g = acc(e);
        for (int t = 0; t < T; ++t) {
          const std::size_t j = std::size_t(t) * N + e;
          g = g * gamma + rew(j);
          disc(j) = g;
          if (term(j) || trunc(j)) g = 0.0f;
        }
        acc(e) = g;
      });
  ret_rms_.update(space_, advantages_.data(), std::int64_t(T) * N, host_sum());
  auto st = ret_rms_.state();
  const float clip = float(cfg_.section<PpoConfig>().reward_clip);
  Kokkos::parallel_for(
      "gmi::ppo::scale_rewards", Range(space_, 0, T * N), KOKKOS_LAMBDA(const int j) {
        const float scale = float(1.0 / math::sqrt(st(1) + 1e-8));
        rew(j) = math::clamp(rew(j) * scale, -clip, clip);
      });
}

void PpoTrainer::bootstrap_truncated() {
  // Truncated (not terminated) transitions: r += gamma * V(final_obs).  Compact their indices,
  // then evaluate the critic on those final observations in chunks of N.
  auto term = terminated_;
  auto trunc = truncated_;
  auto idx = index_;
  int count = 0;
  Kokkos::parallel_scan(
      "gmi::ppo::truncated_index", Range(space_, 0, T_ * N_),
      KOKKOS_LAMBDA(const int j, int& upd, const bool final) {
        if (trunc(j) && !term(j)) {
          if (final) idx(upd) = j;
          ++upd;
        }
      },
      count);
  const int od = od_;
  const float gamma = float(cfg_.section<PpoConfig>().gamma);
  auto fin = final_obs_;
  auto gathered = policy_in_;
  auto rew = rewards_;
  const bool norm = cfg_.section<PpoConfig>().normalize_obs;
  auto st = obs_rms_.state();
  const float clip = float(cfg_.section<PpoConfig>().obs_clip);
  for (int c0 = 0; c0 < count; c0 += N_) {
    const int n = std::min(N_, count - c0);
    Kokkos::parallel_for(
        "gmi::ppo::gather_final_obs", Range(space_, 0, n * od), KOKKOS_LAMBDA(const int k) {
          const int r = k / od, d = k % od;
          const float x = fin(std::size_t(idx(c0 + r)) * od + d);
          gathered(k) = norm ? rl::normalize_feature(x, st.data(), od, d, clip) : x;
        });
    nn::ac_forward(space_, layout_, params_.data(), gathered.data(), n, roll_, false, true);
    const float* v = nn::ac_values(layout_, roll_);
    Kokkos::parallel_for(
        "gmi::ppo::add_bootstrap", Range(space_, 0, n),
        KOKKOS_LAMBDA(const int r) { rew(idx(c0 + r)) += gamma * v[r]; });
  }
}

rl::PpoLossArgs<float> PpoTrainer::loss_args() const {
  rl::PpoLossArgs<float> la;
  la.B = B_;
  la.num_actions = layout_.num_actions;
  la.categories = categories_;
  la.act_dim = ad_;
  la.clip_coef = float(cfg_.section<PpoConfig>().clip_coef);
  la.ent_coef = float(cfg_.section<PpoConfig>().ent_coef);
  la.vf_coef = float(cfg_.section<PpoConfig>().vf_coef);
  la.clip_vloss = cfg_.section<PpoConfig>().clip_vloss;
  la.norm_adv = cfg_.section<PpoConfig>().norm_adv;
  la.log_std = layout_.continuous() ? params_.data() + layout_.log_std : nullptr;
  la.actions = mb_actions_.data();
  la.old_logp = mb_logp_.data();
  la.adv = mb_adv_.data();
  la.returns = mb_returns_.data();
  la.old_values = mb_values_.data();
  la.adv_moments = adv_moments_.data();
  la.d_actor_out = d_actor_.data();
  la.d_values = d_values_.data();
  la.d_log_std_terms = d_log_std_.data();
  return la;
}

void PpoTrainer::fused_gradients(const rl::Permutation& perm, std::uint32_t base, int k, float* grads,
                                 const rl::PpoLossArgs<float>& la) {
  rl::FusedUpdateArgs fa;
  fa.B = B_;
  fa.perm = perm;
  fa.base = base;
  fa.params = params_.data();
  fa.obs = obs_.data();
  fa.obs_stats = cfg_.section<PpoConfig>().normalize_obs ? obs_rms_.state().data() : nullptr;
  fa.obs_clip = float(cfg_.section<PpoConfig>().obs_clip);
  fa.actions = actions_.data();
  fa.logp = logp_.data();
  fa.adv = advantages_.data();
  fa.returns = returns_.data();
  fa.values = values_.data();
  fa.adv_moments = adv_moments_.data();
  fa.norm_adv = la.norm_adv;
  fa.clip_vloss = la.clip_vloss;
  fa.clip_coef = la.clip_coef;
  fa.ent_coef = la.ent_coef;
  fa.vf_coef = la.vf_coef;
  fa.tf32 = cfg_.device.matmul == "tf32";
  fa.grads = grads;
  fa.stats = loss_stats_.data() + k;
  if (la.norm_adv) rl::permuted_moments(space_, advantages_.data(), perm, base, B_, adv_moments_.data());
  fused_.gradients(space_, fa);
  mark(Phase::UpdateFused);
}

void PpoTrainer::layered_gradients(const rl::Permutation& perm, std::uint32_t base, int k, float* grads,
                                   rl::PpoLossArgs<float> la) {
  const int B = B_, od = od_, ad = ad_;
  const bool norm = cfg_.section<PpoConfig>().normalize_obs;
  const float clip = float(cfg_.section<PpoConfig>().obs_clip);
  auto st = obs_rms_.state();
  auto obs = obs_;
  auto act = actions_;
  auto logp = logp_;
  auto adv = advantages_;
  auto ret = returns_;
  auto val = values_;
  auto mbo = mb_obs_;
  auto mba = mb_actions_;
  auto mbl = mb_logp_;
  auto mbadv = mb_adv_;
  auto mbr = mb_returns_;
  auto mbv = mb_values_;
  // One thread per (sample, 4 features): a warp reads and writes consecutive 16-byte groups of a
  // row (one thread per sample strided its stores by obs_dim, a sector per float at Humanoid's
  // 376), with 32-bit index arithmetic where the minibatch allows (the kernel before, a thread
  // per float with a 64-bit division each, took 171 us a call at 65536 x 376 on an H100: 98 MB).
  const int G = (std::max(od, ad) + 3) / 4;
  const bool vec = od % 4 == 0;  // a row starts on a 16-byte boundary (Kokkos aligns the buffers)
  auto gather = KOKKOS_LAMBDA(const int i, const int g) {
    const std::uint32_t j = perm(base + i);
    const int d0 = 4 * g;
    if (d0 < od) {
      if (vec) {
        auto x = reinterpret_cast<const Float4*>(obs.data() + std::size_t(j) * od)[g];
        if (norm) {
          x.v[0] = rl::normalize_feature(x.v[0], st.data(), od, d0, clip);
          x.v[1] = rl::normalize_feature(x.v[1], st.data(), od, d0 + 1, clip);
          x.v[2] = rl::normalize_feature(x.v[2], st.data(), od, d0 + 2, clip);
          x.v[3] = rl::normalize_feature(x.v[3], st.data(), od, d0 + 3, clip);
        }
        reinterpret_cast<Float4*>(mbo.data() + std::size_t(i) * od)[g] = x;
      } else {
        for (int d = d0; d < od && d < d0 + 4; ++d) {
          const float x = obs(std::size_t(j) * od + d);
          mbo(std::size_t(i) * od + d) = norm ? rl::normalize_feature(x, st.data(), od, d, clip) : x;
        }
      }
    }
    for (int d = d0; d < ad && d < d0 + 4; ++d) mba(std::size_t(i) * ad + d) = act(std::size_t(j) * ad + d);
    if (g == 0) {
      mbl(i) = logp(j);
      mbadv(i) = adv(j);
      mbr(i) = ret(j);
      mbv(i) = val(j);
    }
  };
  const std::int64_t n = std::int64_t(B) * G;
  if (n <= std::numeric_limits<int>::max()) {
    Kokkos::parallel_for(
        "gmi::ppo::gather_minibatch", Range(space_, 0, int(n)),
        KOKKOS_LAMBDA(const int k) { gather(k / G, k - k / G * G); });
  } else {
    Kokkos::parallel_for(
        "gmi::ppo::gather_minibatch", Range64(space_, 0, n),
        KOKKOS_LAMBDA(const std::int64_t k) { gather(int(k / G), int(k % G)); });
  }
  minibatch_gradients(k, grads, la);
}

void PpoTrainer::minibatch_gradients(int k, float* grads, rl::PpoLossArgs<float> la) {
  const int B = B_, ad = ad_;
  const float* params = params_.data();
  nn::ac_forward(space_, layout_, params, mb_obs_.data(), B, mb_nets_, true, true);
  mark(Phase::UpdateForward);
  la.actor_out = nn::ac_policy_out(layout_, mb_nets_);
  la.values = nn::ac_values(layout_, mb_nets_);
  if (vtrace_) vtrace_targets(la);
  if (la.norm_adv) rl::moments(space_, mb_adv_.data(), B, adv_moments_.data());
  rl::ppo_loss(space_, la, loss_stats_.data() + k);
  nn::ac_backward(space_, layout_, params, mb_obs_.data(), B, mb_nets_, d_actor_.data(), d_values_.data(), grads);
  if (layout_.continuous())
    blas::gemv<float>(space_, blas::Op::N, ad, B, 1.0f, d_log_std_.data(), ad, ones_.data(), 0.0f,
                      grads + layout_.log_std);
  mark(Phase::UpdateBackward);
}

bool PpoTrainer::kl_above_target(int k) {
  // CleanRL: stop the epochs when the last minibatch's approximate KL exceeds the target.
  rl::LossStats last;
  Kokkos::deep_copy(space_, Kokkos::View<rl::LossStats, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&last),
                    Kokkos::View<rl::LossStats, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        loss_stats_.data() + (k - 1)));
  space_.fence();
  mark(Phase::Other);
  double kl = last.approx_kl / B_;
  if (data_parallel()) {  // every GMI must stop at the same minibatch
    reducer_->allreduce_sum_host(&kl, 1);
    kl /= reducer_->size();
  }
  return kl > *cfg_.section<PpoConfig>().target_kl;
}

void PpoTrainer::minibatch_update(const rl::Permutation& perm, int mb, int k, float* grads,
                                  const rl::PpoLossArgs<float>& la, const optim::AdamArgs& aa,
                                  const optim::AdamCounter& counter, CapturedSequence* graph) {
  if (vtrace_)
    vtrace_gradients(perm, mb, k, grads, la);
  else if (fused_update_)
    fused_gradients(perm, std::uint32_t(mb) * B_, k, grads, la);
  else
    layered_gradients(perm, std::uint32_t(mb) * B_, k, grads, la);
  const rl::LossStats* ls = loss_stats_.data() + k;
  optimizer_step(space_, {params_.data(), grads, adam_m_.data(), adam_v_.data(), layout_.num_params, norm_sum_.data()},
                 inject_nonfinite_, KOKKOS_LAMBDA() { return ls->pg + ls->v + ls->entropy; }, reducer_,
                 grad_norms_.data() + k, aa, phases_, &counter, graph);
}

void PpoTrainer::update(IterationMetrics& m) {
  const int E = cfg_.section<PpoConfig>().update_epochs, M = cfg_.section<PpoConfig>().num_minibatches;
  // APPO permutes whole trajectories (envs), PPO samples
  const std::uint32_t n = vtrace_ ? std::uint32_t(N_) : std::uint32_t(T_) * N_;
  // Gradients go where the reducer reads them without a copy, when it has such a buffer.
  float* grads = reducer_ && reducer_->buffer() ? reducer_->buffer() : grads_.data();
  const rl::PpoLossArgs<float> la = loss_args();
  // This iteration's shuffles (4 keys an epoch, Permutation(n, seed, iteration E + epoch)'s) and
  // learning rate go where the launches read them, so that a graph captured in an earlier
  // iteration replays with them.
  {
    auto keys = update_keys_;
    auto lr = update_lr_;
    const std::uint64_t seed = std::uint64_t(cfg_.train.seed), first = std::uint64_t(iteration_) * E;
    const double lr_now = lr_;
    Kokkos::parallel_for(
        "gmi::ppo::iteration_constants", Range(space_, 0, E), KOKKOS_LAMBDA(const int e) {
          rl::Permutation::make_keys(seed, first + std::uint64_t(e), &keys(4 * e));
          if (e == 0) lr(0) = lr_now;
        });
  }
  optim::AdamArgs aa;
  aa.eps = cfg_.section<PpoConfig>().adam_eps;
  aa.max_grad_norm = cfg_.section<PpoConfig>().max_grad_norm;
  const optim::AdamCounter counter{adam_count_.data(), adam_coeffs_.data(), update_lr_.data()};
  // The first update launches directly (the kernels' one-time set-up and timings stay outside a
  // capture), as do profiled ones, one with a Kokkos tool loaded, and one with an injected fault
  // (a capture would keep it).
  const bool replay = update_graphs_apply() && update_warm_ && !phases_ && !inject_nonfinite_ &&
                      !Kokkos::Tools::profileLibraryLoaded();
  int k = 0;
  for (int epoch = 0; epoch < E; ++epoch) {
    const rl::Permutation perm = rl::Permutation::stored(n, update_keys_.data() + 4 * epoch);
    CapturedSequence* graph = replay ? update_graphs_[std::size_t(epoch)].get() : nullptr;
    const int k0 = k;
    auto minibatches = [&] {
      for (int mb = 0; mb < M; ++mb) {
        minibatch_update(perm, mb, k0 + mb, grads, la, aa, counter, graph);
        if (!graph) mpi::progress().minibatch(epoch, mb), mpi::progress().beat();
      }
    };
    if (graph) {
      mpi::progress().minibatch(epoch, 0);  // a replayed epoch is one launch (a chain, with reductions)
      graph->run(space_, minibatches);
      mpi::progress().beat();
    } else {
      minibatches();
    }
    k += M;
    if (cfg_.section<PpoConfig>().target_kl && kl_above_target(k)) break;
  }
  update_warm_ = true;
  m.updates = k;
}

void PpoTrainer::begin_iteration() {
  if (paths_open_) choose_paths();
  const double frac = cfg_.section<PpoConfig>().anneal_lr ? 1.0 - double(iteration_) / double(cfg_.num_iterations) : 1.0;
  lr_ = frac * cfg_.section<PpoConfig>().learning_rate;
  // The weights are fixed for the rollout: the fused step's fragment copies of them are written
  // once, before it (single-agent rollouts and the roles of a game alike), until finish_rollout.
  act_frag_ready_ = act_frag_.size() > 0;
  if (act_frag_ready_) rl::fused_act_prepare(space_, layout_, params_.data(), act_frag_.data());
}

IterationMetrics PpoTrainer::iterate() {
  const auto t0 = Clock::now();
  begin_iteration();
  mpi::progress().phase("rollout");
  rollout();
  space_.fence();
  const double time_rollout = seconds_since(t0);
  return learn(env_->take_episode_stats(space_), time_rollout);
}

IterationMetrics PpoTrainer::learn(const envs::EpisodeStats& es, double time_rollout) {
  IterationMetrics m;
  m.learning_rate = lr_;
  m.time_rollout = time_rollout;
  mpi::progress().phase("update");
  const auto t1 = Clock::now();
  m.episode_return_sum = es.return_sum;
  m.episode_length_sum = es.length_sum;
  m.episodes = es.count;
  m.episode_term_sums = es.term_sums;
  if (frozen_) {
    // A role that acts without learning (ppo.frozen_roles): the rollout's last observation
    // starts the next one; weights, optimiser and normalisers stay.
    next_rollout_start();
    space_.fence();
    m.losses.assign(loss_columns().size(), std::nan(""));
    m.grad_norm = std::nan("");
    m.time_update = seconds_since(t1);
    ++iteration_;
    m.iteration = iteration_;
    return m;
  }

  mark(Phase::Other);
  if (cfg_.section<PpoConfig>().normalize_reward) scale_rewards();
  if (cfg_.section<PpoConfig>().bootstrap_truncated) bootstrap_truncated();
  rl::gae<float>(space_, T_, N_, rewards_.data(), terminated_.data(), truncated_.data(),
                 values_.data(), last_values_.data(), float(cfg_.section<PpoConfig>().gamma),
                 float(cfg_.section<PpoConfig>().gae_lambda), advantages_.data(), returns_.data());

  // explained variance of the rollout's value predictions
  double explained_variance = 0;
  {
    auto ret = returns_;
    auto val = values_;
    double sy = 0, syy = 0, sd = 0, sdd = 0;
    Kokkos::parallel_reduce(
        "gmi::ppo::explained_variance", Range(space_, 0, T_ * N_),
        KOKKOS_LAMBDA(const int j, double& a, double& b, double& c, double& d) {
          const double y = ret(j), r = ret(j) - val(j);
          a += y, b += y * y, c += r, d += r * r;
        },
        sy, syy, sd, sdd);
    const double n = double(T_) * N_;
    const double vy = syy / n - (sy / n) * (sy / n), vd = sdd / n - (sd / n) * (sd / n);
    explained_variance = vy == 0 ? std::nan("") : 1.0 - vd / vy;
  }

  mark(Phase::Advantages);
  update(m);
  inject_nonfinite_ = false;

  // Observation statistics learn from this rollout only after the update used the frozen ones.
  if (cfg_.section<PpoConfig>().normalize_obs) obs_rms_.update(space_, obs_.data(), std::int64_t(T_) * N_, host_sum());
  next_rollout_start();

  auto stats = Kokkos::create_mirror_view_and_copy(HostSpace(), loss_stats_);
  auto norms = Kokkos::create_mirror_view_and_copy(HostSpace(), grad_norms_);
  Kokkos::deep_copy(space_, Kokkos::View<std::int64_t, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&adam_step_),
                    Kokkos::View<std::int64_t, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(adam_count_.data()));
  space_.fence();
  mark(Phase::Other);
  mpi::check();  // a reduction that ran out on the device: end here, not with its garbage
  mpi::progress().beat();
  m.time_update = seconds_since(t1);
  // Skipped updates (non-finite gradient norm) are left out of the means.  They did not move the
  // weights, nor count as Adam steps (the count lives on the device: adam_count_).
  rl::LossStats sum;
  double gn = 0;
  int good = 0;
  for (int k = 0; k < m.updates; ++k) {
    if (!std::isfinite(norms(k))) {
      ++m.skipped_updates;
      ++nonfinite_streak_;
      continue;
    }
    nonfinite_streak_ = 0;
    sum += stats(k);
    gn += norms(k);
    ++good;
  }
  m.nonfinite_streak = nonfinite_streak_;
  const double samples = good > 0 ? double(good) * B_ : std::nan("");
  m.losses = {sum.pg / samples, sum.v / samples, sum.entropy / samples, sum.approx_kl / samples,
              sum.clipfrac / samples, explained_variance};
  m.grad_norm = good > 0 ? gn / good : std::nan("");
  ++iteration_;
  m.iteration = iteration_;
  return m;
}

}  // namespace gmi::algos
