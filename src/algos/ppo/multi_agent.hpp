#pragma once
/// \file
/// \brief PPO on a multi-agent game (kernels/envs/multiagent/, WarpDrive's Tag): one policy per
/// role, shared by every agent of the role, each trained by PPO on the batch of its (env, agent)
/// rows.  Every step, each role's learner acts for its rows, then the game steps once; after the
/// rollout each role learns from its own rows (its own networks, optimiser, normalisers; one
/// gradient reduction per minibatch over GMIs, as single-agent PPO).
///
/// Metrics: the standard columns count environment episodes; `episode_return_mean` is the first
/// role's (taggers') mean return per agent.  Per role, `<role>_policy_loss`, `..._value_loss`,
/// `..._entropy`, `..._approx_kl`, `..._clip_frac`, `..._explained_variance`; per finished
/// episode `episode_<role>_return_mean` (mean per agent), `episode_runners_tagged_mean` and
/// `episode_tag_rate_mean` (the fraction of runners tagged).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/envs/multiagent/multi_agent.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/algos/trainer.hpp"

namespace gmi::algos {

class MultiAgentPpoTrainer final : public Trainer, public ServedLearning {
 public:
  /// \param env_offset global index of this GMI's first environment
  /// \param game the game to step (nullptr: the config's own)
  MultiAgentPpoTrainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer = nullptr,
                       GamePtr game = nullptr);

  /// Every role's parameters of `cfg`'s game (one flat buffer, role by role).
  static std::size_t num_params(const config::Config& cfg);
  static MemoryNeeds memory_needs(const config::Config& cfg);
  /// The single-agent view of role r of `spec` (its observation and action spaces).
  static envs::EnvSpec role_spec(const envs::MultiAgentSpec& spec, int r);

  IterationMetrics iterate() override;
  std::int64_t iteration() const override { return roles_.front()->iteration(); }
  std::int64_t updates() const override;
  /// The game's name, the first role's spaces, and the per-episode statistics as reward terms.
  const envs::EnvSpec& env_spec() const override { return spec_; }
  std::vector<std::string> loss_columns() const override;
  /// The roles' kernels (named by role where they differ).
  std::string kernels() const override;
  /// Every role's kernel_trials(), named by role.
  std::string kernel_trials() const override;
  std::string describe() const override;
  std::vector<float> params_host() const override;

  TrainerState save_state() const override;
  void load_state(const TrainerState& s) override;
  void load_shared_state(const TrainerState& s, std::uint64_t first_episode) override;
  void inject_nonfinite_gradient() override;

  const envs::MultiAgentSpec& game() const { return game_; }
  PpoTrainer& role(int r) { return *roles_[r]; }

  // ---- mapping.template async and ea-t (src/gmi/async_training.hpp): ServedLearning ----
  // A HostRollout's values of an env are every role's agents', role by role (rollout_shape);
  // the acting state is the roles' observation statistics one after another.
  ServedLearning* served_learning() override { return this; }
  /// A serving GMI acts with every role and learns with none.
  void prepare_serving(int) override;
  void serve_rollout(std::int64_t index, HostRollout& out) override;
  IterationMetrics learn_rollout(const HostRollout& in, double time_rollout) override;
  /// The device transport: every role's rollout arrays, role by role (PpoTrainer::rollout_arrays).
  std::optional<DeviceRollout> device_rollout() override;
  void serve_device_rollout(std::int64_t index, HostRollout& out, const std::function<void()>& pack) override;
  void begin_device_rollout() override;
  IterationMetrics learn_device_rollout(const HostRollout& in, double time_rollout) override;
  void set_policy(const std::vector<float>& params, const std::vector<double>& acting) override;
  std::vector<double> acting_state_host() const override;
  std::vector<float> start_obs_host() const override;
  void set_start_obs(const std::vector<float>& obs) override;
  std::vector<envs::StateArray> env_state() const override;
  void set_env_state(const std::vector<envs::StateArray>& state) override;

 private:
  /// The rollout: num_steps steps of the game with every role acting, then each role's V(s_T).
  void rollout_steps();
  /// Every role learns from its rows; the metrics of the iteration.
  IterationMetrics learn_roles(const std::vector<envs::EpisodeStats>& stats, double time_rollout);
  /// Values per env of role r in a HostRollout field of `per_row` values per agent.
  std::size_t block(int r, int per_row) const { return std::size_t(game_.roles[r].agents) * std::size_t(per_row); }
  /// Each role's observation values per env (a game's per-env layout of observations).
  std::vector<std::size_t> obs_blocks() const {
    std::vector<std::size_t> b;
    for (int r = 0; r < int(game_.roles.size()); ++r) b.push_back(block(r, game_.roles[r].obs_dim));
    return b;
  }
  /// Role r's part of a whole state (params, optimiser, normalisers, rows).
  TrainerState role_state(const TrainerState& s, int r, bool own) const;

  config::Config cfg_;
  ExecSpace space_;
  std::unique_ptr<envs::MultiAgentVecEnvBase> env_;
  envs::MultiAgentSpec game_;
  envs::EnvSpec spec_;
  std::vector<std::unique_ptr<PpoTrainer>> roles_;
  std::vector<std::size_t> params_;  ///< each role's parameter count
  int N_ = 0;
};

}  // namespace gmi::algos
