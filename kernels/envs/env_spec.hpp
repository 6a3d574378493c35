#pragma once
/// \file
/// \brief What an agent needs to know of an environment: observation and action spaces, time limit.
#include <string>
#include <vector>

namespace gmi::envs {

struct EnvSpec {
  std::string name;               ///< Gymnasium id, e.g. "CartPole-v1"
  int obs_dim = 0;                ///< length of one observation vector
  int act_dim = 1;                ///< numbers per action (discrete: 1, or one index per MultiDiscrete group)
  int num_actions = 0;            ///< > 0: Discrete(num_actions); 0: continuous Box(act_low, act_high)
  /// MultiDiscrete(action_nvec) when not empty: act_dim = its size, one action index per group,
  /// num_actions = its sum (the policy's logits, group after group).
  std::vector<int> action_nvec;
  std::vector<float> obs_low;     ///< observation-space bounds (may be +-inf)
  std::vector<float> obs_high;
  std::vector<float> act_low;     ///< continuous action bounds (empty for discrete)
  std::vector<float> act_high;
  int max_episode_steps = 0;      ///< Gymnasium TimeLimit: truncated when this many steps elapsed
  std::vector<std::string> reward_terms;  ///< names of the reward's terms (Gymnasium's info keys), if any
  double host_bytes_per_env = 0;  ///< host memory each env takes (host-simulated: MuJoCo's mjData)
  double device_bytes_per_env = 0;  ///< device memory each env takes beyond its observation (device physics: state and scratch)

  bool discrete() const { return num_actions > 0; }
  bool multi_discrete() const { return !action_nvec.empty(); }
};

}  // namespace gmi::envs
