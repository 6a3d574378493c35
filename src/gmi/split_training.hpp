#pragma once
/// \file
/// \brief Training with the roles on separate GMIs (mapping.template e-at, paper 003 Figure 6d):
/// simulator GMIs step envs, agent+trainer GMIs act on their observations and learn.
///
/// Every GMI runs the same training loop (src/runtime/) through the algos::Trainer interface:
///  - a trainer GMI runs the algorithm's own trainer on a RemoteVecEnv (src/gmi/remote_env.hpp)
///    holding its S simulators' envs, with the config of one GMI of S x env.num_envs envs
///    (trainer_config); gradients are averaged among the trainers alone;
///  - a simulator GMI's Trainer serves its trainer's env calls in each call the loop makes
///    (construction, iterate, save_state, load_state), and reports no statistics of its own (its
///    episodes are counted by its trainer).
/// Checkpoints are written by the trainers: each holds its simulators' env state as if the envs
/// were its own, so a checkpoint of T trainers with S simulators of E envs is one of T GMIs with
/// S E envs (and resumes under dp on another layout, or under e-at on the same one exactly).
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "mpi/gradient_reducer.hpp"
#include "mpi/topology.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"
#include "src/gmi/remote_env.hpp"
#include "src/gmi/roles.hpp"

namespace gmi::instances {

struct SplitTraining {
  RolePlan plan;
  std::vector<int> trainers;   ///< MPI_COMM_WORLD ranks of the trainer GMIs, in GMI-rank order
  int sims_per_trainer = 0;    ///< S
  int sim_envs = 0;            ///< E: env.num_envs of the run's config, per simulator GMI
  int me = 0;                  ///< this GMI's MPI_COMM_WORLD rank
  bool trainer = false;        ///< this GMI trains
  int trainer_index = 0;       ///< this GMI's trainer's index among `trainers`
  int position = 0;            ///< a simulator's position among its trainer's simulators
  bool async = false;          ///< mapping.template async or ea-t (src/gmi/async_training.hpp), else e-at
  bool lockstep = false;       ///< ea-t: async's machinery, each rollout made with the newest update's weights
  config::Config trainer_config;  ///< the trainers' config: env.num_envs S E, derived for T GMIs
  /// Global index of this GMI's first env: trainer t owns [t S E, (t + 1) S E), of which its
  /// k-th simulator steps [t S E + k E, t S E + (k + 1) E).
  std::uint64_t env_offset() const;
  /// MPI_COMM_WORLD ranks of the simulator GMIs (those that step envs), in rank order.
  std::vector<int> simulators() const;
};

/// The trainers' config: `cfg` with env.num_envs = `sims_per_trainer` x its env.num_envs, derived
/// for `trainers` GMIs, the algorithm's checks included (gmi::InputError naming the trainer's envs).
config::Config trainer_config_of(const config::Config& cfg, int sims_per_trainer, int trainers);

/// The role split `cfg`'s mapping.template asks for on `layout` (nullopt under dp), for the GMI of
/// MPI_COMM_WORLD rank `me`.  Throws gmi::InputError naming the key for what training cannot do
/// under it: a serving template, env.batch_size (groups
/// are halves of a trainer's simulators: env.async_halves, with an even number of them),
/// device.graphs on for PPO, trainers with different numbers of simulators.
std::optional<SplitTraining> plan_split_training(const config::Config& cfg, const mpi::Layout& layout, int me);
/// plan_split_training without the trainers' config (trainer_config unset): who does what, which
/// does not depend on env.num_envs or the algorithm's sizes.  The same errors, but for the sizes.
std::optional<SplitTraining> plan_split_roles(const config::Config& cfg, const mpi::Layout& layout, int me);

/// Runs `work`, which only some GMIs do (the trainers' reduction set-up, their checkpoint write),
/// and makes an error of any GMI every GMI's: gmi::InputError if any GMI's was bad input, else
/// gmi::Error, with the first failing GMI's line (collective over `comm`, bounded).
void agreed(const std::function<void()>& work, MPI_Comm comm = MPI_COMM_WORLD);

/// This GMI's Trainer under an e-at split (collective over MPI_COMM_WORLD: builds the channels;
/// under async, src/gmi/async_training.hpp's make_async_trainer):
/// the algorithm's trainer on its simulators' envs, or a simulator.  `cfg`: the trainers' config
/// with the GMI's env.threads; `reducer`: the trainers' (nullptr on simulators or with one trainer).
std::unique_ptr<algos::Trainer> make_split_trainer(const SplitTraining& split, const config::Config& cfg,
                                                   mpi::GradientReducer* reducer);

}  // namespace gmi::instances
