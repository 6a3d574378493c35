#pragma once
/// \file
/// \brief Soft actor-critic (Haarnoja et al. 2018) with the meaning of CleanRL's
/// sac_continuous_action.py: twin Q networks with Polyak-averaged targets, a tanh-squashed
/// Gaussian actor updated every sac.policy_frequency steps (that many times), and automatic
/// entropy tuning, on the GMI's replay shard.
///
/// One flat parameter buffer [actor | Q1 | Q2 | log_alpha], gradients and Adam moments alike; the
/// actor, the Q networks and alpha are three optimisers over its ranges (policy_lr, q_lr, q_lr),
/// each averaged over GMIs before its step.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/side_stream.hpp"
#include "kernels/nn/mlp.hpp"
#include "src/algos/sac/section.hpp"
#include "src/algos/offpolicy.hpp"

namespace gmi::algos {

/// Where the networks sit in the flat buffer.
/// The actor's output is [mean | raw log-std] (2 A); log alpha follows the twins (num_params
/// counts it).
struct SacNetworks : ActorTwinQ {
  std::size_t log_alpha = 0;
};


class SacTrainer final : public OffPolicyTrainer {
 public:
  SacTrainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer = nullptr,
             EnvPtr env = nullptr);

  static SacNetworks networks(const config::Config& cfg);
  static MemoryNeeds memory_needs(const config::Config& cfg);

  std::vector<std::string> loss_columns() const override {
    return {"qf1_loss", "qf2_loss", "qf1_values", "qf2_values", "actor_loss", "entropy", "alpha", "alpha_loss"};
  }
  std::string kernels() const override { return "layered"; }
  std::string describe() const override;
  const SacNetworks& layout() const { return nets_; }

 protected:
  const float* act(std::int64_t k) override;
  void update(std::int64_t u, std::int64_t g) override;
  void update_target(int times) override;
  void losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums, const std::vector<double>& counts) const override;
  int update_kind(std::int64_t u, std::int64_t g) const override;
  bool update_changes_actor(std::int64_t u, std::int64_t g) const override;
  int targets_within(std::int64_t u, std::int64_t g) const override;
  void save_extra(TrainerState& s) const override;
  void load_extra(const TrainerState& s) override;

 private:
  /// Actor forward on `obs` [B] and a sample (noise stream `purpose` of update u) into pi_, logp_, noise_.
  void sample_policy(const ExecSpace& sp, const float* obs, std::int64_t u, int purpose);
  void actor_update(std::int64_t u, int repeat);
  void alpha_update(std::int64_t u, int repeat);

  SacNetworks nets_;
  float target_entropy_ = 0;
  View1<float> target_;  ///< [Q1 | Q2] targets (nets_.q_size floats, the Q layouts shifted to 0)
  View1<float> scale_, bias_;
  View1<float> qin_, pi_, logp_, noise_, d_q_, d_qin_, d_actor_;  ///< d_q_ [2][B], d_qin_ [2][B][in]
  View1<float> qin_next_;  ///< the target Qs' input, built beside qin_ (on side_)
  /// The critic update's target branch (a' ~ pi(s') and the target Qs) runs here, beside the
  /// online Qs' forward pass (on the main stream under device.matmul bf16).
  std::unique_ptr<SideStream> side_;
  nn::MlpLayout q_target_;  ///< Q1's layout over target_ (Q2 at q_stride)
  nn::MlpWorkspace<float> ws_act_, ws_actor_, ws_q_, ws_qt_;  ///< ws_q_, ws_qt_: both twins, 2 B rows
};

/// A trained SAC actor acting: the squashed Gaussian's mean tanh(mean) * scale + bias when
/// deterministic, else a sample (what training's rollouts draw).
class SacPolicy final : public Policy {
 public:
  SacPolicy(const config::Config& cfg, const envs::EnvSpec& spec, const std::vector<float>& params, int capacity);
  void act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
           std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) override;

 private:
  SacNetworks nets_;
  View1<float> params_, scale_, bias_;
  nn::MlpWorkspace<float> ws_;
};

}  // namespace gmi::algos
