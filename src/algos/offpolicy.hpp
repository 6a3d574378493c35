#pragma once
/// \file
/// \brief What DQN and SAC share: every env of the GMI steps once per vector step, its
/// transitions go into the GMI's replay shard (kernels/rl/replay.hpp), and gradient updates and
/// target-network updates follow CleanRL's schedule, generalised to many envs.
///
/// Schedule.  Step indices count this GMI's env steps (g = 0, 1, ...; with one env this is
/// CleanRL's global_step).  Vector step k covers g in [k N, (k + 1) N).  With
/// `updates_per_step` 0, an update follows every g > learning_starts with g % update_frequency
/// == 0, and a target update every such g with g % target_frequency == 0, in order of g (one env:
/// CleanRL's loop exactly).  With updates_per_step U > 0, each vector step past learning_starts
/// ends with U updates, then the target updates of the multiples of target_frequency it covered
/// (merged into one step: the source does not change between them; SAC and TD3 instead move
/// their targets within their updates, every so many Q updates).  replay.act_ahead computes
/// step k + 1's actions before step k's updates (see iterate()).
/// The schedule is a function of counters alone, so every GMI issues the same collectives and a
/// resumed run repeats an uninterrupted one.
///
/// Captured updates (device.graphs).  What changes from one update event to the next — the event
/// count that numbers the replay draw and the policy noise, the replay's fill level, each
/// optimiser's Adam step count, the statistics' destination — lives in device memory, so the
/// launches of an event are the same every time: the second event of each kind (update_kind())
/// is captured into a CUDA graph and later ones replay it, with the gradient averaging over GMIs
/// between its graphs.  Direct launches run the same kernels on the same counters, so both give
/// the same bits.  Device replay only; host builds, a loaded profiling tool and an injected fault
/// run directly.
///
/// Each GMI samples from its own shard; gradients are averaged over GMIs by the run's reducer
/// before each optimiser step (identical weights everywhere).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/graph.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/envs/vec_env.hpp"
#include "kernels/nn/mlp.hpp"
#include "kernels/optim/adam.hpp"
#include "kernels/rl/q_learning.hpp"
#include "kernels/rl/replay.hpp"
#include "mpi/gradient_reducer.hpp"
#include "src/algos/replay_section.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"

namespace gmi::algos {

struct StateBuffers;  // src/algos/trainer_state.hpp

/// When updates happen (see the file comment).
struct UpdateSchedule {
  int updates_per_step = 0;              ///< U; 0: one per update_frequency env steps
  std::int64_t learning_starts = 0;      ///< no update before g > learning_starts
  std::int64_t update_frequency = 1;     ///< env steps per update (U = 0)
  std::int64_t target_frequency = 1;     ///< env steps per target update; 0: none (the algorithm
                                         ///< updates its targets within its updates: TD3, and
                                         ///< SAC with updates_per_step)
};

/// The derive step DQN and SAC share: an iteration is `num_steps` vector steps (0: as many as make
/// about 1000 env steps), the minibatch is `batch_size` transitions, and the replay shard must take
/// one vector step.
void derive_offpolicy(config::Config& c, int num_steps, int batch_size);

/// (high - low) / 2 and (high + low) / 2 per action dimension: tanh's [-1, 1] onto the action
/// space (CleanRL's action_scale and action_bias; SAC's and TD3's actors).
std::vector<float> action_scale(const envs::EnvSpec& s);
std::vector<float> action_bias(const envs::EnvSpec& s);

/// Memory of a replay shard and the transition buffers of one vector step.
double replay_bytes(const config::Config& cfg, int obs_dim, int act_dim);

/// MemoryNeeds of an off-policy trainer with `P` parameters and `floats` device floats of its own
/// (parameters, optimiser state, batch and workspaces): those, one vector step's buffers, the
/// replay shard (on the device or the host, and the checkpoint's host copy; `replay_act_dim`
/// floats per stored action), host copies of the parameters and the host envs' state.
MemoryNeeds replay_trainer_memory(const config::Config& cfg, const envs::EnvSpec& spec, double P, double floats,
                                  int replay_act_dim, std::vector<std::string> drivers);

/// The actor and the twin Q networks SAC and TD3 train, in one parameter vector: the actor (obs ->
/// policy.actor_hidden -> `actor_outputs`), then Q1 and Q2 ([obs | action] -> policy.q_hidden ->
/// 1), each starting 16-byte aligned, so that Q2 is Q1 shifted by q_stride (one batched MLP).
struct ActorTwinQ {
  nn::MlpLayout actor;
  nn::MlpLayout q1, q2;
  std::size_t q_begin = 0, q_size = 0;  ///< the range [Q1 | Q2]
  std::size_t q_stride = 0;             ///< q2.offset - q1.offset
  std::size_t num_params = 0;           ///< the actor and the twins (an algorithm's own parameters may follow)
  int obs_dim = 0, act_dim = 0;
};
ActorTwinQ actor_twin_q(const config::Config& cfg, int actor_outputs);

/// Kinds of optimiser step an algorithm records (DQN: 1; SAC: critic, actor, alpha).
inline constexpr int kMaxRecordKinds = 4;

class OffPolicyTrainer : public Trainer, public UpdateBenchmark, public ServedLearning {
 public:
  IterationMetrics iterate() final;
  std::int64_t iteration() const final { return iteration_; }
  std::int64_t updates() const final { return updates_; }
  const envs::EnvSpec& env_spec() const final { return env_->spec(); }
  std::vector<float> params_host() const final;
  TrainerState save_state() const final;
  void load_state(const TrainerState& s) final;
  void load_shared_state(const TrainerState& s, std::uint64_t first_episode) final;
  void inject_nonfinite_gradient() final { inject_nonfinite_ = true; }
  /// Host-simulated environments: start the next vector step's actions and physics before the
  /// updates of a step that leaves the acting network alone (on by default; the same results
  /// either way, which tests check by turning it off).
  void set_overlap(bool on) { overlap_ = on; }

  /// Benchmarks (`gmi_drl bench --mode update`): fill the replay shard to its capacity with
  /// finite made-up transitions, and run `n` update events without stepping the envs.
  void fill_replay_for_benchmark() override;
  void run_updates(int n) override;
  UpdateBenchmark* update_benchmark() override { return this; }
  const rl::ReplayBuffer& replay() const { return replay_; }

  // ---- mapping.template async and ea-t (src/gmi/async_training.hpp): ServedLearning ----
  // A serving GMI acts num_steps vector steps with the weights it last received (its replay stays
  // empty); its trainer stores each step's transitions and runs that step's updates as learn()
  // does after an env step of its own, vector step k = iteration * num_steps + t of N rows.
  ServedLearning* served_learning() final { return this; }
  void prepare_serving(int trainer_envs) final { acting_envs_ = trainer_envs; }
  void serve_rollout(std::int64_t index, HostRollout& out) final;
  IterationMetrics learn_rollout(const HostRollout& in, double time_rollout) final;
  void set_policy(const std::vector<float>& params, const std::vector<double>& acting) final;
  std::vector<double> acting_state_host() const final { return acting_state(); }
  std::vector<float> start_obs_host() const final;
  void set_start_obs(const std::vector<float>& obs) final;
  std::vector<envs::StateArray> env_state() const final;
  void set_env_state(const std::vector<envs::StateArray>& state) final;

  /// Public for CUDA device lambdas: the transitions of the last vector step into the replay
  /// shard (the true next observation where an episode ended), then the next observation.
  void store_transitions();

  /// Where one optimiser step leaves its statistics (device slots of its kind); the step itself
  /// adds them to the iteration's sums of that kind.
  struct Record {
    rl::Sums4* stats;
    float* norm;
    int kind;
  };
  /// Public for CUDA device lambdas, for the algorithms: average the gradient of parameters
  /// [offset, offset + n) over GMIs (nothing with one GMI), take its norm into r.norm and, if
  /// finite, an Adam step (its count: the device counter of r.kind; a.step unused).  A
  /// non-finite loss sum in r.stats or the fault hook poisons the gradient first, so every GMI
  /// skips alike.  Then r's statistics join the iteration's sums of its kind.
  void optimizer_step(std::size_t offset, std::size_t n, const optim::AdamArgs& a, const Record& r);
  /// Public for CUDA device lambdas: one update event at step index g (sample, update, count),
  /// captured or direct; returns the target updates it made itself (targets_within).
  int update_event(std::int64_t g);
  /// Public for CUDA device lambdas: the device's event count advances by one.
  void count_update();

  /// What an iteration's optimiser steps of one kind add up to (device memory, read at its end).
  struct RecordSums {
    rl::Sums4 stats;        ///< of the steps taken (finite norms)
    double norm_sum = 0;    ///< of the steps taken
    double records = 0;     ///< steps tried
    double taken = 0;       ///< steps taken
  };

 protected:
  /// \param num_params every trainable parameter, one flat buffer (gradients and Adam alike)
  /// \param stored_act_dim floats per action in the replay (discrete: 1)
  /// \param env the envs to step (nullptr: the config's own, own_env())
  OffPolicyTrainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer,
                   std::size_t num_params, const UpdateSchedule& schedule, EnvPtr env = nullptr);

  // ---- what DQN and SAC implement ----
  /// Actions for obs_ at vector step `k` into actions_ (as the replay stores them); returns what
  /// the envs get (actions_, or a clipped or rescaled copy in env_actions_).
  virtual const float* act(std::int64_t k) = 0;
  /// One update event (`u`: its index over the run; `g`: its step index, -1 with U > 0), on
  /// batch_ (already sampled).  Each optimiser step it takes calls optimizer_step().
  virtual void update(std::int64_t u, std::int64_t g) = 0;
  /// `times` target updates in a row with no update between them: one Polyak step with
  /// tau' = 1 - (1 - tau)^times, which is the same.
  virtual void update_target(int times) = 0;
  /// Per-record-kind sums and counts of the iteration (non-skipped records) into m.losses.
  virtual void losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums,
                      const std::vector<double>& counts) const = 0;
  /// Which captured sequence update event `u` (step index g, -1 with U > 0) launches: events of
  /// one kind must launch the same work.  Default: all alike.
  virtual int update_kind(std::int64_t /*u*/, std::int64_t /*g*/) const { return 0; }
  /// Target updates that update event `u` (step index g) makes itself at its end (SAC, TD3: in
  /// its captured graph, no launch of their own), counted into the checkpoint's `target_updates`;
  /// learn() then skips the target update of that g.  Default: none.
  virtual int targets_within(std::int64_t /*u*/, std::int64_t /*g*/) const { return 0; }
  /// Whether update event `u` (step index g) changes what act() reads (the acting network).  Where
  /// no event of a vector step does, the next step's actions and host physics start before its
  /// updates run.  Default: every update does.
  virtual bool update_changes_actor(std::int64_t /*u*/, std::int64_t /*g*/) const { return true; }
  /// What its act() reads besides the weights and counters (ServedLearning::acting_state_host;
  /// DQN: its exploration schedule), and taking it on a serving GMI.  Default: nothing.
  virtual std::vector<double> acting_state() const { return {}; }
  virtual void set_acting_state(const std::vector<double>& /*state*/) {}
  /// The algorithm's own shared state (targets, optimiser counters) into / from `s`.
  virtual void save_extra(TrainerState& s) const = 0;
  virtual void load_extra(const TrainerState& s) = 0;

  // ---- helpers for the algorithms ----
  Record record(int kind);
  /// The transitions of update `u` from this GMI's shard into batch_ (device storage: the draw
  /// numbered by the device's event count, which equals u).
  void sample(std::int64_t u);
  /// The update events done, in device memory (what captured launches number their draws by).
  const std::int64_t* device_updates() const { return counters_.data(); }
  /// Adam steps taken by the optimiser of `kind` (a host read) and their restoration.
  std::int64_t adam_count(int kind) const;
  void set_adam_count(int kind, std::int64_t count);
  int batch_size() const { return batch_.size; }
  /// Env steps before vector step k, what the warm-up and exploration schedules count: k N, or on
  /// a serving GMI k times its trainer's N (prepare_serving).
  std::int64_t env_steps_before(std::int64_t k) const { return k * acting_envs_; }
  float* grads() { return grads_.data(); }

  config::Config cfg_;
  ExecSpace space_;
  std::unique_ptr<envs::VecEnvBase> env_;
  mpi::GradientReducer* reducer_;
  std::uint64_t env_offset_ = 0;
  std::uint64_t gmi_ = 0;  ///< env_offset / num_envs: the GMI's index (random streams)
  int N_ = 0, T_ = 0, od_ = 0, ad_ = 0, stored_ad_ = 0;
  std::size_t P_ = 0;
  UpdateSchedule schedule_;
  std::int64_t iteration_ = 0;
  std::int64_t updates_ = 0;         ///< update events done
  std::int64_t target_updates_ = 0;  ///< target updates done
  /// Non-finite optimiser steps in a row, per record kind (DQN: 0; SAC: 0 critic, 1 actor, 2 alpha).
  std::array<int, kMaxRecordKinds> nonfinite_streaks_{};
  std::int64_t refill_until_ = 0;    ///< no updates before this vector step (a resume without replay)
  View1<float> params_, grads_, adam_m_, adam_v_;
  View1<float> obs_, next_obs_, final_obs_, real_next_, rewards_, actions_, env_actions_, act_low_, act_high_;
  View1<std::uint8_t> terminated_, truncated_;
  rl::ReplayBuffer replay_;
  rl::ReplayBatch batch_;

 private:
  /// The buffers save_state and load_state copy (src/algos/trainer_state.hpp).
  StateBuffers state_buffers() const;
  /// The update and target events of vector step k, in order.
  void learn(std::int64_t k);
  /// Where a vector step's env results go (the current next_obs_, final_obs_, ... buffers).
  envs::StepOutputs step_outputs();
  /// Whether an update event of vector step k changes the acting network (the schedule of learn()).
  bool learn_changes_actor(std::int64_t k) const;
  void finish_iteration(IterationMetrics& m);
  /// The end of an iteration whose vector steps ran (statistics, timings, counters).
  IterationMetrics end_iteration(const envs::EpisodeStats& episodes, double t_act, double t_learn);
  /// A served rollout's rows on the device (allocated at the first served rollout, as HostRollout).
  struct RolloutRows {
    View1<float> obs, final_obs, actions, rewards;
    View1<std::uint8_t> terminated, truncated;
  };
  RolloutRows& rollout_rows();
  /// counters_: [kUpdates] events done, [kAdam + kind] Adam steps, [kStreak + kind] non-finite
  /// steps in a row.
  static constexpr int kUpdates = 0, kAdam = 1, kStreak = 1 + kMaxRecordKinds;
  void set_counter(int slot, std::int64_t value);

  bool inject_nonfinite_ = false;
  bool overlap_ = true;
  int acting_envs_ = 0;  ///< env steps per vector step that act() counts (N_; a serving GMI's trainer's)
  RolloutRows rows_;     ///< served rollouts (empty until the first)
  View1<std::int64_t> counters_;
  View1<double> adam_coeffs_;      ///< two per kind (the bias corrections of its step)
  View1<rl::Sums4> stat_slots_;    ///< one per kind
  View1<float> norm_slots_;        ///< one per kind
  View1<double> norm_sum_;         ///< the optimiser steps' scratch for their norms
  View1<RecordSums> record_sums_;  ///< one per kind
  bool graphs_ = false;            ///< device.graphs applies to the update events
  struct UpdateGraph {
    std::unique_ptr<CapturedSequence> seq;
    bool warm = false;  ///< ran directly once (allocations happen outside the capture)
  };
  std::vector<UpdateGraph> update_graphs_;  ///< by update_kind()
  CapturedSequence* capturing_ = nullptr;    ///< the sequence being captured (its reductions run between graphs)
};

}  // namespace gmi::algos
