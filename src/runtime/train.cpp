#include "src/runtime/train.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "mpi/environment.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/gmi/session.hpp"
#include "src/runtime/kokkos_scope.hpp"
#include "src/runtime/logging.hpp"
#include "src/runtime/mpi_command.hpp"
#include "src/runtime/process_clock.hpp"
#include "src/runtime/run_dir.hpp"

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

const std::vector<std::string> kColumns = {
    "iteration",      "env_steps",       "wall_time_s",    "samples_per_s",
    "episode_return_mean", "episode_length_mean", "episodes", "policy_loss",
    "value_loss",     "entropy",         "approx_kl",      "clip_frac",
    "explained_variance", "grad_norm",   "learning_rate",  "updates",
    "time_rollout_s", "time_update_s",   "time_iteration_s"};

int train(const TrainOptions& o, mpi::Environment& mpi) {
  const config::Config cfg = config::load(o.config_path, o.overrides, mpi.size());
  std::string dir = cfg.train.run_dir.empty() ? default_run_dir(o.config_path) : cfg.train.run_dir;
  dir = mpi::broadcast_string(dir);  // one directory, even if ranks' clocks differ
  if (mpi.rank() == 0) {
    make_run_dir(dir);
    config::Config resolved = cfg;
    resolved.train.run_dir = dir;
    write_text_file(dir + "/config.yaml", config::to_yaml(resolved));
    add_log_file(0, dir + "/train.log");
  }
  std::optional<MetricsCsv> csv;  // rank 0 writes the metrics
  if (mpi.rank() == 0) csv.emplace(dir + "/metrics.csv", kColumns);

  // Layout, communicators, MPS, then Kokkos on this GMI's device (in that order).
  const auto t_setup = std::chrono::steady_clock::now();
  instances::Session session(cfg, mpi);
  const std::string table = session.layout_table();
  spdlog::info("gmi_drl {} | {} GMI(s) | {} | set up in {:.2f} s", GMI_DRL_VERSION, mpi.size(),
               device_description(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count());
  spdlog::info("layout: {}", table);
  spdlog::info("config {} -> run directory {}", o.config_path, dir);

  const nn::ActorCriticLayout policy = algos::PpoTrainer::policy_layout(cfg);
  std::unique_ptr<mpi::GradientReducer> reducer;
  if (mpi.size() > 1) reducer = session.make_reducer(policy.num_params);
  // Distinct environments per GMI: GMI r owns global environments [r * N, (r + 1) * N).
  algos::PpoTrainer trainer(cfg, std::uint64_t(session.me().gmi_rank) * cfg.env.num_envs, reducer.get());
  const auto& L = trainer.layout();
  spdlog::info("{}: obs {}, {} | policy {} params ({}) | {} envs x {} steps x {} GMI(s) = {} samples/iteration, "
               "{} minibatches of {}, {} epochs, {} iterations",
               cfg.env.name, L.obs_dim,
               L.continuous() ? fmt::format("continuous actions {}", L.act_dim)
                              : fmt::format("{} discrete actions", L.num_actions),
               L.num_params, cfg.policy.activation, cfg.env.num_envs, cfg.ppo.num_steps, mpi.size(),
               cfg.batch_size * mpi.size(), cfg.ppo.num_minibatches, cfg.minibatch_size,
               cfg.ppo.update_epochs, cfg.num_iterations);
  spdlog::info("first training iteration starts {:.2f} s after launch", seconds_since_launch());

  const auto start = std::chrono::steady_clock::now();
  double best_return = -INFINITY;
  for (std::int64_t it = 0; it < cfg.num_iterations; ++it) {
    const auto t_it = std::chrono::steady_clock::now();
    const algos::IterationMetrics m = trainer.iterate();
    const double t_iter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_it).count();
    // Aggregate over GMIs: episode sums add up; times are the slowest GMI's.
    double sums[3] = {m.episode_return_sum, m.episode_length_sum, m.episodes};
    double times[3] = {m.time_rollout, m.time_update, t_iter};
    mpi::allreduce_sum(sums, 3);
    mpi::allreduce_max(times, 3);
    // Losses and statistics: the mean over GMIs (each GMI saw its own minibatches).
    double losses[6] = {m.policy_loss, m.value_loss, m.entropy, m.approx_kl, m.clip_frac, m.explained_variance};
    mpi::allreduce_sum(losses, 6);
    for (double& v : losses) v /= mpi.size();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::int64_t steps = m.iteration * cfg.batch_size * mpi.size();
    const double sps = double(cfg.batch_size * mpi.size()) / times[2];
    const double ret = sums[2] > 0 ? sums[0] / sums[2] : std::nan("");
    const double len = sums[2] > 0 ? sums[1] / sums[2] : std::nan("");
    if (std::isfinite(ret)) best_return = std::max(best_return, ret);
    if (csv)
      csv->row({double(m.iteration), double(steps), wall, sps, ret, len, sums[2], losses[0],
                losses[1], losses[2], losses[3], losses[4], losses[5],
                m.grad_norm, m.learning_rate, double(m.updates), times[0], times[1], times[2]});
    if (m.iteration % cfg.train.log_interval == 0 || m.iteration == cfg.num_iterations) {
      const double eta = wall / double(m.iteration) * double(cfg.num_iterations - m.iteration);
      spdlog::info(
          "iter {}/{} | {} steps | {} steps/s | return {} len {} ({} eps) | pg {:.4f} vf {:.4f} "
          "ent {:.3f} kl {:.4f} | rollout {:.0f} ms update {:.0f} ms | eta {}",
          m.iteration, cfg.num_iterations, steps, fmt_rate(sps),
          std::isfinite(ret) ? fmt::format("{:.2f}", ret) : "-",
          std::isfinite(len) ? fmt::format("{:.1f}", len) : "-", sums[2], losses[0],
          losses[1], losses[2], losses[3], 1e3 * times[0], 1e3 * times[1], fmt_duration(eta));
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t total = cfg.num_iterations * cfg.batch_size * mpi.size();
  spdlog::info("done: {} env steps in {} ({} steps/s), best iteration return {:.2f}; metrics in {}/metrics.csv",
               total, fmt_duration(wall), fmt_rate(total / wall), best_return, dir);
  return 0;
}

}  // namespace

int run_training(const TrainOptions& o, int* argc, char*** argv) {
  return run_mpi_command(argc, argv, o.log_level, [&](mpi::Environment& mpi) { return train(o, mpi); });
}

}  // namespace gmi::runtime
