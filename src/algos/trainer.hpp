#pragma once
/// \file
/// \brief The one interface src/runtime/ drives every algorithm through (`algo:` picks one):
/// an iteration at a time, metrics, and the state an exact resume needs.  What algorithms share
/// lives once: the MLP (kernels/nn), Adam (kernels/optim), normalisers and the replay buffer
/// (kernels/rl), the checkpoint state below, and the metric columns the driver writes.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/envs/multiagent/multi_agent.hpp"
#include "kernels/envs/vec_env.hpp"
#include "kernels/rl/replay.hpp"
#include "mpi/gradient_reducer.hpp"
#include "src/algos/actor.hpp"
#include "src/algos/phases.hpp"
#include "src/config/config.hpp"

namespace gmi::algos {

/// What one iteration measured on this GMI (episode sums are local; the driver aggregates).
struct IterationMetrics {
  std::int64_t iteration = 0;       ///< 1-based, after this iteration
  double episode_return_sum = 0;    ///< over episodes finished during the iteration
  double episode_length_sum = 0;
  double episodes = 0;
  std::vector<double> episode_term_sums;  ///< per reward term of the env (EnvSpec::reward_terms)
  std::vector<double> losses;       ///< the algorithm's statistics, as Trainer::loss_columns() names them
  double grad_norm = 0;             ///< mean pre-clip global norm over the updates
  double learning_rate = 0;
  double time_rollout = 0;          ///< seconds acting and stepping (device work included)
  double time_update = 0;           ///< seconds learning
  int updates = 0;                  ///< gradient updates done
  int skipped_updates = 0;          ///< updates skipped for a non-finite gradient or loss
  int nonfinite_streak = 0;         ///< skipped updates in a row, up to the end of this iteration
};

/// \brief Everything an exact resume needs (checkpoints).  The first group is identical on every
/// GMI (data parallelism); the second is this GMI's own.  Random numbers are counter-based
/// (kernels/core/random.hpp): their state is the seed, the counters and the per-env episode
/// counters in `env`.
struct TrainerState {
  std::int64_t iteration = 0;   ///< iterations done
  std::int64_t adam_step = 0;   ///< Adam's step count (the main optimiser's, for bias correction)
  int nonfinite_streak = 0;     ///< skipped updates in a row so far
  std::vector<float> params, adam_m, adam_v;  ///< every trainable parameter, one flat buffer
  std::vector<double> obs_rms, ret_rms;       ///< RunningMeanStd state [mean | var | count]; empty: none
  /// The algorithm's own shared tensors (e.g. target networks) and counters (/algo in checkpoints).
  std::vector<std::pair<std::string, std::vector<float>>> tensors;
  std::vector<std::pair<std::string, std::vector<double>>> tensors64;  ///< (multi-agent roles' normalisers)
  std::vector<std::pair<std::string, std::int64_t>> counters;
  /// Counter positions of the random streams (/rng in checkpoints; implied by the counters above,
  /// written so that a reader sees where every stream stands).
  std::vector<std::pair<std::string, std::int64_t>> rng;
  // ---- this GMI ----
  std::vector<float> obs;         ///< [N][obs_dim] the observation the next step starts from
  std::vector<float> return_acc;  ///< [N] discounted return so far (reward normalisation); empty: none
  std::vector<envs::StateArray> env;
  std::optional<rl::ReplayState> replay;  ///< this GMI's replay shard (off-policy; unset: not kept)

  const std::vector<float>* tensor(const std::string& name) const;
  const std::vector<double>* tensor64(const std::string& name) const;
  std::int64_t counter(const std::string& name) const;  ///< throws gmi::Error if absent
};

/// Memory a trainer takes (an estimate from the sizes that grow with the run; checked before
/// anything is allocated).
struct MemoryNeeds {
  double device_bytes = 0;  ///< in the execution space's memory (host memory on host builds)
  double host_bytes = 0;    ///< host memory besides (checkpoint copies, host replay); 0 on host builds
  std::vector<std::string> drivers;  ///< the config keys that make it grow, most important first
};

class Trainer {
 public:
  virtual ~Trainer() = default;

  /// One iteration: cfg.num_steps vector steps of every env and the learning that goes with them.
  virtual IterationMetrics iterate() = 0;
  virtual std::int64_t iteration() const = 0;
  /// Gradient updates done (the checkpoint's `updates`).
  virtual std::int64_t updates() const = 0;
  virtual const envs::EnvSpec& env_spec() const = 0;
  /// Names of IterationMetrics::losses, in order (metrics.csv columns).
  virtual std::vector<std::string> loss_columns() const = 0;
  /// Which kernels run ("fused", "layered", ...).
  virtual std::string kernels() const = 0;
  /// Where a trainer chose its kernels by timing them (device.fused_kernels: auto), what each
  /// candidate took, e.g. "policy step fused 1.20 ms, layered 2.31 ms; gradients fused 9.8 ms,
  /// layered 4.1 ms (per iteration)"; empty where nothing was timed.
  virtual std::string kernel_trials() const { return {}; }
  /// One line for the log: the algorithm's sizes and settings.
  virtual std::string describe() const = 0;
  /// Trainable parameters on the host (tests, checksums).
  virtual std::vector<float> params_host() const = 0;

  /// The full state on the host (fences).
  virtual TrainerState save_state() const = 0;
  /// Restore a saved state exactly (same config and layout).  Throws gmi::Error if a size differs.
  virtual void load_state(const TrainerState& s) = 0;
  /// Restore the shared part only (policy, optimiser, normalisers, counters) and start fresh
  /// episodes in every env from episode index `first_episode` (a resume on another layout).
  virtual void load_shared_state(const TrainerState& s, std::uint64_t first_episode) = 0;
  /// Test hook (fault injection): every gradient of the next iteration on this GMI gets a NaN.
  virtual void inject_nonfinite_gradient() = 0;
  /// A GMI that does not iterate with the others (a serving GMI under mapping.template async)
  /// runs its own loop here until its trainer stops it, calling `before_rollout` with the number
  /// of each rollout (from 1) first, and returns true.  The others return false at once.
  virtual bool serve(const std::function<void(std::int64_t)>& before_rollout) {
    (void)before_rollout;
    return false;
  }
  /// The run ends after the last iteration (or a stop signal): a trainer under async stops its
  /// serving GMIs here.
  virtual void end_run() {}
  /// Benchmarks: time every phase of the following iterations into `clock` (nullptr: stop).
  /// Returns false when the trainer cannot split its iterations into phases.
  virtual bool profile_phases(PhaseClock* clock) { return clock == nullptr; }
  /// Benchmarks (`gmi_drl bench --mode update`): the trainer's updates alone, or nullptr when its
  /// algorithm has no replay to update from (Algorithm::replay).
  virtual class UpdateBenchmark* update_benchmark() { return nullptr; }
  /// mapping.template async and ea-t (src/gmi/async_training.hpp): what serving and trainer GMIs
  /// ask of the algorithm, or nullptr when it does not train that way (Algorithm::async_rollouts).
  virtual class ServedLearning* served_learning() { return nullptr; }
};

/// A rollout on the host, as serving GMIs send it under mapping.template async and ea-t: num_steps
/// steps of N envs, sample j = t * N + e, each env's values RolloutShape's widths (a single-agent
/// env: obs_dim, act_dim and one value; a multi-agent game: its roles' agents one after another).
struct HostRollout {
  std::vector<float> obs;          ///< [T + 1][N][obs]: the rollout's observations, then the next start
  std::vector<float> final_obs;    ///< [T][N][obs] (read where an episode ended)
  std::vector<float> actions;      ///< [T][N][actions], as the algorithm stores them
  std::vector<float> logp, values, rewards;         ///< [T][N][rows]; logp and values: of the policy that acted (PPO)
  std::vector<std::uint8_t> terminated, truncated;  ///< [T][N][rows]
  envs::EpisodeStats episodes;     ///< the episodes that ended during it (a single-agent env)
  std::vector<envs::EpisodeStats> role_episodes;  ///< a multi-agent game's, per role (`episodes` unused)
};

/// The widths of one env's values in a HostRollout.
struct RolloutShape {
  int obs = 0;      ///< observation floats (a game: every agent's, role by role)
  int actions = 0;  ///< action floats
  int rows = 1;     ///< log-probabilities, values, rewards and flags (a game: its agents)
  int roles = 1;    ///< blocks of episode statistics (a game: its roles)
  int terms = 0;    ///< statistics per block besides return, length and count
  bool game = false;  ///< a multi-agent game: its episodes in HostRollout::role_episodes
};
/// The rollout shape of `cfg`'s environment.
RolloutShape rollout_shape(const config::Config& cfg);
/// A HostRollout's episodes as blocks (shape.roles of them): `role_episodes`, or `episodes` alone.
std::vector<envs::EpisodeStats> episode_blocks(const HostRollout& r);

/// A rollout's arrays in the memory the algorithm computes in (device memory; host memory on
/// host builds), which the device transport of mapping.template async and ea-t moves from a
/// serving GMI to its trainer without the host (src/gmi/async_training.cpp).  Array i holds
/// `steps` rows of `row_bytes`, a row one step of every env (a multi-agent game: each role's
/// arrays one after another, a row every env's agents of the role); a trainer's rows hold its
/// serving GMIs' envs one after another, serving GMI k's at the k-th share of each row.
struct DeviceRollout {
  struct Array {
    std::byte* data = nullptr;
    std::size_t steps = 0, row_bytes = 0;
  };
  ExecSpace space;  ///< where the algorithm writes and reads them
  std::vector<Array> arrays;
};

/// An algorithm trained on decoupled GMIs: serving GMIs roll out with the weights they last
/// received, trainer GMIs learn from what they sent (PPO and APPO from the rollout itself, the
/// off-policy algorithms from their replay, which the rollout's transitions join).
class ServedLearning {
 public:
  virtual ~ServedLearning() = default;
  /// A serving GMI acts for a trainer whose iterations step `trainer_envs` envs: its schedules
  /// that count env steps (warm-up, exploration) count the trainer's.
  virtual void prepare_serving(int trainer_envs) = 0;
  /// A serving GMI's rollout: num_steps steps of its envs with the weights it holds, as rollout
  /// number `index` of the run (its action noise), into `out`; its last observation starts the
  /// next rollout.
  virtual void serve_rollout(std::int64_t index, HostRollout& out) = 0;
  /// A trainer GMI's iteration on a rollout its serving GMIs made (N rows: theirs, one after
  /// another); `time_rollout`: how long it waited for it.
  virtual IterationMetrics learn_rollout(const HostRollout& in, double time_rollout) = 0;

  // The device transport, where an algorithm keeps its rollouts in place (PPO, APPO and PPO on
  // the multi-agent games; the others go through the host).
  /// Its rollout storage: a serving GMI's, which serve_device_rollout() leaves there; a trainer's,
  /// where learn_device_rollout() reads.  nullopt: rollouts go through the host only.
  virtual std::optional<DeviceRollout> device_rollout() { return std::nullopt; }
  /// serve_rollout() without the host: the rollout stays in device_rollout(), `out` gets its
  /// episodes only, and `pack` (which enqueues the copies out of it on its space) runs before
  /// the next rollout's start is written.  Returns once every copy is done.
  virtual void serve_device_rollout(std::int64_t index, HostRollout& out, const std::function<void()>& pack);
  /// A trainer's iteration begins: before its serving GMIs' rollouts are copied into
  /// device_rollout(), which until then it may use as scratch (PPO times its kernels there).
  virtual void begin_device_rollout();
  /// learn_rollout() on the rollout copied into device_rollout() since begin_device_rollout()
  /// (`in` holds the episodes only).
  virtual IterationMetrics learn_device_rollout(const HostRollout& in, double time_rollout);
  /// A serving GMI takes its trainer's weights and acting state (acting_state_host()'s layout).
  virtual void set_policy(const std::vector<float>& params, const std::vector<double>& acting) = 0;
  /// What acting reads besides the weights, which the trainer's checkpoint restores and a serving
  /// GMI must take from it: PPO's observation statistics ([mean | var | count]), DQN's exploration
  /// schedule; empty where there is none.
  virtual std::vector<double> acting_state_host() const = 0;
  /// The observations the next rollout starts from ([N][obs] on the host, RolloutShape's width),
  /// and setting them.
  virtual std::vector<float> start_obs_host() const = 0;
  virtual void set_start_obs(const std::vector<float>& obs) = 0;
  /// The envs' state (a serving GMI's part of its trainer's checkpoint), and restoring it.
  virtual std::vector<envs::StateArray> env_state() const = 0;
  virtual void set_env_state(const std::vector<envs::StateArray>& state) = 0;
};

/// Updates without env steps, on a replay buffer filled with made-up transitions.
class UpdateBenchmark {
 public:
  virtual ~UpdateBenchmark() = default;
  /// Fill the replay shard to its capacity with finite made-up transitions.
  virtual void fill_replay_for_benchmark() = 0;
  /// `n` update events without stepping the envs.
  virtual void run_updates(int n) = 0;
};

/// A trainer's environments: its own (nullptr: envs::make_vec_env from the config), or given by
/// the caller (under mapping.template e-at, the simulator GMIs' envs: src/gmi/remote_env.hpp).
using EnvPtr = std::unique_ptr<envs::VecEnvBase>;
/// The same for a multi-agent game.
using GamePtr = std::unique_ptr<envs::MultiAgentVecEnvBase>;
/// What a caller gives a trainer to step instead of its own (either, by the env's kind).
struct GivenEnvs {
  EnvPtr env;
  GamePtr game;
};
/// `given`, or the envs the config names for the GMI whose first env is `env_offset`.  Throws
/// gmi::Error when `given` has another number of envs than cfg.env.num_envs.
EnvPtr own_env(EnvPtr given, const config::Config& cfg, std::uint64_t env_offset);

/// The layered kernels' matrix products as device.matmul, device.gemm_epilogues and device.tile_gemm ask (process
/// wide: every trainer and policy of a process runs one config).
void set_device_math(const config::Config& cfg);

// What src/ asks of the algorithm `cfg.algo` names (its row in src/algos/registry.cpp).

/// The trainer `cfg.algo` names, for the GMI whose first environment has global index
/// `env_offset` (`reducer`: gradient averaging over GMIs; nullptr for one GMI), stepping the envs
/// `given` (none: its own).
std::unique_ptr<Trainer> make_trainer(const config::Config& cfg, std::uint64_t env_offset,
                                      mpi::GradientReducer* reducer = nullptr, GivenEnvs given = {});
/// Trainable parameters of `cfg`'s algorithm (gradient buffers, checkpoint shapes).
std::size_t num_params(const config::Config& cfg);
/// What a trainer for `cfg` will allocate, per GMI.
MemoryNeeds memory_needs(const config::Config& cfg);
/// The policy a run of `cfg` trained, from its parameters (and observation normaliser), acting
/// in batches of up to `capacity` envs of `spec`.  Throws gmi::InputError when `params` does not
/// have the size `cfg`'s networks need.
std::unique_ptr<Policy> make_policy(const config::Config& cfg, const envs::EnvSpec& spec,
                                    const std::vector<float>& params, const std::vector<double>& obs_rms,
                                    int capacity);

}  // namespace gmi::algos
