#pragma once
/// \file
/// \brief The algorithm registry: one row per algorithm (`algo:` in a config names its row).
/// Everything outside src/algos/ that depends on the algorithm asks its row; nothing outside
/// src/algos/ compares `cfg.algo` with a name.
///
/// Adding an algorithm: its folder under src/algos/ (trainer, policy, derive step), one row in
/// registry.cpp, and its tests.  tests/algos/test_registry.cpp checks every row: that it has a
/// config section, a memory estimate, a policy when it says it serves one, and that a checkpoint
/// round trip (HDF5 file included) resumes exactly.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/envs/env_spec.hpp"
#include "mpi/gradient_reducer.hpp"
#include "src/algos/actor.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"

namespace gmi::algos {

/// What an algorithm's checkpoints hold beyond the common layout (src/checkpoint/checkpoint.hpp).
struct CheckpointSchema {
  /// /experience's `rollout` attribute: what the file keeps of the experience, and why.
  std::string experience;
  /// /meta update_epochs (PPO's epochs per iteration; 0 for algorithms without epochs).
  std::int64_t (*update_epochs)(const config::Config&) = nullptr;
  /// /meta replay_capacity (0 for algorithms without a replay).
  std::int64_t (*replay_capacity)(const config::Config&) = nullptr;
};

/// One algorithm.  The function pointers take the resolved config (config::derive has run).
struct Algorithm {
  /// What the configuration knows: name, one-line summary, config sections, derive step, and
  /// what the algorithm trains on (registered with src/config by register_algorithms()).
  config::AlgorithmRules rules;
  /// Keys of a run that takes seconds (env.name included): what tests/algos/test_registry.cpp
  /// trains, checkpoints and resumes for every row.
  config::Overrides example;
  /// The trainer for the GMI whose first environment has global index `env_offset`.
  std::unique_ptr<Trainer> (*make_trainer)(const config::Config&, std::uint64_t env_offset,
                                           mpi::GradientReducer* reducer, GivenEnvs given) = nullptr;
  /// Trainable parameters (gradient buffers, checkpoint shapes).
  std::size_t (*num_params)(const config::Config&) = nullptr;
  /// What a trainer allocates per GMI (checked before anything is allocated).
  MemoryNeeds (*memory_needs)(const config::Config&) = nullptr;
  /// The trained policy acting (gmi_drl eval, bench --mode serve); `params` has num_params().
  std::unique_ptr<Policy> (*make_policy)(const config::Config&, const envs::EnvSpec&, const std::vector<float>& params,
                                         const std::vector<double>& obs_rms, int capacity) = nullptr;
  CheckpointSchema checkpoint;
  /// Its settings in one line (benchmarks' headers).
  std::string (*settings)(const config::Config&) = nullptr;
  bool replay = false;       ///< learns from a replay buffer (bench --mode update times its updates)
  /// bench --mode train times its iterations' phases against the PPO work model of
  /// src/tools/roofline (single-agent environments).
  bool phase_profile = false;
  bool serve_bench = false;  ///< bench --mode serve runs its actor on a rollout (PPO's Actor)
  bool onnx_export = false;  ///< gmi_drl export --onnx writes its actor
  /// Trains under mapping.template async and ea-t (src/gmi/async_training.hpp): its trainer is
  /// ServedLearning, whose serving GMIs send whole rollouts (PPO's also of the multi-agent games).
  bool async_rollouts = false;
  /// Its served rollouts stay in device memory (ServedLearning::device_rollout): async.transport
  /// device can move them GPU to GPU; the others' go through host messages.
  bool device_rollouts = false;
};

/// Every registered algorithm, in the order `algo:`'s description lists them.
const std::vector<Algorithm>& algorithms();
/// The row of `name`.  Throws gmi::InputError naming the registered algorithms when there is none.
const Algorithm& algorithm(const std::string& name);
/// The names of the registered algorithms with `pred` true, as "a, b and c" (error messages).
std::string algorithm_names(bool (*pred)(const Algorithm&) = nullptr);
/// Tell src/config about every algorithm (its `algo` names, sections and derive steps).  Called
/// once by main() and by the tests' main() before any config is parsed; calling it again is
/// harmless.
void register_algorithms();

}  // namespace gmi::algos
