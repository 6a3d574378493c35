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

#include "kernels/core/kokkos.hpp"
#include "kernels/envs/vec_env.hpp"
#include "kernels/nn/actor_critic.hpp"
#include "kernels/rl/fused_update.hpp"
#include "kernels/rl/normalizer.hpp"
#include "kernels/rl/ppo_loss.hpp"
#include "mpi/gradient_reducer.hpp"
#include "src/config/config.hpp"

namespace gmi::algos {

/// What one iteration measured on this GMI (episode sums are local; the driver aggregates).
struct IterationMetrics {
  std::int64_t iteration = 0;       ///< 1-based, after this iteration
  double episode_return_sum = 0;    ///< over episodes finished during the iteration
  double episode_length_sum = 0;
  double episodes = 0;
  std::vector<double> episode_term_sums;  ///< per reward term of the env (EnvSpec::reward_terms)
  double policy_loss = 0, value_loss = 0, entropy = 0, approx_kl = 0, clip_frac = 0;
  double explained_variance = 0;
  double grad_norm = 0;             ///< mean pre-clip global norm over the minibatch updates
  double learning_rate = 0;
  double time_rollout = 0;          ///< seconds (device work included)
  double time_update = 0;           ///< advantages + epochs
  int updates = 0;                  ///< minibatch updates done (target_kl can stop early)
  int skipped_updates = 0;          ///< updates skipped for a non-finite gradient or loss
  int nonfinite_streak = 0;         ///< skipped updates in a row, up to the end of this iteration
};

/// \brief Everything an exact resume needs (checkpoints).  The first group is identical on every
/// GMI (data parallelism); the second is this GMI's own.  Random numbers are counter-based
/// (kernels/core/random.hpp): their state is the seed, the iteration (action and shuffle
/// counters) and the per-env episode counters in `env`.
struct PpoState {
  std::int64_t iteration = 0;   ///< iterations done
  std::int64_t adam_step = 0;   ///< Adam's step count (bias correction)
  int nonfinite_streak = 0;     ///< skipped updates in a row so far
  std::vector<float> params, adam_m, adam_v;
  std::vector<double> obs_rms, ret_rms;  ///< RunningMeanStd state: [mean | var | count]
  // ---- this GMI ----
  std::vector<float> obs;         ///< [N][obs_dim] the observation the next rollout starts from
  std::vector<float> return_acc;  ///< [N] discounted return so far (reward normalisation)
  std::vector<envs::StateArray> env;
};

/// Memory a trainer takes (an estimate from the sizes that grow with the run: rollout storage,
/// workspaces, parameters; checked before anything is allocated).
struct MemoryNeeds {
  double device_bytes = 0;  ///< in the execution space's memory (host memory on host builds)
  double host_bytes = 0;    ///< host memory besides (checkpoint copies); 0 on host builds
};

/// The actor-critic that `cfg`'s policy.* keys describe for an environment of spec `env`.
nn::ActorCriticSpec policy_spec(const config::Config& cfg, const envs::EnvSpec& env);
/// Whether `cfg` (device.fused_kernels, and the device) asks for the fused kernels where they fit.
bool fused_wanted(const config::Config& cfg);

class PpoTrainer {
 public:
  /// \param env_offset global index of this GMI's first environment
  /// \param reducer    gradient averaging over GMIs (nullptr: a single GMI)
  PpoTrainer(const config::Config& cfg, std::uint64_t env_offset,
             mpi::GradientReducer* reducer = nullptr);

  /// One rollout of num_steps per env and the update that follows.
  IterationMetrics iterate();

  /// The policy's parameter layout for `cfg` (sizes gradient buffers before a trainer exists).
  static nn::ActorCriticLayout policy_layout(const config::Config& cfg);
  /// What a trainer for `cfg` will allocate, per GMI.
  static MemoryNeeds memory_needs(const config::Config& cfg);

  std::int64_t iteration() const { return iteration_; }
  const nn::ActorCriticLayout& layout() const { return layout_; }
  const envs::EnvSpec& env_spec() const { return env_->spec(); }
  /// Which kernels run: "fused" (rollout and update), "layered", or a mix.
  std::string kernels() const;
  /// Parameters on the host (tests, checksums, checkpoints).
  std::vector<float> params_host() const;
  /// Observation then return normaliser state ([mean | var | count] each) on the host.
  std::vector<double> normalizer_state_host() const;

  /// The full state on the host (fences).
  PpoState save_state() const;
  /// Restore a saved state exactly (same config and layout).  Throws gmi::Error if a size differs.
  void load_state(const PpoState& s);
  /// Restore the shared part only (policy, optimiser, normalisers, counters) and start fresh
  /// episodes in every env from episode index `first_episode` (a resume on another layout).
  void load_shared_state(const PpoState& s, std::uint64_t first_episode);
  /// Test hook (fault injection): every gradient of the next iteration on this GMI gets a NaN.
  void inject_nonfinite_gradient() { inject_nonfinite_ = true; }

  // ---- phases, public because CUDA device lambdas may not live in private member functions ----
  void rollout();
  /// Actions, log-probabilities and values of envs [lo, hi) at step t of the rollout.
  void act(int t, int lo, int hi);
  void bootstrap_truncated();
  void scale_rewards();
  void update(IterationMetrics& m);

 private:
  const float* policy_input(const float* raw_obs, int n);
  /// Where step t of the rollout writes (every env).
  envs::StepOutputs step_outputs(int t) const;
  bool data_parallel() const;
  rl::RunningMeanStd::HostSum host_sum() const;

  config::Config cfg_;
  ExecSpace space_;
  std::unique_ptr<envs::VecEnvBase> env_;
  mpi::GradientReducer* reducer_;
  std::uint64_t env_offset_;
  nn::ActorCriticLayout layout_;
  int N_, T_, od_, ad_, B_;
  std::int64_t iteration_ = 0;
  std::int64_t adam_step_ = 0;
  int nonfinite_streak_ = 0;
  bool inject_nonfinite_ = false;
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
  nn::MlpWorkspace<float> actor_roll_, critic_roll_, actor_mb_, critic_mb_;
  bool fused_rollout_ = false, fused_update_ = false;
  bool async_halves_ = false;  ///< env.async_halves with an environment that steps asynchronously
  rl::FusedUpdate fused_;  ///< the fused update's plan and workspace
  View1<float> ones_;
  rl::RunningMeanStd obs_rms_, ret_rms_;
};

}  // namespace gmi::algos
