#pragma once
/// \file
/// \brief TD3 (Fujimoto et al. 2018) with the meaning of CleanRL's td3_continuous_action.py: a
/// deterministic tanh actor acting with Gaussian exploration noise, twin Q networks with clipped
/// double-Q targets from the target actor's smoothed actions, and the actor and every target
/// network updated at every td3.policy_frequency-th Q update, on the GMI's replay shard.
///
/// One flat parameter buffer [actor | Q1 | Q2], gradients and Adam moments alike, and a target
/// copy of all of it; the actor and the Q networks are two optimisers over its ranges (policy_lr,
/// q_lr), each averaged over GMIs before its step.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/nn/mlp.hpp"
#include "src/algos/offpolicy.hpp"
#include "src/algos/td3/section.hpp"

namespace gmi::algos {

/// Where the networks sit in the flat buffer.
/// The actor's output is mu (A).
using Td3Networks = ActorTwinQ;

class Td3Trainer final : public OffPolicyTrainer {
 public:
  Td3Trainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer = nullptr,
             EnvPtr env = nullptr);

  static Td3Networks networks(const config::Config& cfg);
  static MemoryNeeds memory_needs(const config::Config& cfg);

  std::vector<std::string> loss_columns() const override {
    return {"qf1_loss", "qf2_loss", "qf1_values", "qf2_values", "actor_loss"};
  }
  std::string kernels() const override { return "layered"; }
  std::string describe() const override;
  const Td3Networks& layout() const { return nets_; }

 protected:
  const float* act(std::int64_t k) override;
  void update(std::int64_t u, std::int64_t g) override;
  void update_target(int times) override;
  int update_kind(std::int64_t u, std::int64_t g) const override;
  bool update_changes_actor(std::int64_t u, std::int64_t g) const override { return update_kind(u, g) == 1; }
  int targets_within(std::int64_t u, std::int64_t g) const override { return update_kind(u, g) == 1 ? 1 : 0; }
  void losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums, const std::vector<double>& counts) const override;
  void save_extra(TrainerState& s) const override;
  void load_extra(const TrainerState& s) override;

 private:
  void actor_update();

  Td3Networks nets_;
  View1<float> target_;  ///< a copy of the whole flat buffer: the target actor and Q networks
  View1<float> scale_, bias_;
  View1<float> qin_, pi_, d_q_, d_qin_, d_actor_;  ///< d_q_ [2][B], d_qin_ [2][B][in]
  nn::MlpWorkspace<float> ws_act_, ws_actor_, ws_q_, ws_qt_, ws_q1_;  ///< ws_q_, ws_qt_: both twins, 2 B rows
};

/// A trained TD3 actor acting: tanh(mu) * scale + bias when deterministic, else with td3's
/// exploration noise (what training's rollouts draw).
class Td3Policy final : public Policy {
 public:
  Td3Policy(const config::Config& cfg, const envs::EnvSpec& spec, const std::vector<float>& params, int capacity);
  void act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
           std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) override;

 private:
  Td3Networks nets_;
  float sigma_ = 0;
  View1<float> params_, scale_, bias_, low_, high_;
  nn::MlpWorkspace<float> ws_;
};

}  // namespace gmi::algos
