#pragma once
/// \file
/// \brief The steps of a training run, which `training.cpp` runs in order: the config and the
/// checkpoint to resume from (`train_setup.cpp`), set-up, restoring a checkpoint
/// (`train_resume.cpp`), the iteration loop (`train_loop.cpp`), checkpoints
/// (`train_checkpoint.cpp`) and the end (`train_loop.cpp`).  Internal to src/runtime.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/gpu_monitor.hpp"
#include "mpi/environment.hpp"
#include "mpi/progress.hpp"
#include "src/algos/trainer.hpp"
#include "src/checkpoint/checkpoint.hpp"
#include "src/checkpoint/store.hpp"
#include "src/config/config.hpp"
#include "src/gmi/session.hpp"
#include "src/gmi/split_training.hpp"
#include "src/io/tensorboard.hpp"
#include "src/runtime/faults.hpp"
#include "src/runtime/run_dir.hpp"
#include "src/runtime/signals.hpp"
#include "src/runtime/train.hpp"
#include "src/runtime/watchdog.hpp"

namespace gmi::runtime::training {

using Clock = std::chrono::steady_clock;

/// Which checkpoint to resume from ("" for a new run).  Rank 0 looks; every rank gets its answer
/// or its error.
struct ResumeChoice {
  std::string path;
  std::string config;  ///< the checkpoint's resolved config
};

/// A training run's state.  The members are declared in the order the steps build them, so they
/// are destroyed in reverse: the metrics file, the trainer and the reducer before the session
/// (which holds Kokkos), the signal handlers last.
struct Run {
  Run(const TrainOptions& options, mpi::Environment& environment) : o(options), mpi(environment) {}
  const TrainOptions& o;
  mpi::Environment& mpi;
  SignalRequests signals;  // from the start: a signal during set-up is acted on at the first boundary
  ResumeChoice resume;
  config::Config cfg;
  std::optional<StallWatchdog> watchdog;
  mpi::Progress& progress = mpi::progress();
  std::string dir;  ///< the run directory, the same on every rank
  std::optional<checkpoint::Store> store;
  std::optional<Faults> faults;
  std::optional<instances::Session> session;
  /// mapping.template e-at: the roles, and cfg is the trainers' config (trainer_config); the
  /// run's own config is `run_config` (what config.yaml and checkpoints keep).
  std::optional<instances::SplitTraining> split;
  std::string run_config;
  /// The GMIs that run the iteration loop (its statistics, signals and checkpoints): every GMI,
  /// but under async the trainers alone; MPI_COMM_NULL on a serving GMI, which runs its own.
  MPI_Comm comm = MPI_COMM_WORLD;
  int learners = 1;  ///< GMIs that learn (all under dp; the trainers under a split)
  std::optional<checkpoint::Meta> resume_meta;
  bool same_layout = false;  ///< resuming on the checkpoint's GMIs and envs per GMI
  std::unique_ptr<mpi::GradientReducer> reducer;
  std::unique_ptr<algos::Trainer> trainer;
  std::int64_t per_iteration = 0;  ///< env steps of one iteration, all GMIs together
  bool kernels_said = false;       ///< under a split: rank 0 said the first trainer's kernel choice
  /// The first learner's loss columns and description (a simulator GMI has neither of its own).
  std::string describe;
  std::vector<std::string> losses;   ///< the algorithm's statistics (Trainer::loss_columns)
  std::vector<std::string> columns;  ///< metrics.csv's columns
  std::size_t first_term = 0;        ///< columns[first_term...]: the episodes' reward terms
  checkpoint::Metrics history;
  double wall_offset = 0;  ///< wall time of the runs before this one (resumed)
  std::optional<MetricsCsv> csv;  ///< rank 0 writes the metrics
  std::optional<io::TensorBoardWriter> tensorboard;  ///< and, with log.tensorboard, as TensorBoard scalars
  /// How busy this GMI's GPU is: sampled by the GPU's first GMI (its slot 0: a learner under dp and
  /// async, a simulator under e-at, which runs the loop too), for metrics.csv's gpu_util_pct and
  /// gpu_mem_mib.
  std::optional<GpuMonitor> gpu;
  double gpu_util_sum = 0;  ///< rows with a utilisation figure, for the mean the last line gives
  int gpu_util_rows = 0;
  std::string last_checkpoint;
  Clock::time_point last_checkpoint_time;
  Clock::time_point start;  ///< of the first iteration
  double best_return = -INFINITY;
  std::int64_t first_iteration = 0;
  /// The rank in `comm` of the first learner: 0, but under e-at the first trainer's world rank.
  int first_learner() const { return split && !split->async ? split->trainers.front() : 0; }
};

/// Rank 0 verified the checkpoint; a read failing now on some rank only (the file changed under
/// us) is that rank's failure, which ends the job, not an input error the others would wait on.
template <class Read>
auto rank_local(Read&& read) {
  try {
    return read();
  } catch (const InputError& e) {
    throw Error(std::string("reading a verified checkpoint failed: ") + e.what());
  }
}

// train_setup.cpp
/// Work the learners alone do under a role split (building their reducer, writing a checkpoint):
/// there an error it throws on some learners is every GMI's, with its kind (InputError or Error),
/// so that the simulators end with the same line instead of waiting for their trainer.  Under dp
/// it runs as is.  Collective over `comm` under a split.
void on_learners(const Run& r, const std::function<void()>& work, MPI_Comm comm = MPI_COMM_WORLD);
/// The checkpoint to resume from and the run's config (checked against the checkpoint's).
void load_config(Run& r);
/// Run directory, layout and session, reducer, trainer and the metrics' columns.
void set_up(Run& r);

// train_resume.cpp
/// Reads the checkpoint's metadata (before the reducer is chosen: the same layout keeps its).
void read_resume_meta(Run& r);
/// Restores the trainer and the metrics history.  Returns false when the checkpoint is already at
/// the last iteration (nothing to do; the status file says done).
bool restore(Run& r);

// train_checkpoint.cpp
/// Every GMI writes its part of one checkpoint file; `why` goes into the log line.
void save_checkpoint(Run& r, const std::string& why);

// train_loop.cpp
/// Logs what the run is about to do, then runs iterations until the last one or a stop signal.
/// Returns false when a signal stopped it (the status file says so).
bool iterate(Run& r);
/// The summary line and the status file of a run that reached its last iteration.
void finish(Run& r);

}  // namespace gmi::runtime::training
