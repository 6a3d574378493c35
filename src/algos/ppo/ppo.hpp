#pragma once
/// \file
/// \brief PPO (Schulman et al. 2017) with the meaning of CleanRL's hyperparameters, entirely on
/// the device: rollout -> advantages -> epochs of minibatch updates.  One instance is one GMI;
/// with several GMIs every minibatch gradient is averaged by a GradientReducer before the Adam
/// step, so all GMIs keep identical weights (data-parallel "holistic GMI").
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/graph.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/envs/vec_env.hpp"
#include "kernels/nn/actor_critic.hpp"
#include "kernels/optim/adam.hpp"
#include "kernels/rl/fused_update.hpp"
#include "kernels/rl/normalizer.hpp"
#include "kernels/rl/ppo_loss.hpp"
#include "kernels/rl/shuffle.hpp"
#include "mpi/gradient_reducer.hpp"
#include "src/algos/ppo/section.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"

namespace gmi::algos {

struct StateBuffers;  // src/algos/trainer_state.hpp

/// The actor-critic that `cfg`'s policy.* keys describe for an environment of spec `env`.
nn::ActorCriticSpec policy_spec(const config::Config& cfg, const envs::EnvSpec& env);
/// How a PPO actor of `cfg` acts on envs of `spec` (normalisation, clipping, fused kernels,
/// precision), for serving, eval and the serving bench.
ActorOptions actor_options(const config::Config& cfg, const envs::EnvSpec& spec);
/// Whether `cfg` (device.fused_kernels, and the device) asks for the fused kernels where they fit.
bool fused_wanted(const config::Config& cfg);


class PpoTrainer final : public Trainer, public ServedLearning {
 public:
  /// \param env_offset global index of this GMI's first environment
  /// \param reducer    gradient averaging over GMIs (nullptr: a single GMI)
  PpoTrainer(const config::Config& cfg, std::uint64_t env_offset,
             mpi::GradientReducer* reducer = nullptr, EnvPtr env = nullptr);
  /// \brief A learner without environments: one role of a multi-agent game
  /// (MultiAgentPpoTrainer steps the game and drives begin_iteration, act, finish_rollout and
  /// learn).  `rows` samples per step of `role`'s spaces; `row_offset` is the global index of row 0
  /// in the role's action-noise stream; `init_seed` draws the initial weights.
  PpoTrainer(const config::Config& cfg, const envs::EnvSpec& role, int rows, std::uint64_t row_offset,
             std::uint64_t init_seed, mpi::GradientReducer* reducer);

  /// One rollout of num_steps per env and the update that follows.
  IterationMetrics iterate() override;

  /// The policy's parameter layout for `cfg` (sizes gradient buffers before a trainer exists).
  static nn::ActorCriticLayout policy_layout(const config::Config& cfg);
  /// What a trainer for `cfg` will allocate, per GMI.
  static MemoryNeeds memory_needs(const config::Config& cfg);
  /// What a learner of `rows` samples per step on `spec` allocates (envs not counted).
  static MemoryNeeds memory_needs(const config::Config& cfg, const envs::EnvSpec& spec, int rows);

  std::int64_t iteration() const override { return iteration_; }
  std::int64_t updates() const override { return adam_step_; }
  const nn::ActorCriticLayout& layout() const { return layout_; }
  const envs::EnvSpec& env_spec() const override { return spec_; }
  std::vector<std::string> loss_columns() const override;
  /// Which kernels run: "fused" (rollout and update), "layered", or a mix.
  std::string kernels() const override;
  /// What device.fused_kernels: auto measured to choose them (kernel_trials' format in
  /// trainer.hpp); empty before the first iteration and where auto does not choose (host builds,
  /// on, off, bf16); "none: ..." where a resumed run took its checkpoint's kernels.
  std::string kernel_trials() const override { return trials_; }
  /// Whether the update runs the fused kernels (rl::FusedUpdate) now.
  bool fused_update() const { return fused_update_; }
  std::string describe() const override;
  /// Parameters on the host (tests, checksums, checkpoints).
  std::vector<float> params_host() const override;
  /// Observation then return normaliser state ([mean | var | count] each) on the host.
  std::vector<double> normalizer_state_host() const;

  TrainerState save_state() const override;
  void load_state(const TrainerState& s) override;
  void load_shared_state(const TrainerState& s, std::uint64_t first_episode) override;
  void inject_nonfinite_gradient() override { inject_nonfinite_ = true; }
  /// device.graphs: the update epochs captured so far (replayed from then on; 0 on host builds).
  int update_graphs_captured() const {
    int n = 0;
    for (const auto& g : update_graphs_) n += g->captured();
    return n;
  }
  bool profile_phases(PhaseClock* clock) override {
    phases_ = clock;
    return true;
  }

  // ---- an iteration in phases (a multi-agent trainer drives them for its roles) ----
  /// The learning rate of this iteration (annealing) and the fused rollout step's fragment copies
  /// of the weights; on the first iteration of a run with device.fused_kernels: auto, the timing
  /// of the kernel paths that chooses them (choose_paths).
  void begin_iteration();
  /// Where step t of the rollout writes (every row), and the rows' observations at step t.
  envs::StepOutputs step_outputs(int t) const;
  float* obs_at(int t) const;
  const float* actions_at(int t) const;
  /// Actions, log-probabilities and values of rows [lo, hi) at step t of the rollout (act_step).
  void act(int t, int lo, int hi);
  /// After the last step: V(s_T) for the bootstrap (the weights' fragment copies expire).
  void finish_rollout();
  /// Advantages, the epochs of minibatch updates and the statistics, given the episodes that
  /// ended during the rollout and how long it took.
  IterationMetrics learn(const envs::EpisodeStats& episodes, double time_rollout);
  /// A role that acts but does not learn (ppo.frozen_roles).
  void freeze() { frozen_ = true; }
  bool frozen() const { return frozen_; }

  // ---- mapping.template async and ea-t (src/gmi/async_training.hpp): ServedLearning ----
  ServedLearning* served_learning() override { return this; }
  /// A serving GMI acts and does not learn (freeze()).
  void prepare_serving(int) override { freeze(); }
  void serve_rollout(std::int64_t index, HostRollout& out) override;
  /// begin_iteration(), the rollout into the rollout storage with V(s_T) from this trainer's
  /// critic, then learn().
  IterationMetrics learn_rollout(const HostRollout& in, double time_rollout) override;
  void set_policy(const std::vector<float>& params, const std::vector<double>& obs_rms) override;
  /// The observation statistics ([mean | var | count]).
  std::vector<double> acting_state_host() const override;
  /// acting_state_host()'s length, without reading the device.
  std::size_t acting_state_size() const { return obs_rms_.state().extent(0); }
  std::vector<float> start_obs_host() const override;
  void set_start_obs(const std::vector<float>& obs) override;
  std::vector<envs::StateArray> env_state() const override;
  void set_env_state(const std::vector<envs::StateArray>& state) override;
  /// Rollout number `index` of the run begins (its action noise: steps [index T, (index + 1) T)
  /// of every row): serve_rollout's, and a multi-agent serving GMI's roles'.
  void begin_served_rollout(std::int64_t index);
  /// The rollout just made into `out` (not its episodes); a serving rollout's `pack` (the next
  /// rollout's start is written after it).
  void rollout_to_host(HostRollout& out);
  /// begin_iteration(), `in` as this iteration's rollout and V(s_T) from this trainer's critic:
  /// learn() follows (learn_rollout's first half).
  void rollout_from_host(const HostRollout& in);
  /// The device transport: its rollout storage in place (obs [T + 1][N][obs], final_obs,
  /// actions, logp, values, rewards, terminated, truncated: HostRollout's arrays and order).
  std::optional<DeviceRollout> device_rollout() override;
  std::vector<DeviceRollout::Array> rollout_arrays() const;
  void serve_device_rollout(std::int64_t index, HostRollout& out, const std::function<void()>& pack) override;
  /// begin_iteration() (its first may time the kernels on zeroed rollout arrays: choose_paths).
  void begin_device_rollout() override;
  /// learn_rollout() with the rollout in place since begin_device_rollout(): V(s_T), learn().
  IterationMetrics learn_device_rollout(const HostRollout& in, double time_rollout) override;
  /// After a served rollout has been read: its last observation starts the next (fenced);
  /// serve_device_rollout's, and a multi-agent serving GMI's roles'.
  void end_served_rollout();

  // ---- phases that launch device lambdas: public, as CUDA requires of their enclosing functions ----
  void bootstrap_truncated();
  void scale_rewards();
  void update(IterationMetrics& m);
  /// Minibatch `mb` of an epoch shuffled by `perm`: its gradients (loss statistics into
  /// loss_stats_[k]) and the optimiser step that follows, whose reduction over GMIs runs between
  /// the graphs of `graph` where the step is being captured into it.
  void minibatch_update(const rl::Permutation& perm, int mb, int k, float* grads, const rl::PpoLossArgs<float>& la,
                        const optim::AdamArgs& aa, const optim::AdamCounter& counter, CapturedSequence* graph);
  /// One minibatch's gradient into `grads` and its loss statistics into loss_stats_[k], gathered
  /// and run through the layered kernels (fused_gradients: through the fused ones).
  void layered_gradients(const rl::Permutation& perm, std::uint32_t base, int k, float* grads,
                         rl::PpoLossArgs<float> la);
  /// APPO (algo: appo, src/algos/appo/): minibatch `mb` of the envs' permutation `envs` as whole
  /// trajectories (env.num_envs / ppo.num_minibatches envs x num_steps steps), gathered with each
  /// env's last observation; its V-trace targets come from the current networks (vtrace_targets).
  void vtrace_gradients(const rl::Permutation& envs, int mb, int k, float* grads, rl::PpoLossArgs<float> la);

 private:
  /// The rollout of an iteration: act() and the env step, num_steps times.
  void rollout();
  /// One minibatch's gradient into `grads` and its loss statistics into loss_stats_[k] through the
  /// fused kernels (rl::FusedUpdate).
  void fused_gradients(const rl::Permutation& perm, std::uint32_t base, int k, float* grads,
                       const rl::PpoLossArgs<float>& la);
  const float* policy_input(const float* raw_obs, int n);
  /// obs_'s step-0 rows: the observations the next rollout starts from ([N][obs_dim]).
  View1<float> start_obs() const;
  /// The layered kernels on the minibatch in mb_*: forward passes, (APPO) its V-trace targets,
  /// the loss, backward passes; the gradient into `grads`, loss statistics into loss_stats_[k].
  void minibatch_gradients(int k, float* grads, rl::PpoLossArgs<float> la);
  /// APPO: the minibatch's V-trace value targets (into mb_returns_) and policy-gradient advantages
  /// (mb_adv_) from the current critic's values, its value of each env's last observation
  /// (gathered into policy_in_) and the ratios of the current actor's log-probabilities to the
  /// rollout's (src/algos/appo/appo.cpp).
  void vtrace_targets(const rl::PpoLossArgs<float>& la);
  /// The buffers save_state and load_state copy (src/algos/trainer_state.hpp).
  StateBuffers state_buffers() const;
  /// Everything the two constructors share (spec_, N_, env_offset_ set).
  void init(std::uint64_t init_seed);
  /// Runs the rollout's policy step and the update's gradients on the kernels given, allocating
  /// what they need; `both`: keeps both paths' buffers (auto, until choose_paths has measured).
  void use_paths(bool fused_rollout, bool fused_update, bool both = false);
  /// device.fused_kernels: auto.  Times each candidate path of the rollout's policy step and of
  /// the update's gradients on this GMI's buffers (no state changes: the rollout storage is
  /// rewritten by the rollout that follows, actions draw counter-based random numbers), sums the
  /// times over the data-parallel GMIs so that all choose alike, and keeps the faster paths.
  void choose_paths();
  /// Seconds per iteration of the rollout's policy steps (T of them), or of the update's
  /// gradients (epochs x minibatches), on the fused or the layered kernels: the best of two
  /// timed passes after a warm-up one, or the warm-up alone where it already lost to `rival`
  /// (the other path's seconds per iteration) by far.
  double time_policy_steps(bool fused, double rival);
  double time_gradients(bool fused, double rival);
  void next_rollout_start();
  bool data_parallel() const;
  /// A phase boundary (profiled iterations only: fences).
  void mark(Phase p) {
    if (phases_) phases_->mark(space_, p);
  }
  rl::RunningMeanStd::HostSum host_sum() const;
  /// The loss's arguments for a minibatch in mb_* (the layered path fills in the networks' outputs).
  rl::PpoLossArgs<float> loss_args() const;
  /// ppo.target_kl: the mean approximate KL of minibatch k - 1 over GMIs exceeds it (fences).
  bool kl_above_target(int k);

  config::Config cfg_;
  ExecSpace space_;
  std::unique_ptr<envs::VecEnvBase> env_;  ///< null for a multi-agent role
  envs::EnvSpec spec_;
  mpi::GradientReducer* reducer_;
  std::uint64_t env_offset_;
  nn::ActorCriticLayout layout_;
  int N_, T_, od_, ad_, B_;
  std::int64_t iteration_ = 0;
  std::int64_t adam_step_ = 0;
  int nonfinite_streak_ = 0;
  bool inject_nonfinite_ = false;
  bool frozen_ = false;
  PhaseClock* phases_ = nullptr;
  /// device.graphs: the rollout's launches as one CUDA graph; its global step base lives on the
  /// device (step_base_), so the replayed launches draw this iteration's random numbers.
  std::unique_ptr<CapturedSequence> rollout_graph_;
  View1<std::uint64_t> step_base_;
  bool rollout_warm_ = false;  ///< a rollout ran directly (the graph is captured from the next one)
  /// device.graphs: each epoch of the update (its minibatches' gradients and optimiser steps) as
  /// CUDA graphs, replayed with the iteration's permutation keys (update_keys_, 4 an epoch) and
  /// learning rate (update_lr_) read from the device, as direct launches read them too.
  std::vector<std::unique_ptr<CapturedSequence>> update_graphs_;
  bool update_graphs_always_ = false;  ///< device.graphs: on (auto: with the layered update only)
  /// Whether the update's epochs replay graphs: device.graphs on, or auto (one GMI, not bf16: what
  /// has run on a GPU) with the layered update kernels (on an H100 CartPole's 2x64 networks with the
  /// fused update ran 2.5-4.2 % fewer env-steps/s with it as a graph at 16,384 and 65,536 envs, one
  /// run each; SyntheticHumanoid 256x256 tf32 with the layered one 3-17 % more).
  bool update_graphs_apply() const { return !update_graphs_.empty() && (update_graphs_always_ || !fused_update_); }
  bool update_warm_ = false;  ///< an update ran directly (the graphs are captured from the next one)
  View1<std::uint32_t> update_keys_;
  View1<double> update_lr_;
  /// Adam's step count (adam_step_ is its copy at the end of an update) and bias corrections
  View1<std::int64_t> adam_count_;
  View1<double> adam_coeffs_;
  double lr_ = 0;

  // flat parameters, gradients, Adam moments
  View1<float> params_, grads_, adam_m_, adam_v_;
  // rollout storage, [T(+1)][N][...] with sample j = t * N + e
  View1<float> obs_, final_obs_, actions_, env_actions_, logp_, values_, rewards_, advantages_,
      returns_, last_values_, policy_in_, act_low_, act_high_, return_acc_;
  View1<std::uint8_t> terminated_, truncated_;
  View1<int> index_;
  // minibatch storage
  View1<float> mb_obs_, mb_actions_, mb_logp_, mb_adv_, mb_returns_, mb_values_, d_actor_,
      d_values_, d_log_std_;
  View1<rl::Moments> adv_moments_;
  View1<rl::LossStats> loss_stats_;  ///< one per minibatch update of the iteration
  View1<float> grad_norms_;          ///< one per minibatch update of the iteration
  View1<double> norm_sum_;           ///< the optimiser step's scratch for its norm
  nn::ActorCriticWorkspace roll_, mb_nets_;  ///< the rollout's and the layered update's passes
  rl::Categories categories_;                ///< the categorical head's groups
  bool fused_rollout_ = false, fused_update_ = false;
  /// device.fused_kernels: auto with a fused candidate, not yet timed (choose_paths) nor restored
  /// from a checkpoint (the counter `kernel_paths`)
  bool paths_open_ = false;
  /// auto chose the kernels (timed, or kept a checkpoint's): checkpoints record them (`kernel_paths`)
  bool paths_chosen_ = false;
  std::string trials_;  ///< kernel_trials()
  /// fragment-native copies of the tensor-core layers for the fused rollout step (GPUs with
  /// tensor cores; empty elsewhere), valid from the start of a rollout to its end (act_frag_ready_)
  View1<float> act_frag_;
  bool act_frag_ready_ = false;
  /// envs per group (env.batch_size, env.async_halves) with an environment that steps groups
  /// asynchronously; N_ when all envs step as one batch
  int group_ = 0;
  /// algo: appo: V-trace targets per minibatch of whole trajectories, on the layered update
  bool vtrace_ = false;
  View1<float> mb_rewards_, mb_logp_now_;  ///< APPO's minibatch rewards and current log-probabilities
  View1<std::uint8_t> mb_done_;            ///< APPO's minibatch episode ends
  rl::FusedUpdate fused_;  ///< the fused update's plan and workspace
  View1<float> ones_;
  rl::RunningMeanStd obs_rms_, ret_rms_;
};

}  // namespace gmi::algos
