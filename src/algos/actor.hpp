#pragma once
/// \file
/// \brief A trained policy's actor on the device, for serving: normalise observations as in
/// training, run the actor MLP, and choose actions (sampled, or the distribution's mode).  What
/// `gmi_drl eval` and `bench --mode serve` run, and what a serving GMI will run.  Actions can go
/// through the rollout's fused kernel (which computes the critic's value too, unused).
#include <cstdint>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/nn/actor_critic.hpp"
#include "kernels/nn/mlp.hpp"
#include "kernels/rl/normalizer.hpp"

namespace gmi::algos {

struct ActorOptions {
  bool normalize_obs = false;  ///< ppo.normalize_obs of the run that trained the policy
  float obs_clip = 10;         ///< ppo.obs_clip
  bool clip_actions = true;    ///< clip continuous actions to the action space before stepping
  std::vector<float> act_low, act_high;  ///< continuous action space
  bool fused = false;          ///< actions through the fused rollout kernel when it fits
  bool tf32 = false;           ///< device.matmul tf32 (the fused kernel's tensor-core pass)
};

/// \brief A trained policy acting, whichever algorithm trained it (gmi_drl eval, bench --mode
/// serve): PPO's actor (Actor below), DQN's greedy Q network, SAC's squashed Gaussian.
class Policy {
 public:
  virtual ~Policy() = default;
  /// Actions for n rows of raw observations obs [n][obs_dim] (device memory): `actions` as the
  /// policy chose them (discrete: exact float indices), `env_actions` as the envs get them (may
  /// equal `actions`).  Sampling uses philox(seed, {step, env_offset + i}) as training does;
  /// `deterministic` takes the mode (argmax, the Gaussian's mean).
  virtual void act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
                   std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) = 0;
};

class Actor final : public Policy {
 public:
  /// \param params   the flat actor-critic parameters (checkpoint /policy/params)
  /// \param obs_rms  the observation normaliser's [mean | var | count] (checkpoint /normalizer/obs)
  /// \param capacity the largest batch act() is called with
  Actor(const nn::ActorCriticLayout& layout, const std::vector<float>& params, const std::vector<double>& obs_rms,
        const ActorOptions& options, int capacity);

  const nn::ActorCriticLayout& layout() const { return layout_; }

  /// Continuous `env_actions` are `actions` clipped to the action space (ppo.clip_actions).
  void act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
           std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) override;

 private:
  nn::ActorCriticLayout layout_;
  ActorOptions options_;
  View1<float> params_, policy_in_, act_low_, act_high_;
  View1<float> logp_, values_;  ///< the fused kernel's by-products (it computes the critic too)
  /// the weights' fragment-native copies for the fused kernel (GPUs with tensor-core layers), written
  /// once: the parameters never change
  View1<float> frag_;
  bool fused_ = false;
  rl::RunningMeanStd obs_rms_;
  nn::MlpWorkspace<float> ws_;
};

}  // namespace gmi::algos
