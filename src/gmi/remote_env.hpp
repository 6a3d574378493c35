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
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/envs/multiagent/multi_agent.hpp"
#include "kernels/envs/vec_env.hpp"
#include "mpi/channels.hpp"
#include "src/config/config.hpp"
#include "src/gmi/roles.hpp"

namespace gmi::instances {

/// Rows of one kind a simulator's step has: a single-agent env's envs, or one role's agents of a
/// multi-agent game (E x agents of the role).
struct RowGroup {
  std::string prefix;  ///< "" (single-agent) or "<role>." (the package names' prefix)
  int rows = 0;        ///< per simulator
  int obs_dim = 0;
  int act_dim = 0;     ///< floats per row of actions
};

/// The row groups of `cfg`'s environment with `sim_envs` envs per simulator.
std::vector<RowGroup> row_groups(const config::Config& cfg, int sim_envs);

/// The channels of an e-at job (collective over MPI_COMM_WORLD: every GMI builds them, with the
/// same plan).
class SimulatorLinks {
 public:
  /// `plan`: the e-at role plan (routes simulator -> trainer); `me`: this GMI's MPI_COMM_WORLD
  /// rank; `sim_envs`: envs per simulator.  Each trainer must have the same number of simulators
  /// (checked by the caller).
  SimulatorLinks(const RolePlan& plan, int me, const config::Config& cfg, std::vector<RowGroup> groups, int sim_envs);
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
  const std::vector<RowGroup>& groups() const { return groups_; }
  /// The outputs' channel plan, in one line (the log).
  std::string plan_text() const;

  // ---- trainer ----
  /// Send command `op` with `arg` to every simulator (no actions).
  void command(int op, std::int64_t arg);
  /// Command `op` to simulator k alone, with per row group its actions ([rows][act_dim] host
  /// floats; empty: none).
  void command_one(int k, int op, std::int64_t arg, const std::vector<const float*>& actions = {});
  /// Simulator k's outputs of the last step or reset, per row group five host pointers
  /// (next_obs, final_obs, reward, terminated, truncated): package 5 g + i.
  std::vector<const std::byte*> outputs(int k);
  /// Release every simulator from serving (the end of a runtime call); `iteration`: the trainer's.
  void release(std::int64_t iteration) { command(kRelease, iteration); }

  // ---- simulator ----
  struct Command {
    int op = 0;
    std::int64_t arg = 0;
    std::vector<const float*> actions;  ///< per row group [rows][act_dim] host floats, valid until the next take()
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
  std::vector<RowGroup> groups_;
  std::vector<int> sims_;
  std::vector<std::unique_ptr<mpi::ExperienceChannels>> commands_;  // per simulator position
  std::unique_ptr<mpi::ExperienceChannels> outputs_;
  std::vector<std::vector<std::byte>> no_actions_;  // per row group: what a command without actions carries
};

/// The trainer's view of its simulators' envs.
class RemoteVecEnv final : public envs::VecEnvBase {
 public:
  RemoteVecEnv(std::shared_ptr<SimulatorLinks> links, const envs::EnvSpec& spec);

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

/// The trainer's view of its simulators' multi-agent games (role r's rows of simulator k:
/// [k E agents_r, (k + 1) E agents_r)).
class RemoteMultiAgentVecEnv final : public envs::MultiAgentVecEnvBase {
 public:
  RemoteMultiAgentVecEnv(std::shared_ptr<SimulatorLinks> links, const envs::MultiAgentSpec& spec);
  void reset_all(const ExecSpace& space, float* const* obs_per_role, std::uint64_t first_episode = 0) override;
  void step(const ExecSpace& space, const float* const* actions_per_role, const envs::StepOutputs* out_per_role) override;
  std::vector<envs::EpisodeStats> take_episode_stats(const ExecSpace& space) override;
  std::vector<envs::StateArray> save_state(const ExecSpace& space) const override;
  void load_state(const ExecSpace& space, const std::vector<envs::StateArray>& state) override;
  /// Not kept on the trainer (trajectory files are gmi_drl eval's, under dp).
  std::vector<envs::StateArray> full_state(const ExecSpace& space) const override;

 private:
  std::shared_ptr<SimulatorLinks> links_;
  std::vector<std::vector<float>> actions_;  // per role, host copies of one step's actions
};

/// A simulator GMI's envs, answering its trainer.
class SimulatorServer {
 public:
  /// `cfg`: env.num_envs = the simulator's envs; `env_offset`: the global index of its first env.
  SimulatorServer(std::shared_ptr<SimulatorLinks> links, const config::Config& cfg, std::uint64_t env_offset);
  /// Answer commands until released; returns the trainer's iteration the release carried.
  std::int64_t serve();
  /// The single-agent env's spec (a multi-agent game's: its first role's sizes).
  const envs::EnvSpec& spec() const { return spec_; }
  /// Seconds spent stepping (the last serve()).
  double step_seconds() const { return step_s_; }

 private:
  void step(const std::vector<const float*>& actions);
  void reset(std::uint64_t first_episode);
  std::vector<double> episode_stats();
  std::vector<envs::StateArray> save_env() const;
  void load_env(const std::vector<envs::StateArray>& state);
  std::shared_ptr<SimulatorLinks> links_;
  ExecSpace space_;
  std::unique_ptr<envs::VecEnvBase> env_;               // single-agent
  std::unique_ptr<envs::MultiAgentVecEnvBase> game_;    // or a multi-agent game
  envs::EnvSpec spec_;
  struct Buffers {  // one row group's
    View1<float> actions, next_obs, final_obs, reward;
    View1<std::uint8_t> terminated, truncated;
    std::vector<float> h_next, h_final, h_reward;
    std::vector<std::uint8_t> h_term, h_trunc;
    envs::StepOutputs outputs() const;
  };
  std::vector<Buffers> b_;
  double step_s_ = 0;
};

}  // namespace gmi::instances
