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
#include "kernels/rl/heads.hpp"
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

/// \brief One step of an actor-critic policy on n rows: what the training rollout
/// (PpoTrainer::act) and the serving Actor share.  act_step() runs it through the fused kernel
/// (`fused`) or the layered one (normalise, actor MLP, critic MLP when wanted, sample).
struct ActStep {
  const nn::ActorCriticLayout* layout = nullptr;
  rl::Categories categories;      ///< the categorical head's groups (rl::categories(layout->action_nvec))
  const float* params = nullptr;  ///< the flat actor-critic parameters (device)
  const float* obs = nullptr;     ///< [n][obs_dim] raw observations (device)
  int n = 0;
  std::uint64_t seed = 0;
  std::uint64_t step = 0;                     ///< the global step (or its offset from *step_base)
  const std::uint64_t* step_base = nullptr;   ///< device memory (captured rollouts), or nullptr
  std::uint64_t env_offset = 0;               ///< global index of row 0 (action-noise streams)
  bool clip_actions = true;
  bool deterministic = false;  ///< the distribution's mode instead of a sample
  bool tf32 = false;           ///< the fused kernel's tensor-core pass
  const rl::RunningMeanStd* obs_rms = nullptr;  ///< observation normaliser, or nullptr: raw observations
  float obs_clip = 10;
  const float* act_low = nullptr;   ///< [act_dim] continuous action space
  const float* act_high = nullptr;
  float* actions = nullptr;         ///< [n][act_dim] as chosen
  float* env_actions = nullptr;     ///< [n][act_dim] as the envs get them (may equal actions)
  float* logp = nullptr;            ///< [n] log-probabilities (the fused kernel always writes them)
  float* values = nullptr;          ///< [n] the critic's values (the fused kernel always writes them)
};

/// Where act_step() works: the fused kernel's fragment-native weights (nullptr: staged), and the
/// layered path's scratch (normalised observations, the actor's and, for values, the critic's
/// workspaces).
struct ActScratch {
  bool fused = false;
  const float* frag = nullptr;
  float* policy_in = nullptr;                     ///< [n][obs_dim]
  nn::ActorCriticWorkspace* nets = nullptr;
  bool values = false;                            ///< the critic's values too (layered path)
};

void act_step(const ExecSpace& space, const ActStep& s, const ActScratch& w);

/// \brief A trained policy acting, whichever algorithm trained it (gmi_drl eval, bench --mode
/// serve): PPO's actor (Actor below), DQN's greedy Q network, SAC's squashed Gaussian.
/// env_actions[0, count) = actions[0, count) on `space` (device memory), unless they are one
/// buffer: what a Policy::act whose envs take its actions unchanged does with `env_actions`.
void copy_env_actions(const ExecSpace& space, const float* actions, float* env_actions, std::size_t count);

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
  nn::ActorCriticWorkspace ws_;
  rl::Categories categories_;
};

}  // namespace gmi::algos
