#include "src/runtime/train.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/environment.hpp"
#include "mpi/progress.hpp"
#include "mpi/topology.hpp"
#include "src/algos/trainer.hpp"
#include "src/checkpoint/checkpoint.hpp"
#include "src/checkpoint/store.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/session.hpp"
#include "src/runtime/logging.hpp"
#include "src/runtime/mpi_command.hpp"
#include "src/runtime/process_clock.hpp"
#include "src/runtime/faults.hpp"
#include "src/runtime/run_dir.hpp"
#include "src/runtime/signals.hpp"
#include "src/runtime/watchdog.hpp"

namespace gmi::runtime {
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

/// Every run's columns: these, the algorithm's statistics (Trainer::loss_columns) between
/// `episodes` and `grad_norm`, and for an environment with reward terms one
/// `episode_<term>_mean` each at the end.
const std::vector<std::string> kHead = {"iteration", "env_steps", "wall_time_s", "samples_per_s",
                                        "episode_return_mean", "episode_length_mean", "episodes"};
const std::vector<std::string> kTail = {"grad_norm", "learning_rate", "updates", "time_rollout_s",
                                        "time_update_s", "time_iteration_s"};

/// Keys a resumed run may change; any other difference from the checkpoint's config is an error.
bool may_change_on_resume(const std::string& key) {
  for (const char* prefix : {"checkpoint.", "gmi.", "reduce.", "device."})
    if (key.rfind(prefix, 0) == 0) return true;
  for (const char* k : {"train.total_env_steps", "train.log_interval", "train.run_dir",
                        "train.max_nonfinite_updates", "train.stall_timeout_s", "env.num_envs", "env.threads",
                        "env.async_halves", "env.model_path", "replay.storage"})
    if (key == k) return true;
  return false;
}

/// One line naming every key where `now` conflicts with the checkpoint's config.
void check_resume_config(const config::Config& now, const config::Config& saved, const std::string& file) {
  std::string diff;
  for (const std::string& key : config::keys()) {
    if (may_change_on_resume(key)) continue;
    const std::string a = config::value_text(saved, key), b = config::value_text(now, key);
    if (a != b) diff += fmt::format("{}{} is {} in the checkpoint but {} now", diff.empty() ? "" : "; ", key, a, b);
  }
  if (!diff.empty())
    throw InputError(file + ": the config conflicts with the checkpoint's: " + diff +
                     " (a resumed run keeps its training settings; start a new run to change them)");
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// Which checkpoint to resume from ("" for a new run).  Rank 0 looks; every rank gets its answer
/// or its error.
struct ResumeChoice {
  std::string path;
  std::string config;  ///< the checkpoint's resolved config
};

ResumeChoice choose_checkpoint(const TrainOptions& o, int world_size) {
  ResumeChoice r;
  if (o.resume.empty()) return r;
  std::string error;
  if (mpi::comm_rank(MPI_COMM_WORLD) == 0) {
    try {
      if (o.resume == "latest") {
        std::string dir;
        if (!o.config_paths.empty()) dir = config::load(o.config_paths, o.overrides, world_size).train.run_dir;
        for (const auto& kv : o.overrides)
          if (kv.first == "train.run_dir") dir = config::parse("{}", "--run-dir", {kv}).train.run_dir;
        if (dir.empty())
          throw InputError("--resume latest: which run? give --run-dir DIR (or train.run_dir in the config)");
        const checkpoint::Store store(dir, 1);
        r.path = checkpoint::newest_valid(store.list(), store.dir());
        if (r.path.empty()) {
          if (o.config_paths.empty())
            throw InputError("--resume latest: no checkpoint in " + store.dir() + " and no --config to start a new run");
          spdlog::warn("--resume latest: no checkpoint in {} yet; starting a new run", store.dir());
        }
      } else {
        r.path = o.resume;
        checkpoint::verify(r.path);
      }
      if (!r.path.empty()) r.config = checkpoint::read_meta(r.path).config;
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  error = mpi::broadcast_string(error);
  if (!error.empty()) throw InputError(error);
  r.path = mpi::broadcast_string(r.path);
  r.config = mpi::broadcast_string(r.config);
  return r;
}

int train(const TrainOptions& o, mpi::Environment& mpi) {
  SignalRequests signals;  // from the start: a signal during set-up is acted on at the first boundary
  const ResumeChoice resume = choose_checkpoint(o, mpi.size());
  config::Config cfg;
  if (!o.config_paths.empty()) {
    cfg = config::load(o.config_paths, o.overrides, mpi.size());
    if (!resume.path.empty()) {
      check_resume_config(cfg, config::parse(resume.config, resume.path, {}, mpi.size()), resume.path);
    }
  } else {
    cfg = config::parse(resume.config, resume.path, o.overrides, mpi.size());
  }
  mpi::set_timeout(cfg.reduce.timeout_s);
  StallWatchdog watchdog(cfg.train.stall_timeout_s);
  mpi::Progress& progress = mpi::progress();
  progress.phase("set-up");
  std::string dir = cfg.train.run_dir;
  if (dir.empty()) dir = default_run_dir(o.config_paths.empty() ? std::string() : o.config_paths.front());
  dir = mpi::broadcast_string(dir);  // one directory, even if ranks' clocks differ
  cfg.train.run_dir = dir;
  const checkpoint::Store store(dir, cfg.checkpoint.keep);
  if (mpi.rank() == 0) {
    make_run_dir(dir);
    write_text_file(dir + "/config.yaml", config::to_yaml(cfg));
    add_log_file(0, dir + "/train.log");
    store.remove_partials();
    write_text_file(dir + "/status", "running\n");
  }
  const Faults faults = Faults::from_environment(mpi.rank());

  // Layout, communicators, MPS, then Kokkos on this GMI's device (in that order).
  const auto t_setup = std::chrono::steady_clock::now();
  instances::Session session(cfg, mpi);
  const std::string table = session.layout_table();
  spdlog::info("gmi_drl {} | {} GMI(s) | {} | set up in {:.2f} s", GMI_DRL_VERSION, mpi.size(),
               instances::device_description(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count());
  spdlog::info("layout: {}", table);
  spdlog::info("config {} -> run directory {}", o.config_paths.empty() ? resume.path : cfg.source, dir);

  // Rank 0 verified the file; a read failing now on some rank only (the file changed under us)
  // is that rank's failure, which ends the job, not an input error the others would wait on.
  auto rank_local = [](auto&& read) {
    try {
      return read();
    } catch (const InputError& e) {
      throw Error(std::string("reading a verified checkpoint failed: ") + e.what());
    }
  };
  std::optional<checkpoint::Meta> resume_meta;
  bool same_layout = false;
  if (!resume.path.empty()) {
    resume_meta = rank_local([&] { return checkpoint::read_meta(resume.path); });
    same_layout = resume_meta->num_gmis == mpi.size() && resume_meta->envs_per_gmi == cfg.env.num_envs;
  }
  // Host-simulated environments: env.threads 0 shares the node's hardware threads among its GMIs.
  cfg.env.threads = session.env_threads(cfg.env.threads);
  std::unique_ptr<mpi::GradientReducer> reducer;
  if (mpi.size() > 1) reducer = session.make_reducer(algos::num_params(cfg), same_layout ? resume_meta->reducer : "");
  {
    const algos::MemoryNeeds needs = algos::memory_needs(cfg);
    std::vector<std::pair<std::string, std::string>> drivers;
    for (const std::string& key : needs.drivers) drivers.emplace_back(key, config::value_text(cfg, key));
    session.check_memory(needs.device_bytes, needs.host_bytes, drivers);
  }
  // Distinct environments per GMI: GMI r owns global environments [r * N, (r + 1) * N).
  const int gmi = session.me().gmi_rank;
  const std::unique_ptr<algos::Trainer> owner = algos::make_trainer(cfg, std::uint64_t(gmi) * cfg.env.num_envs, reducer.get());
  algos::Trainer& trainer = *owner;
  const envs::EnvSpec& spec = trainer.env_spec();
  const std::int64_t per_iteration = cfg.batch_size * mpi.size();

  const std::vector<std::string> losses = trainer.loss_columns();
  std::vector<std::string> columns = kHead;
  columns.insert(columns.end(), losses.begin(), losses.end());
  columns.insert(columns.end(), kTail.begin(), kTail.end());
  const std::size_t first_term = columns.size();
  for (const std::string& t : spec.reward_terms) columns.push_back("episode_" + t + "_mean");
  checkpoint::Metrics history;
  history.columns = columns;
  double wall_offset = 0;
  if (resume_meta) {
    const checkpoint::Meta& meta = *resume_meta;
    checkpoint::Contents c = rank_local([&] { return checkpoint::read(resume.path, same_layout ? gmi : -1); });
    if (c.metrics.columns != columns)
      throw InputError(resume.path + ": /metrics has other columns than this gmi_drl writes");
    history.values = c.metrics.values;
    wall_offset = meta.wall_time_s;
    if (same_layout) {
      trainer.load_state(c.state);
      spdlog::info("resumed from {}: iteration {}, {} env steps, {} updates", resume.path, meta.iteration,
                   meta.env_steps, meta.updates);
    } else {
      // Another layout: the policy, optimiser and normalisers carry over; the environments
      // start fresh episodes from a range of episode indices no earlier run used.
      c.state.iteration = meta.env_steps / per_iteration;
      const std::uint64_t first_episode = std::uint64_t(meta.iteration + 1) << 32;
      trainer.load_shared_state(c.state, first_episode);
      std::size_t rows = 0;
      while (rows < history.rows() && history.values[rows * columns.size()] <= double(c.state.iteration)) ++rows;
      history.values.resize(rows * columns.size());
      spdlog::warn("resuming {} ({} GMI(s) x {} envs) on {} GMI(s) x {} envs: policy, optimizer and normalizers "
                   "restored; environments re-seeded (episode index {}); continuing at iteration {} of {}; this "
                   "run will not repeat an uninterrupted one bit for bit",
                   resume.path, meta.num_gmis, meta.envs_per_gmi, mpi.size(), cfg.env.num_envs, first_episode,
                   c.state.iteration, cfg.num_iterations);
    }
  }
  if (resume_meta && trainer.iteration() >= cfg.num_iterations) {
    spdlog::info("nothing to do: {} is at iteration {} of {} ({} env steps; train.total_env_steps = {}); raise "
                 "train.total_env_steps to train further",
                 resume.path, trainer.iteration(), cfg.num_iterations, trainer.iteration() * per_iteration,
                 cfg.train.total_env_steps);
    if (mpi.rank() == 0) write_text_file(dir + "/status", "done\n");
    return 0;
  }
  std::optional<MetricsCsv> csv;  // rank 0 writes the metrics: the history so far, then new rows
  if (mpi.rank() == 0) {
    csv.emplace(dir + "/metrics.csv", columns);
    for (std::size_t r = 0; r < history.rows(); ++r)
      csv->row(std::vector<double>(history.values.begin() + r * columns.size(),
                                   history.values.begin() + (r + 1) * columns.size()));
  }

  spdlog::info("{}: obs {}, {} | {} GMI(s) x {} env steps = {} per iteration, {} iterations", cfg.env.name,
               spec.obs_dim,
               spec.discrete() ? fmt::format("{} discrete actions", spec.num_actions)
                               : fmt::format("continuous actions {}", spec.act_dim),
               mpi.size(), cfg.batch_size, per_iteration, cfg.num_iterations);
  spdlog::info("{}", trainer.describe());
  spdlog::info("first training iteration starts {:.2f} s after launch", seconds_since_launch());

  // Checkpoints: every GMI writes its part of one file.
  const std::vector<std::string> existing = store.list();
  std::string last_checkpoint = existing.empty() ? std::string() : existing.back();
  auto last_checkpoint_time = std::chrono::steady_clock::now();
  const auto start = std::chrono::steady_clock::now();
  auto wall_now = [&] {
    double w = wall_offset + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    mpi::allreduce_max(&w, 1);
    return w;
  };
  auto save_checkpoint = [&](const std::string& why) {
    progress.phase("checkpoint");
    const auto t0 = std::chrono::steady_clock::now();
    const algos::TrainerState st = trainer.save_state();
    mpi::check();  // never write what a failed reduction left behind
    checkpoint::Meta meta;
    meta.gmi_drl_version = GMI_DRL_VERSION;
    meta.config = config::to_yaml(cfg);
    meta.created = mpi::broadcast_string(utc_now());
    meta.run_dir = dir;
    meta.num_nodes = session.layout().num_nodes;
    meta.num_gpus = session.layout().num_gpus;
    meta.num_gmis = mpi.size();
    meta.gmis_per_gpu.assign(session.layout().gmis_per_gpu.begin(), session.layout().gmis_per_gpu.end());
    meta.iteration = st.iteration;
    meta.env_steps = st.iteration * per_iteration;
    meta.updates = trainer.updates();
    meta.wall_time_s = wall_now();
    meta.algo = cfg.algo;
    meta.env = cfg.env.name;
    meta.envs_per_gmi = cfg.env.num_envs;
    meta.obs_dim = std::int64_t(st.obs.size()) / cfg.env.num_envs;  // a multi-agent env: every agent's, per env
    meta.num_params = std::int64_t(st.params.size());
    meta.seed = cfg.train.seed;
    meta.num_steps = cfg.num_steps;
    meta.update_epochs = cfg.algo == "ppo" ? cfg.ppo.update_epochs : 0;
    meta.replay_capacity = cfg.algo == "ppo" ? 0 : cfg.replay.capacity;
    meta.nonfinite_streak = st.nonfinite_streak;
    meta.reducer = reducer ? reducer->name() : "";
    const std::string path = store.save(st.iteration, session.comms().world(), [&](const std::string& partial) {
      checkpoint::write(partial, session.comms().world(), meta, st, history, faults.in_checkpoint(st.iteration));
    });
    std::error_code ec;
    const double mib = double(std::filesystem::file_size(path, ec)) / (1 << 20);
    spdlog::info("checkpoint {} ({}): {:.2f} MiB in {:.3f} s", path, why, mib,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    last_checkpoint = path;
    last_checkpoint_time = std::chrono::steady_clock::now();
  };

  double best_return = -INFINITY;
  const std::int64_t first_iteration = trainer.iteration();
  while (trainer.iteration() < cfg.num_iterations) {
    progress.iteration(trainer.iteration() + 1);
    progress.phase("iteration start");
    if (faults.before_iteration(trainer.iteration() + 1)) trainer.inject_nonfinite_gradient();
    const auto t_it = std::chrono::steady_clock::now();
    const algos::IterationMetrics m = trainer.iterate();
    const double t_iter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_it).count();
    watchdog.iteration_took(t_iter);
    progress.phase("statistics");
    progress.operation("");
    // Aggregate over GMIs, in one sum and one maximum: episode sums (returns, lengths, counts,
    // the reward terms) add up; the algorithm's statistics are the mean over GMIs (each GMI saw
    // its own minibatches); times are the slowest GMI's.
    // sums: [0, 3) returns, lengths, episodes; [3, 3 + L) statistics; then the reward terms.
    const std::size_t L = losses.size(), nterms = columns.size() - first_term;
    std::vector<double> sums = {m.episode_return_sum, m.episode_length_sum, m.episodes};
    sums.resize(3 + L + nterms, 0.0);
    std::copy_n(m.losses.begin(), std::min(L, m.losses.size()), sums.begin() + 3);
    std::copy_n(m.episode_term_sums.begin(), std::min(nterms, m.episode_term_sums.size()), sums.begin() + 3 + L);
    double times[3] = {m.time_rollout, m.time_update, t_iter};
    mpi::allreduce_sum(sums.data(), int(sums.size()));
    mpi::allreduce_max(times, 3);
    double* stats = sums.data() + 3;
    for (std::size_t k = 0; k < L; ++k) stats[k] /= mpi.size();
    const double wall = wall_offset + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::int64_t steps = m.iteration * per_iteration;
    const double sps = double(per_iteration) / times[2];
    const double ret = sums[2] > 0 ? sums[0] / sums[2] : std::nan("");
    const double len = sums[2] > 0 ? sums[1] / sums[2] : std::nan("");
    if (std::isfinite(ret)) best_return = std::max(best_return, ret);
    std::vector<double> row = {double(m.iteration), double(steps), wall, sps, ret, len, sums[2]};
    row.insert(row.end(), stats, stats + L);
    for (double v : {m.grad_norm, m.learning_rate, double(m.updates), times[0], times[1], times[2]}) row.push_back(v);
    // Reward terms: per finished episode, like the returns.
    for (std::size_t k = 0; k < nterms; ++k) row.push_back(sums[2] > 0 ? sums[3 + L + k] / sums[2] : std::nan(""));
    history.values.insert(history.values.end(), row.begin(), row.end());
    if (csv) csv->row(row);
    if (m.iteration % cfg.train.log_interval == 0 || m.iteration == cfg.num_iterations) {
      const double elapsed = wall - wall_offset;
      const double eta = elapsed / double(m.iteration - first_iteration) * double(cfg.num_iterations - m.iteration);
      // The algorithm's first four statistics, by their column names.
      std::string shown;
      for (std::size_t k = 0; k < std::min<std::size_t>(4, L); ++k)
        shown += fmt::format("{}{} {:.4g}", k ? " " : "", losses[k], stats[k]);
      spdlog::info("iter {}/{} | {} steps | {} steps/s | return {} len {} ({} eps) | {} | {} updates | rollout {:.0f} ms "
                   "update {:.0f} ms | eta {}",
                   m.iteration, cfg.num_iterations, steps, fmt_rate(sps),
                   std::isfinite(ret) ? fmt::format("{:.2f}", ret) : "-",
                   std::isfinite(len) ? fmt::format("{:.1f}", len) : "-", sums[2], shown, m.updates, 1e3 * times[0],
                   1e3 * times[1], fmt_duration(eta));
    }
    // Non-finite gradients or losses: the update was skipped (every GMI alike, the gradient is
    // reduced before its norm is taken).
    if (m.skipped_updates > 0 && mpi.rank() == 0)
      spdlog::warn("iteration {}: {} of {} update(s) skipped for a NaN/Inf gradient or loss ({} in a row)",
                   m.iteration, m.skipped_updates, m.updates, m.nonfinite_streak);
    if (m.nonfinite_streak >= cfg.train.max_nonfinite_updates)
      throw InputError(fmt::format(
          "training stopped at iteration {}: {} updates in a row had a NaN/Inf gradient or loss "
          "(train.max_nonfinite_updates = {}); last good checkpoint: {}",
          m.iteration, m.nonfinite_streak, cfg.train.max_nonfinite_updates,
          last_checkpoint.empty() ? std::string("none written") : last_checkpoint));

    // Agree on signals and the checkpoint clock (ranks may have seen a signal at different times).
    double flags[3] = {double(signals.stop_signal()), signals.take_checkpoint_request() ? 1.0 : 0.0, 0.0};
    if (mpi.rank() == 0 && cfg.checkpoint.interval_minutes > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_time).count() >=
            60.0 * cfg.checkpoint.interval_minutes)
      flags[2] = 1;
    mpi::allreduce_max(flags, 3);
    const int stop = int(flags[0]);
    const bool finished = m.iteration >= cfg.num_iterations;
    const bool healthy = m.nonfinite_streak == 0;
    std::string why;
    if (stop) why = signal_name(stop);
    else if (flags[1] > 0) why = "SIGUSR2";
    else if (finished && cfg.checkpoint.at_end) why = "end of training";
    else if (healthy && cfg.checkpoint.interval > 0 && m.iteration % cfg.checkpoint.interval == 0) why = "interval";
    else if (healthy && flags[2] > 0) why = fmt::format("{} minutes", cfg.checkpoint.interval_minutes);
    if (!why.empty()) save_checkpoint(why);
    if (stop) {
      spdlog::info("{} received: stopped after iteration {} with checkpoint {}; continue with --resume latest "
                   "--run-dir {}",
                   signal_name(stop), m.iteration, last_checkpoint, dir);
      if (mpi.rank() == 0) write_text_file(dir + "/status", fmt::format("stopped {} {}\n", signal_name(stop), m.iteration));
      return 0;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t total = (cfg.num_iterations - first_iteration) * per_iteration;
  progress.phase("done");
  spdlog::info("done: {} env steps in {} ({} steps/s), best iteration return {}; metrics in {}/metrics.csv", total,
               fmt_duration(wall), fmt_rate(total / std::max(wall, 1e-9)),
               std::isfinite(best_return) ? fmt::format("{:.2f}", best_return) : "- (no episode finished)", dir);
  if (mpi.rank() == 0) write_text_file(dir + "/status", "done\n");
  return 0;
}

}  // namespace

int run_training(const TrainOptions& o, int* argc, char*** argv) {
  return run_mpi_command(argc, argv, o.log_level, [&](mpi::Environment& mpi) { return train(o, mpi); });
}

}  // namespace gmi::runtime
