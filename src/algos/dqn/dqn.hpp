#pragma once
/// \file
/// \brief DQN (Mnih et al. 2015) with the meaning of CleanRL's dqn.py, plus double DQN (van
/// Hasselt et al. 2016) and the dueling head (Wang et al. 2016), on the GMI's replay shard.
/// Epsilon decays linearly over dqn.exploration_fraction of the run's env steps (all GMIs).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/nn/mlp.hpp"
#include "src/algos/dqn/section.hpp"
#include "src/algos/offpolicy.hpp"

namespace gmi::algos {


class DqnTrainer final : public OffPolicyTrainer {
 public:
  DqnTrainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer = nullptr,
             EnvPtr env = nullptr);

  /// The Q network of `cfg` (obs -> policy.q_hidden -> n, or 1 + n with the dueling head).
  static nn::MlpLayout network(const config::Config& cfg);
  static MemoryNeeds memory_needs(const config::Config& cfg);

  std::vector<std::string> loss_columns() const override { return {"td_loss", "q_values", "epsilon"}; }
  std::string kernels() const override { return "layered"; }
  std::string describe() const override;
  /// Epsilon at vector step k (CleanRL's linear_schedule over the run's env steps).
  double epsilon(std::int64_t k) const;
  const nn::MlpLayout& layout() const { return q_; }

 protected:
  const float* act(std::int64_t k) override;
  void update(std::int64_t u, std::int64_t g) override;
  void update_target(int times) override;
  void losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums, const std::vector<double>& counts) const override;
  void save_extra(TrainerState& s) const override;
  void load_extra(const TrainerState& s) override;
  /// The env steps epsilon decays over (a resumed run's, from its checkpoint).
  std::vector<double> acting_state() const override { return {decay_env_steps_}; }
  void set_acting_state(const std::vector<double>& state) override;

 private:
  nn::MlpLayout q_;
  int n_ = 0;
  View1<float> target_, d_out_;
  nn::MlpWorkspace<float> ws_act_, ws_q_, ws_next_target_, ws_next_online_;
  /// Env steps (all GMIs) epsilon decays over: exploration_fraction * total_env_steps of the run
  /// that started (kept in checkpoints, so a resume that extends the run keeps its schedule).
  double decay_env_steps_ = 0;
};

/// A trained Q network acting: greedily when deterministic, else epsilon-greedily with the
/// schedule's final epsilon (dqn.end_e), as the trained agent last acted.
class DqnPolicy final : public Policy {
 public:
  DqnPolicy(const config::Config& cfg, const std::vector<float>& params, int capacity);
  void act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
           std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) override;

 private:
  nn::MlpLayout q_;
  int n_ = 0;
  bool dueling_ = false;
  float epsilon_ = 0;
  View1<float> params_;
  nn::MlpWorkspace<float> ws_;
};

}  // namespace gmi::algos
