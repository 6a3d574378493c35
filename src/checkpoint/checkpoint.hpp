#pragma once
/// \file
/// \brief The checkpoint file: one HDF5 file per checkpoint, written collectively by all GMIs
/// (parallel HDF5), every dataset chunked with the Fletcher32 checksum.
///
///   /meta        attributes: format_version, gmi_drl_version, config (resolved YAML), created,
///                run_dir, layout (num_nodes, num_gpus, num_gmis, gmis_per_gpu), counters
///                (iteration, env_steps, updates), wall_time_s, algo, env, sizes, reducer
///   /policy      params [P] float32: every trainable parameter of the algorithm
///   /optimizer   m, v [P] float32; attribute step (the main Adam step count)
///   /normalizer  obs [3][obs_dim], return [3][1] float64 (mean, var, count rows), if kept
///   /algo        attribute name; counters [K] int64 with attribute names; <tensor> [n] float32
///                (target networks, ...)
///   /rng         key [G] uint64, next_<stream> [G] int64, env_episode [G*N] uint64: every GMI's
///                Philox counters
///   /experience  obs [G*N][obs_dim], return_acc [G*N] (if kept), env/<array> [G*N]: each GMI's
///                rows; replay/ (off-policy, checkpoint.replay): obs, next_obs [G*S][obs_dim],
///                actions [G*S][act_dim], rewards [G*S], terminated [G*S] uint8 in ring order,
///                attributes capacity, size S and cursor (the same on every GMI)
///   /metrics     table [iterations][columns] float64; attribute columns
///
/// G GMIs with N envs each; GMI r owns rows [r*N, (r+1)*N) of the per-env datasets (and
/// [r*S, (r+1)*S) of the replay's).  Version 1 files (PPO, before /algo) are read as PPO.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mpi/comm.hpp"
#include "src/algos/trainer.hpp"

namespace gmi::checkpoint {

/// Bumped whenever the layout above changes incompatibly.
inline constexpr std::int64_t kFormatVersion = 3;

struct Meta {
  std::int64_t format_version = kFormatVersion;
  std::string gmi_drl_version;
  std::string config;   ///< resolved YAML (config::to_yaml)
  std::string created;  ///< UTC, ISO 8601
  std::string run_dir;
  std::int64_t num_nodes = 1, num_gpus = 1, num_gmis = 1;
  std::vector<std::int64_t> gmis_per_gpu;
  std::int64_t iteration = 0, env_steps = 0, updates = 0;
  double wall_time_s = 0;
  std::string algo = "ppo";
  std::string env;
  std::int64_t envs_per_gmi = 0, obs_dim = 0, num_params = 0, seed = 0;
  /// Simulator GMIs each GMI's envs step on (mapping.template e-at: envs_per_gmi is that many
  /// times env.num_envs; 1 under dp and in files before format 3).
  std::int64_t simulators_per_gmi = 1;
  std::int64_t num_steps = 0;      ///< vector steps per iteration
  std::int64_t update_epochs = 0;  ///< PPO's epochs per iteration (0 for other algorithms)
  std::int64_t nonfinite_streak = 0;
  std::int64_t replay_capacity = 0;  ///< replay.capacity (off-policy)
  std::string reducer;  ///< the gradient reduction in use, e.g. "har (ipc)" ("" for one GMI)
};

/// The metrics history, one row per iteration (row-major).
struct Metrics {
  std::vector<std::string> columns;
  std::vector<double> values;
  std::size_t rows() const { return columns.empty() ? 0 : values.size() / columns.size(); }
};

/// Collective over `comm` (rank r = GMI r): write `path`.  `state` is this GMI's; its shared
/// part must be identical on all ranks, and `meta` and `metrics` too.  `before_close` (tests'
/// fault injection) runs when every dataset is written but the file is not yet flushed.
void write(const std::string& path, MPI_Comm comm, const Meta& meta, const algos::TrainerState& state,
           const Metrics& metrics, const std::function<void()>& before_close = {});

/// Read /meta only.  Throws gmi::InputError "FILE: problem".
Meta read_meta(const std::string& path);

/// What one GMI restores.
struct Contents {
  Meta meta;
  algos::TrainerState state;  ///< shared part, and the GMI's own part when `gmi` >= 0
  Metrics metrics;
};
/// Read the shared part and, for gmi >= 0, GMI `gmi`'s rows (serial; every rank may call it).
/// Throws gmi::InputError "FILE: problem".
Contents read(const std::string& path, int gmi);

/// Read everything (so every checksum is checked) and check every shape against /meta.
/// Returns /meta; throws gmi::InputError "FILE: problem".
Meta verify(const std::string& path);

/// A summary: version, layout, counters, every dataset with shape and type.
std::string inspect(const std::string& path);

}  // namespace gmi::checkpoint
