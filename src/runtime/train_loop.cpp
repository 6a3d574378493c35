// Training: the iteration loop (aggregate statistics over GMIs, metrics rows, the log line,
// non-finite updates, signals and checkpoints at iteration boundaries).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "mpi/deadline.hpp"
#include "src/runtime/process_clock.hpp"
#include "src/runtime/training.hpp"

namespace gmi::runtime::training {
namespace {

std::string fmt_rate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f}M", r / 1e6);
  if (r >= 1e3) return fmt::format("{:.1f}k", r / 1e3);
  return fmt::format("{:.0f}", r);
}

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = long(s + 0.5);
  return fmt::format("{}:{:02d}:{:02d}", t / 3600, int(t / 60 % 60), int(t % 60));
}

/// One iteration over all GMIs: the metrics row and what the log line shows.
struct Totals {
  std::vector<double> row;
  std::vector<double> stats;  ///< the algorithm's statistics, mean over GMIs
  double times[3] = {};       ///< rollout, update, iteration: the slowest GMI's
  /// grad_norm, learning_rate, updates, skipped updates, non-finite streak: the learners' (alike
  /// on every learner; a simulator GMI has none).
  double learner[5] = {};
  double wall = 0, sps = 0, ret = 0, len = 0, episodes = 0;
  double gpu_util = 0, gpu_mem = 0;  ///< mean over the sampled GPUs; the most any GPU had in use
  std::int64_t steps = 0;
};

/// Aggregate over GMIs, in one sum and one maximum: episode sums (returns, lengths, counts, the
/// reward terms) add up; the algorithm's statistics are the mean over the learners (each saw its
/// own minibatches); times are the slowest GMI's; the update counts and norms the learners'; the
/// GPUs' utilisation the mean over the GMIs that sampled one (`gpu`), their memory the most.
Totals aggregate(const Run& r, const algos::IterationMetrics& m, double t_iter, const GpuInterval& gpu) {
  // sums: [0, 3) returns, lengths, episodes; [3, 3 + L) statistics; then the reward terms; last
  // the GPUs' utilisation and how many GPUs gave one.
  const std::size_t L = r.losses.size(), nterms = r.columns.size() - r.first_term;
  std::vector<double> sums = {m.episode_return_sum, m.episode_length_sum, m.episodes};
  sums.resize(3 + L + nterms + 2, 0.0);
  std::copy_n(m.losses.begin(), std::min(L, m.losses.size()), sums.begin() + 3);
  std::copy_n(m.episode_term_sums.begin(), std::min(nterms, m.episode_term_sums.size()), sums.begin() + 3 + L);
  if (std::isfinite(gpu.util_pct)) sums[3 + L + nterms] = gpu.util_pct, sums[3 + L + nterms + 1] = 1;
  Totals t;
  t.times[0] = m.time_rollout;
  t.times[1] = m.time_update;
  t.times[2] = t_iter;
  double maxima[6] = {t.times[0], t.times[1], t.times[2], double(m.skipped_updates), double(m.nonfinite_streak),
                      std::isfinite(gpu.mem_mib) ? gpu.mem_mib : -1.0};
  mpi::allreduce_sum(sums.data(), int(sums.size()), r.comm);
  mpi::allreduce_max(maxima, 6, r.comm);
  const double sampled = sums[3 + L + nterms + 1];
  t.gpu_util = sampled > 0 ? sums[3 + L + nterms] / sampled : std::nan("");
  t.gpu_mem = maxima[5] >= 0 ? maxima[5] : std::nan("");
  std::copy_n(maxima, 3, t.times);
  // The norm (NaN where no update was taken), learning rate and update count: alike on every
  // learner; a simulator GMI has none, so under a role split the first trainer's.
  t.learner[0] = m.grad_norm, t.learner[1] = m.learning_rate, t.learner[2] = double(m.updates);
  if (r.split) mpi::broadcast(t.learner, 3, r.comm, r.first_learner());
  t.learner[3] = maxima[3], t.learner[4] = maxima[4];
  double* stats = sums.data() + 3;
  for (std::size_t k = 0; k < L; ++k) stats[k] /= r.learners;
  t.stats.assign(stats, stats + L);
  t.wall = r.wall_offset + std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  t.steps = m.iteration * r.per_iteration;
  t.sps = double(r.per_iteration) / t.times[2];
  t.episodes = sums[2];
  t.ret = sums[2] > 0 ? sums[0] / sums[2] : std::nan("");
  t.len = sums[2] > 0 ? sums[1] / sums[2] : std::nan("");
  t.row = {double(m.iteration), double(t.steps), t.wall, t.sps, t.ret, t.len, sums[2]};
  t.row.insert(t.row.end(), stats, stats + L);
  for (double v : {t.learner[0], t.learner[1], t.learner[2], t.times[0], t.times[1], t.times[2], t.gpu_util, t.gpu_mem})
    t.row.push_back(v);
  // Reward terms: per finished episode, like the returns.
  for (std::size_t k = 0; k < nterms; ++k) t.row.push_back(sums[2] > 0 ? sums[3 + L + k] / sums[2] : std::nan(""));
  return t;
}

void log_iteration(const Run& r, const algos::IterationMetrics& m, const Totals& t) {
  const double elapsed = t.wall - r.wall_offset;
  const double eta = elapsed / double(m.iteration - r.first_iteration) * double(r.cfg.num_iterations - m.iteration);
  // The algorithm's first four statistics, by their column names.
  std::string shown;
  for (std::size_t k = 0; k < std::min<std::size_t>(4, t.stats.size()); ++k)
    shown += fmt::format("{}{} {:.4g}", k ? " " : "", r.losses[k], t.stats[k]);
  spdlog::info("iter {}/{} | {} steps | {} steps/s | return {} len {} ({} eps) | {} | {} updates | rollout {:.0f} ms "
               "update {:.0f} ms | eta {}",
               m.iteration, r.cfg.num_iterations, t.steps, fmt_rate(t.sps),
               std::isfinite(t.ret) ? fmt::format("{:.2f}", t.ret) : "-",
               std::isfinite(t.len) ? fmt::format("{:.1f}", t.len) : "-", t.episodes, shown, t.learner[2],
               1e3 * t.times[0], 1e3 * t.times[1], fmt_duration(eta));
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A metrics.csv row as TensorBoard scalars at its env step (finite values only: TensorBoard
/// draws NaN as a point), written at `when` (Unix seconds).  A failed write (a full disk) ends the
/// scalars, not the run.
void tensorboard_row(Run& r, const std::vector<double>& row, double when) {
  if (!r.tensorboard) return;
  std::vector<std::pair<std::string, double>> values;
  double step = 0;
  for (std::size_t i = 0; i < r.columns.size(); ++i) {
    if (r.columns[i] == "env_steps") step = row[i];
    else if (r.columns[i] != "iteration" && std::isfinite(row[i])) values.emplace_back(r.columns[i], row[i]);
  }
  try {
    r.tensorboard->scalars(std::int64_t(step), when, values);
  } catch (const std::exception& e) {
    spdlog::warn("log.tensorboard: {}; the run goes on without TensorBoard scalars", e.what());
    r.tensorboard.reset();
  }
}

/// Non-finite gradients or losses: the update was skipped (every GMI alike, the gradient is
/// reduced before its norm is taken); too many in a row end the run.
void check_nonfinite(const Run& r, const algos::IterationMetrics& m, const Totals& t) {
  const int skipped = int(t.learner[3]), streak = int(t.learner[4]);
  if (skipped > 0 && r.mpi.rank() == 0)
    spdlog::warn("iteration {}: {} of {} update(s) skipped for a NaN/Inf gradient or loss ({} in a row)",
                 m.iteration, skipped, t.learner[2], streak);
  if (streak >= r.cfg.train.max_nonfinite_updates)
    throw InputError(fmt::format(
        "training stopped at iteration {}: {} updates in a row had a NaN/Inf gradient or loss "
        "(train.max_nonfinite_updates = {}); last good checkpoint: {}",
        m.iteration, streak, r.cfg.train.max_nonfinite_updates,
        r.last_checkpoint.empty() ? std::string("none written") : r.last_checkpoint));
}

/// At the end of an iteration: a checkpoint if one is due, and a stop signal.  Returns false
/// when the run stops here.
bool at_boundary(Run& r, const algos::IterationMetrics& m, const Totals& t) {
  const config::Config& cfg = r.cfg;
  // Agree on signals and the checkpoint clock (ranks may have seen a signal at different times).
  double flags[3] = {double(r.signals.stop_signal()), double(r.signals.checkpoint_requests()), 0.0};
  if (r.mpi.rank() == 0 && cfg.checkpoint.interval_minutes > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - r.last_checkpoint_time).count() >=
          60.0 * cfg.checkpoint.interval_minutes)
    flags[2] = 1;
  mpi::allreduce_max(flags, 3, r.comm);
  const int stop = int(flags[0]);
  const bool usr2 = r.signals.checkpoint_requested(int(flags[1]));  // once per SIGUSR2, on every rank
  const bool finished = m.iteration >= cfg.num_iterations;
  const bool healthy = t.learner[4] == 0;
  std::string why;
  if (stop) why = signal_name(stop);
  else if (usr2) why = "SIGUSR2";
  else if (finished && cfg.checkpoint.at_end) why = "end of training";
  else if (healthy && cfg.checkpoint.interval > 0 && m.iteration % cfg.checkpoint.interval == 0) why = "interval";
  else if (healthy && flags[2] > 0) why = fmt::format("{} minutes", cfg.checkpoint.interval_minutes);
  if (!why.empty()) save_checkpoint(r, why);
  if (stop) {
    spdlog::info("{} received: stopped after iteration {} with checkpoint {}; continue with --resume latest "
                 "--run-dir {}",
                 signal_name(stop), m.iteration, r.last_checkpoint, r.dir);
    if (r.mpi.rank() == 0)
      write_text_file(r.dir + "/status", fmt::format("stopped {} {}\n", signal_name(stop), m.iteration));
    return false;
  }
  return true;
}

/// One training iteration; returns false when a signal stopped the run after it.
bool iteration(Run& r) {
  algos::Trainer& trainer = *r.trainer;
  r.progress.iteration(trainer.iteration() + 1);
  r.progress.phase("iteration start");
  if (r.faults->before_iteration(trainer.iteration() + 1)) trainer.inject_nonfinite_gradient();
  const auto t_it = std::chrono::steady_clock::now();
  const algos::IterationMetrics m = trainer.iterate();
  const double t_iter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_it).count();
  if (r.split && !r.kernels_said) {
    // device.fused_kernels auto chooses on the first iteration; under a split the first trainer
    // chose (it logs warnings only after its set-up), so rank 0 says what.
    r.kernels_said = true;
    const int first = r.first_learner();
    const std::string trials = mpi::broadcast_string(trainer.kernel_trials(), r.comm, first);
    const std::string kernels = mpi::broadcast_string(trainer.kernels(), r.comm, first);
    if (!trials.empty())
      spdlog::info("device.fused_kernels auto (trainer GMI {}): {} (timed: {})", r.split->trainers.front(), kernels,
                   trials);
  }
  r.watchdog->iteration_took(t_iter);
  r.progress.phase("statistics");
  r.progress.operation("");
  const Totals t = aggregate(r, m, t_iter, r.gpu ? r.gpu->interval() : GpuInterval{});
  if (std::isfinite(t.ret)) r.best_return = std::max(r.best_return, t.ret);
  if (std::isfinite(t.gpu_util)) r.gpu_util_sum += t.gpu_util, ++r.gpu_util_rows;
  r.history.values.insert(r.history.values.end(), t.row.begin(), t.row.end());
  if (r.csv) r.csv->row(t.row);
  tensorboard_row(r, t.row, unix_now());
  if (m.iteration % r.cfg.train.log_interval == 0 || m.iteration == r.cfg.num_iterations) log_iteration(r, m, t);
  check_nonfinite(r, m, t);
  return at_boundary(r, m, t);
}

/// metrics.csv (rank 0): the history so far, then a row per iteration.  With log.tensorboard
/// the same rows go to a new TensorBoard event file; the files of earlier attempts are removed
/// first (they may hold iterations after the checkpoint resumed from, which this run repeats).
void open_metrics(Run& r) {
  if (r.mpi.rank() != 0) return;
  const std::size_t width = r.columns.size();
  r.csv.emplace(r.dir + "/metrics.csv", r.columns);
  if (r.cfg.log.tensorboard) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(r.dir, ec))
      if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) std::filesystem::remove(e.path(), ec);
    try {
      r.tensorboard.emplace(r.dir);
    } catch (const std::exception& e) {
      spdlog::warn("log.tensorboard: {}; the run goes on without TensorBoard scalars", e.what());
    }
  }
  // The rows of earlier attempts at the times they were made: now less the training time since.
  const auto wall = std::find(r.columns.begin(), r.columns.end(), "wall_time_s") - r.columns.begin();
  const double now = unix_now();
  const double last = r.history.rows() ? r.history.values[(r.history.rows() - 1) * width + std::size_t(wall)] : 0;
  for (std::size_t k = 0; k < r.history.rows(); ++k) {
    const std::vector<double> row(r.history.values.begin() + k * width, r.history.values.begin() + (k + 1) * width);
    r.csv->row(row);
    tensorboard_row(r, row, now - (last - row[std::size_t(wall)]));
  }
}

void log_plan(const Run& r) {
  const config::Config& cfg = r.cfg;
  const envs::EnvSpec& spec = r.trainer->env_spec();
  spdlog::info("{}: obs {}, {} | {} {}GMI(s) x {} env steps = {} per iteration, {} iterations", cfg.env.name,
               spec.obs_dim,
               spec.multi_discrete()  ? fmt::format("MultiDiscrete{} actions", spec.action_nvec)
               : spec.discrete()      ? fmt::format("{} discrete actions", spec.num_actions)
                                      : fmt::format("continuous actions {}", spec.act_dim),
               r.learners, r.split ? "trainer " : "", cfg.batch_size, r.per_iteration, cfg.num_iterations);
  spdlog::info("{}", r.describe);
  spdlog::info("first training iteration starts {:.2f} s after launch", seconds_since_launch());
}

/// The GPU's first GMI samples it; a GPU build that cannot says why once.
void start_gpu_monitor(Run& r) {
  if (r.session->me().slot != 0) return;
  r.gpu.emplace();
  if (r.gpu->available()) r.gpu->start();
  else if (instances::kCudaBuild)
    spdlog::warn("GPU utilisation not sampled on GPU {}: {}", r.session->me().global_gpu, r.gpu->why_not());
}

}  // namespace

bool iterate(Run& r) {
  // A serving GMI under async: its own loop until its trainer stops it (fault injection counts
  // its rollouts as iterations).
  if (r.trainer->serve([&r](std::int64_t rollout) { r.faults->before_iteration(rollout); })) return false;
  open_metrics(r);
  log_plan(r);
  const std::vector<std::string> existing = r.store->list();
  r.last_checkpoint = existing.empty() ? std::string() : existing.back();
  r.last_checkpoint_time = std::chrono::steady_clock::now();
  start_gpu_monitor(r);
  r.start = std::chrono::steady_clock::now();
  r.first_iteration = r.trainer->iteration();
  while (r.trainer->iteration() < r.cfg.num_iterations)
    if (!iteration(r)) return false;
  return true;
}

void finish(Run& r) {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  const std::int64_t total = (r.cfg.num_iterations - r.first_iteration) * r.per_iteration;
  r.progress.phase("done");
  spdlog::info("done: {} env steps in {} ({} steps/s), best iteration return {}{}; metrics in {}/metrics.csv", total,
               fmt_duration(wall), fmt_rate(total / std::max(wall, 1e-9)),
               std::isfinite(r.best_return) ? fmt::format("{:.2f}", r.best_return) : "- (no episode finished)",
               r.gpu_util_rows
                   ? fmt::format(", GPU busy {:.0f} % (mean of the iterations)", r.gpu_util_sum / r.gpu_util_rows)
                   : "",
               r.dir);
  if (r.mpi.rank() == 0) write_text_file(r.dir + "/status", "done\n");
}

}  // namespace gmi::runtime::training
