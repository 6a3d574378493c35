#pragma once
/// \file
/// \brief Environments on other GMIs (mapping.template e-at, paper 003 Figure 6d): an agent+trainer
/// GMI steps the envs of its simulator GMIs through experience channels (mpi/channels.hpp) as if
/// they were its own.
///
///  - SimulatorLinks: the channels of one e-at job, built on every GMI from the role plan: per
///    simulator position k, commands (one 16-byte command and the actions of the simulator's
///    envs) from each trainer to its k-th simulator; and the step's outputs (next_obs, final_obs,
///    reward, terminated, truncated; grouped into channels by channels.plan) from every simulator
///    to its trainer.
///  - RemoteVecEnv (trainer): an envs::VecEnvBase whose envs [k E, (k + 1) E) are simulator k's.
///    Every call sends its command to all simulators first and then collects, so the simulators
///    step side by side.  It steps asynchronously too (step_async, ranges of whole simulators):
///    PPO's groups (env.async_halves: the trainer acts for one half of its simulators while the
///    other half steps) and the off-policy trainers' overlap (the next step's physics during the
///    updates) run on the simulators.  Episode statistics and checkpoint state travel on request.
///  - SimulatorServer (simulator): answers its trainer's commands with its own envs until the
///    trainer releases it (at the end of each call the runtime makes: construction, iteration,
///    checkpoint, restore).
///
/// The simulators' envs have the global indices the trainer's would have (its offset + k E), so a
/// trainer with S simulators of E envs steps the same episodes as one GMI with S E envs.
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/envs/vec_env.hpp"
#include "mpi/channels.hpp"
#include "src/config/config.hpp"
#include "src/gmi/roles.hpp"

namespace gmi::instances {

/// The channels of an e-at job (collective over MPI_COMM_WORLD: every GMI builds them, with the
/// same plan).
class SimulatorLinks {
 public:
  /// `plan`: the e-at role plan (routes simulator -> trainer); `me`: this GMI's MPI_COMM_WORLD
  /// rank; `sim_envs`: envs per simulator.  Each trainer must have the same number of simulators
  /// (checked by the caller).
  SimulatorLinks(const RolePlan& plan, int me, const config::Config& cfg, const envs::EnvSpec& spec, int sim_envs);
  ~SimulatorLinks();
  SimulatorLinks(const SimulatorLinks&) = delete;
  SimulatorLinks& operator=(const SimulatorLinks&) = delete;

  bool is_trainer() const { return !sims_.empty(); }
  bool is_simulator() const { return trainer_ >= 0; }
  /// A trainer's simulators (MPI_COMM_WORLD ranks), in route order.
  const std::vector<int>& simulators() const { return sims_; }
  /// A simulator's trainer and its position among that trainer's simulators.
  int trainer() const { return trainer_; }
  int position() const { return position_; }
  int sim_envs() const { return E_; }
  const envs::EnvSpec& spec() const { return spec_; }
  /// The outputs' channel plan, in one line (the log).
  std::string plan_text() const;

  // ---- trainer ----
  /// Send command `op` with `arg` (and, for a step, the actions of simulator k's envs) to every
  /// simulator; `actions`: [S E][act_dim] host floats, or nullptr.
  void command(int op, std::int64_t arg, const float* actions = nullptr);
  /// The same to simulator k alone; `actions`: its [E][act_dim] host floats, or nullptr.
  void command_one(int k, int op, std::int64_t arg, const float* actions = nullptr);
  /// Simulator k's outputs of the last step or reset, one host pointer per package
  /// (next_obs, final_obs, reward, terminated, truncated).
  std::vector<const std::byte*> outputs(int k);
  /// Release every simulator from serving (the end of a runtime call); `iteration`: the trainer's.
  void release(std::int64_t iteration) { command(kRelease, iteration); }

  // ---- simulator ----
  struct Command {
    int op = 0;
    std::int64_t arg = 0;
    const float* actions = nullptr;  ///< [E][act_dim] host floats, valid until the next take()
  };
  Command take();
  void send_outputs(const std::vector<const void*>& packages);

  /// Blobs beside the channels (statistics and checkpoint state), on MPI_COMM_WORLD with this
  /// module's tag.
  void send_blob(int to, const std::vector<std::byte>& data, const std::string& what);
  std::vector<std::byte> receive_blob(int from, const std::string& what);

  enum Op : int { kStep = 0, kReset = 1, kStats = 2, kSave = 3, kLoad = 4, kRelease = 5 };

 private:
  int E_ = 0, trainer_ = -1, position_ = -1;
  envs::EnvSpec spec_;
  std::vector<int> sims_;
  std::vector<std::unique_ptr<mpi::ExperienceChannels>> commands_;  // per simulator position
  std::unique_ptr<mpi::ExperienceChannels> outputs_;
  std::vector<std::byte> command_row_;  // [S E] actions, staged with the command for one simulator
};

/// The trainer's view of its simulators' envs.
class RemoteVecEnv final : public envs::VecEnvBase {
 public:
  explicit RemoteVecEnv(std::shared_ptr<SimulatorLinks> links);

  void reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode = 0) override;
  void step(const ExecSpace& space, const float* actions, const envs::StepOutputs& out) override;
  bool can_step_async() const override { return true; }
  /// [lo, hi) must cover whole simulators (multiples of their env count).
  void step_async(const ExecSpace& space, const float* actions, const envs::StepOutputs& out, int lo, int hi) override;
  void step_wait(const ExecSpace& space) override;
  envs::EpisodeStats take_episode_stats(const ExecSpace& space) override;
  /// The simulators' arrays, each the concatenation of theirs in simulator order (the layout of
  /// one GMI with all their envs).
  std::vector<envs::StateArray> save_state(const ExecSpace& space) const override;
  void load_state(const ExecSpace& space, const std::vector<envs::StateArray>& state) override;

 private:
  struct Queued {
    envs::StepOutputs out;
    int lo = 0, hi = 0;
  };
  std::shared_ptr<SimulatorLinks> links_;
  std::vector<float> actions_;  // host copy of one step's actions
  std::deque<Queued> queued_;   // steps sent, oldest first
};

/// A simulator GMI's envs, answering its trainer.
class SimulatorServer {
 public:
  /// `cfg`: env.num_envs = the simulator's envs; `env_offset`: the global index of its first env.
  SimulatorServer(std::shared_ptr<SimulatorLinks> links, const config::Config& cfg, std::uint64_t env_offset);
  /// Answer commands until released; returns the trainer's iteration the release carried.
  std::int64_t serve();
  const envs::EnvSpec& spec() const { return env_->spec(); }
  /// Seconds spent stepping (the last serve()).
  double step_seconds() const { return step_s_; }

 private:
  void step(const float* actions);
  std::shared_ptr<SimulatorLinks> links_;
  ExecSpace space_;
  std::unique_ptr<envs::VecEnvBase> env_;
  int E_ = 0, od_ = 0, ad_ = 0;
  View1<float> actions_, next_obs_, final_obs_, reward_;
  View1<std::uint8_t> terminated_, truncated_;
  std::vector<float> h_next_, h_final_, h_reward_;
  std::vector<std::uint8_t> h_term_, h_trunc_;
  double step_s_ = 0;
};

}  // namespace gmi::instances
