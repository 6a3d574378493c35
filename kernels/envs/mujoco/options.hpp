#pragma once
/// \file
/// \brief What a user sets for the MuJoCo environments (config keys env.*; no MuJoCo header
/// needed): Gymnasium v5's keyword arguments, each unset by default (the environment's own
/// default), the worker threads, and where the model files are.
#include <array>
#include <optional>
#include <string>

#include "kernels/core/key_list.hpp"

namespace gmi::envs::mujoco {

using Range = std::array<double, 2>;

/// Gymnasium v5 keyword arguments (the ones users change), config keys env.<name>: X(type, name,
/// default, check, description) (kernels/core/key_list.hpp); unset (null): the environment's default.
#define GMI_MUJOCO_KW_ "; Gymnasium v5 keyword argument of the MuJoCo environments; null: the environment's default"
#define GMI_MUJOCO_KWARGS(X)                                                                                 \
  X(std::optional<int>, frame_skip, std::nullopt, or_null(at_least(1)), "MuJoCo steps per environment step" GMI_MUJOCO_KW_) \
  X(std::optional<double>, forward_reward_weight, std::nullopt, or_null(at_least(0)),                        \
    "weight of the forward-velocity reward" GMI_MUJOCO_KW_)                                                  \
  X(std::optional<double>, ctrl_cost_weight, std::nullopt, or_null(at_least(0)), "weight of the control cost" GMI_MUJOCO_KW_) \
  X(std::optional<double>, contact_cost_weight, std::nullopt, or_null(at_least(0)),                          \
    "weight of the contact cost (Ant, Humanoid)" GMI_MUJOCO_KW_)                                             \
  X(std::optional<double>, healthy_reward, std::nullopt, or_null(at_least(0)), "reward per step while healthy" GMI_MUJOCO_KW_) \
  X(std::optional<double>, reset_noise_scale, std::nullopt, or_null(at_least(0)),                            \
    "scale of the initial-state noise" GMI_MUJOCO_KW_)                                                       \
  X(std::optional<bool>, terminate_when_unhealthy, std::nullopt, any,                                        \
    "end the episode when the body leaves the healthy ranges" GMI_MUJOCO_KW_)                                \
  X(std::optional<bool>, exclude_current_positions_from_observation, std::nullopt, any,                      \
    "leave the root's x (and y) out of the observation" GMI_MUJOCO_KW_)                                      \
  X(std::optional<bool>, include_cfrc_ext_in_observation, std::nullopt, any,                                 \
    "external contact forces in the observation (Ant, Humanoid)" GMI_MUJOCO_KW_)                             \
  X(std::optional<bool>, include_cinert_in_observation, std::nullopt, any,                                   \
    "body inertias in the observation (Humanoid)" GMI_MUJOCO_KW_)                                            \
  X(std::optional<bool>, include_cvel_in_observation, std::nullopt, any,                                     \
    "body velocities in the observation (Humanoid)" GMI_MUJOCO_KW_)                                          \
  X(std::optional<bool>, include_qfrc_actuator_in_observation, std::nullopt, any,                            \
    "actuator forces in the observation (Humanoid)" GMI_MUJOCO_KW_)                                          \
  X(std::optional<Range>, healthy_z_range, std::nullopt, any, "healthy range of the root's height" GMI_MUJOCO_KW_) \
  X(std::optional<Range>, healthy_angle_range, std::nullopt, any,                                            \
    "healthy range of the torso's angle (Hopper, Walker2d)" GMI_MUJOCO_KW_)                                  \
  X(std::optional<Range>, healthy_state_range, std::nullopt, any,                                            \
    "healthy range of every other state entry (Hopper)" GMI_MUJOCO_KW_)                                      \
  X(std::optional<Range>, contact_force_range, std::nullopt, any,                                            \
    "contact forces are clipped to this range (Ant)" GMI_MUJOCO_KW_)                                         \
  X(std::optional<Range>, contact_cost_range, std::nullopt, any,                                             \
    "the contact cost is clipped to this range (Humanoid)" GMI_MUJOCO_KW_)

struct Kwargs {
  GMI_MUJOCO_KWARGS(GMI_KEY_MEMBER)

  /// f(name, bool is_set) for every argument, in declaration order.
  template <class F>
  void for_each(F&& f) const {
#define GMI_MUJOCO_KWARG_VISIT_(type, name, def, check, doc) f(#name, name.has_value());
    GMI_MUJOCO_KWARGS(GMI_MUJOCO_KWARG_VISIT_)
#undef GMI_MUJOCO_KWARG_VISIT_
  }
};

/// Steps of env ranges (step_async) queued at most at a time: env.batch_size groups.
constexpr int kMaxQueuedSteps = 64;

struct Options {
  Kwargs kwargs;
  int threads = 1;             ///< threads stepping this GMI's envs (>= 1; the caller and threads - 1 workers)
  bool pin_threads = false;    ///< each worker thread on one CPU of the affinity mask
  std::string model_path;      ///< directory or XML file; "" Gymnasium's assets
};

/// Whether this build has MuJoCo.
bool available();

}  // namespace gmi::envs::mujoco
