#pragma once
/// \file
/// \brief What a user sets for the MuJoCo environments (config keys env.*; no MuJoCo header
/// needed): Gymnasium v5's keyword arguments, each unset by default (the environment's own
/// default), the worker threads, and where the model files are.
#include <array>
#include <optional>
#include <string>

namespace gmi::envs::mujoco {

using Range = std::array<double, 2>;

/// Gymnasium v5 keyword arguments (the ones users change); unset: the environment's default.
struct Kwargs {
  std::optional<int> frame_skip;
  std::optional<double> forward_reward_weight, ctrl_cost_weight, contact_cost_weight, healthy_reward,
      reset_noise_scale;
  std::optional<bool> terminate_when_unhealthy, exclude_current_positions_from_observation,
      include_cfrc_ext_in_observation, include_cinert_in_observation, include_cvel_in_observation,
      include_qfrc_actuator_in_observation;
  std::optional<Range> healthy_z_range, healthy_angle_range, healthy_state_range, contact_force_range,
      contact_cost_range;

  /// f(name, bool is_set) for every argument, in declaration order.
  template <class F>
  void for_each(F&& f) const {
    f("frame_skip", frame_skip.has_value());
    f("forward_reward_weight", forward_reward_weight.has_value());
    f("ctrl_cost_weight", ctrl_cost_weight.has_value());
    f("contact_cost_weight", contact_cost_weight.has_value());
    f("healthy_reward", healthy_reward.has_value());
    f("reset_noise_scale", reset_noise_scale.has_value());
    f("terminate_when_unhealthy", terminate_when_unhealthy.has_value());
    f("exclude_current_positions_from_observation", exclude_current_positions_from_observation.has_value());
    f("include_cfrc_ext_in_observation", include_cfrc_ext_in_observation.has_value());
    f("include_cinert_in_observation", include_cinert_in_observation.has_value());
    f("include_cvel_in_observation", include_cvel_in_observation.has_value());
    f("include_qfrc_actuator_in_observation", include_qfrc_actuator_in_observation.has_value());
    f("healthy_z_range", healthy_z_range.has_value());
    f("healthy_angle_range", healthy_angle_range.has_value());
    f("healthy_state_range", healthy_state_range.has_value());
    f("contact_force_range", contact_force_range.has_value());
    f("contact_cost_range", contact_cost_range.has_value());
  }
};

struct Options {
  Kwargs kwargs;
  int threads = 1;             ///< worker threads stepping this GMI's envs (>= 1)
  bool async_halves = false;   ///< step one half of the envs while the device acts for the other
  std::string model_path;      ///< directory or XML file; "" Gymnasium's assets
};

/// Whether this build has MuJoCo.
bool available();

}  // namespace gmi::envs::mujoco
