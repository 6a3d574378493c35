// Training from a checkpoint: its metadata, the trainer's state and the metrics so far.
#include <spdlog/spdlog.h>

#include "src/runtime/training.hpp"

namespace gmi::runtime::training {
namespace {

/// Another layout: the policy, optimiser and normalisers carry over; the environments start fresh
/// episodes from a range of episode indices no earlier run used.
void restore_other_layout(Run& r, checkpoint::Contents& c) {
  const checkpoint::Meta& meta = *r.resume_meta;
  const std::size_t width = r.columns.size();
  c.state.iteration = meta.env_steps / r.per_iteration;
  const std::uint64_t first_episode = std::uint64_t(meta.iteration + 1) << 32;
  r.trainer->load_shared_state(c.state, first_episode);
  std::size_t rows = 0;
  while (rows < r.history.rows() && r.history.values[rows * width] <= double(c.state.iteration)) ++rows;
  r.history.values.resize(rows * width);
  spdlog::warn("resuming {} ({} GMI(s) x {} envs) on {} GMI(s) x {} envs: policy, optimizer and normalizers "
               "restored; environments re-seeded (episode index {}); continuing at iteration {} of {}; this "
               "run will not repeat an uninterrupted one bit for bit",
               r.resume.path, meta.num_gmis, meta.envs_per_gmi, r.learners, r.cfg.env.num_envs, first_episode,
               c.state.iteration, r.cfg.num_iterations);
}

/// The checkpoint's metrics history in this version's columns: columns it lacks (a checkpoint of
/// an earlier version, before gpu_util_pct and gpu_mem_mib) are NaN; any other difference is an
/// error.
std::vector<double> history_in_columns(const Run& r, const checkpoint::Metrics& saved) {
  if (saved.columns == r.columns) return saved.values;
  std::vector<std::size_t> from;  // for each of this version's columns, the saved one or npos
  std::size_t next = 0;
  for (const std::string& c : r.columns) {
    const bool added = c == "gpu_util_pct" || c == "gpu_mem_mib";
    if (next < saved.columns.size() && saved.columns[next] == c) from.push_back(next++);
    else if (added) from.push_back(std::string::npos);
    else break;
  }
  if (from.size() != r.columns.size() || next != saved.columns.size() || saved.columns.empty())
    throw InputError(r.resume.path + ": /metrics has other columns than this gmi_drl writes");
  const std::size_t rows = saved.values.size() / saved.columns.size();
  std::vector<double> values;
  values.reserve(rows * r.columns.size());
  for (std::size_t k = 0; k < rows; ++k)
    for (std::size_t i : from)
      values.push_back(i == std::string::npos ? std::nan("") : saved.values[k * saved.columns.size() + i]);
  return values;
}

}  // namespace

void read_resume_meta(Run& r) {
  if (r.resume.path.empty()) return;
  r.resume_meta = rank_local([&] { return checkpoint::read_meta(r.resume.path); });
  r.same_layout = r.resume_meta->num_gmis == r.learners && r.resume_meta->envs_per_gmi == r.cfg.env.num_envs;
}

bool restore(Run& r) {
  algos::Trainer& trainer = *r.trainer;
  if (r.resume_meta) {
    const checkpoint::Meta& meta = *r.resume_meta;
    // A learner's rows (a simulator GMI reads the shared part: its trainer restores its envs).
    const int gmi = r.split ? (r.split->trainer ? r.split->trainer_index : -1) : r.session->me().gmi_rank;
    checkpoint::Contents c =
        rank_local([&] { return checkpoint::read(r.resume.path, r.same_layout ? gmi : -1); });
    r.history.values = history_in_columns(r, c.metrics);
    r.wall_offset = meta.wall_time_s;
    if (r.same_layout) {
      trainer.load_state(c.state);
      spdlog::info("resumed from {}: iteration {}, {} env steps, {} updates", r.resume.path, meta.iteration,
                   meta.env_steps, meta.updates);
    } else {
      restore_other_layout(r, c);
    }
  }
  if (r.resume_meta && trainer.iteration() >= r.cfg.num_iterations) {
    spdlog::info("nothing to do: {} is at iteration {} of {} ({} env steps; train.total_env_steps = {}); raise "
                 "train.total_env_steps to train further",
                 r.resume.path, trainer.iteration(), r.cfg.num_iterations, trainer.iteration() * r.per_iteration,
                 r.cfg.train.total_env_steps);
    if (r.mpi.rank() == 0) write_text_file(r.dir + "/status", "done\n");
    return false;
  }
  return true;
}

}  // namespace gmi::runtime::training
