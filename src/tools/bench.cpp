#include "src/tools/bench.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "kernels/core/gpu_monitor.hpp"
#include "kernels/nn/blas.hpp"
#include "kernels/rl/fused_act.hpp"
#include "mpi/environment.hpp"
#include "src/algos/actor.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/algos/registry.hpp"
#include "src/algos/trainer.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/device_group.hpp"
#include "mpi/reducers.hpp"
#include "src/gmi/async_training.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/roles.hpp"
#include "src/gmi/session.hpp"
#include "src/gmi/split_training.hpp"
#include "src/runtime/mpi_command.hpp"
#include "src/tools/kernel_times.hpp"
#include "src/tools/roofline.hpp"
#include "src/algos/ppo/section.hpp"
#include "src/config/integer.hpp"
#include "src/algos/replay_section.hpp"

namespace gmi::tools {
namespace {

using Unmanaged1 = Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Kokkos Tools callbacks: count the kernels Kokkos launches (parallel_for/reduce/scan) and its
// deep copies during one iteration.  BLAS calls are counted by gmi::blas itself.
std::uint64_t g_kernels = 0, g_copies = 0;
void on_kernel(const char*, std::uint32_t, std::uint64_t*) { ++g_kernels; }
void on_copy(Kokkos::Tools::SpaceHandle, const char*, const void*, Kokkos::Tools::SpaceHandle,
             const char*, const void*, std::uint64_t) {
  ++g_copies;
}
void count_launches(bool on) {
  namespace E = Kokkos::Tools::Experimental;
  E::set_begin_parallel_for_callback(on ? on_kernel : nullptr);
  E::set_begin_parallel_reduce_callback(on ? on_kernel : nullptr);
  E::set_begin_parallel_scan_callback(on ? on_kernel : nullptr);
  E::set_begin_deep_copy_callback(on ? on_copy : nullptr);
}

struct Result {
  int num_envs = 0;      ///< all GMIs together
  int envs_per_gmi = 0;
  std::int64_t steps_per_iteration = 0;  ///< all GMIs together
  double steps_per_s = 0, rollout_ms = 0, update_ms = 0, iteration_ms = 0;
  double updates_per_s = 0;   ///< gradient updates (train, update modes)
  double rollout_steps_per_s = 0;  ///< env steps per second of the rollout phase alone (train mode)
  double ms_per_update = 0;   ///< update mode: one update (sample, forward, backward, optimiser)
  double kernels = 0, copies = 0, blas = 0, setup_s = 0;
  double memory_per_gmi = 0;  ///< bytes, the most any GMI used (Session::memory_in_use)
  /// Over the timed iterations: percent of the time a kernel ran (NVML, mean over the GPUs) and
  /// the memory in use on the GPU (every process's, MiB, the most of any GPU); NaN without NVML.
  double gpu_util_pct = 0, gpu_mem_mib = 0;
  int gpu_samples = 0;  ///< the driver's samples the utilisation holds (per GPU)
  std::int64_t minibatch_size = 0;  ///< the (trainers') config at this point
  std::string path;  ///< fused or layered kernels
  std::string trials;  ///< what device.fused_kernels: auto timed to choose them (Trainer::kernel_trials)
  /// Profiled iterations (PPO train mode): seconds per iteration in each phase (the most any GMI
  /// took), and the work the phase needs (roofline.hpp).
  std::array<double, algos::kNumPhases> phase_s{};
  PhaseWork phase_work{};
  int profiled = 0;
  std::vector<KernelTime> kernel_times;  ///< --kernel-times: per iteration
};

double max_over_ranks(double v) {
  mpi::allreduce_max(&v, 1);
  return v;
}

/// The GPU's first GMI samples how busy it is (NVML); nullptr on the others and where it cannot.
std::unique_ptr<GpuMonitor> gpu_monitor(const instances::Session& session) {
  if (session.me().slot != 0) return nullptr;
  auto gpu = std::make_unique<GpuMonitor>();
  if (gpu->available()) return gpu;
  if (instances::kCudaBuild)
    spdlog::warn("GPU utilisation not sampled on GPU {}: {}", session.me().global_gpu, gpu->why_not());
  return nullptr;
}

/// The GPU's samples since gpu->start() (none without a monitor).
GpuInterval gpu_window(GpuMonitor* gpu) {
  if (!gpu) return {};
  gpu->read_now();  // the samples up to now
  return gpu->interval(true);
}

/// The timed iterations' GPU figures from each GPU's window `g` (the GPU's first GMI samples it;
/// collective).  A window shorter than the driver's sample period holds none: no figure then.
void gpu_figures(const GpuInterval& g, Result& r) {
  double sums[3] = {std::isfinite(g.util_pct) ? g.util_pct : 0.0, std::isfinite(g.util_pct) ? 1.0 : 0.0,
                    double(g.samples)};
  mpi::allreduce_sum(sums, 3);
  r.gpu_util_pct = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
  r.gpu_samples = sums[1] > 0 ? int(sums[2] / sums[1]) : 0;
  const double mem = max_over_ranks(std::isfinite(g.mem_mib) ? g.mem_mib : -1.0);
  r.gpu_mem_mib = mem >= 0 ? mem : std::nan("");
}

/// Serving (bench --mode serve): a GMI's policy acting in its envs and nothing else: the actor
/// (no critic), the envs and one step's buffers, as `gmi_drl eval` runs them.
class Server {
 public:
  Server(const config::Config& cfg, std::uint64_t env_offset)
      : env_(envs::make_vec_env(cfg.env.name, cfg.env.num_envs, std::uint64_t(cfg.train.seed), env_offset,
                                config::env_overrides(cfg))),
        N_(cfg.env.num_envs),
        T_(cfg.section<algos::PpoConfig>().num_steps),
        seed_(std::uint64_t(cfg.train.seed)),
        offset_(env_offset) {
    const envs::EnvSpec& spec = env_->spec();
    const nn::ActorCriticSpec acs = algos::policy_spec(cfg, spec);
    const nn::ActorCriticLayout layout(acs);
    const algos::ActorOptions ao = algos::actor_options(cfg, spec);
    algos::set_device_math(cfg);  // the layered actor's products
    const std::vector<double> rms(3 * std::size_t(spec.obs_dim), 1.0);  // mean 1, var 1: any valid statistics
    actor_.emplace(layout, nn::init_actor_critic<float>(layout, acs, seed_), rms, ao, N_);
    const std::size_t n = std::size_t(N_);
    obs_ = View1<float>("gmi::bench::serve::obs", n * spec.obs_dim);
    final_obs_ = View1<float>("gmi::bench::serve::final_obs", n * spec.obs_dim);
    actions_ = View1<float>("gmi::bench::serve::actions", n * spec.act_dim);
    env_actions_ = View1<float>("gmi::bench::serve::env_actions", n * spec.act_dim);
    reward_ = View1<float>("gmi::bench::serve::reward", n);
    term_ = View1<std::uint8_t>("gmi::bench::serve::terminated", n);
    trunc_ = View1<std::uint8_t>("gmi::bench::serve::truncated", n);
    continuous_ = !spec.discrete();
    env_->reset_all(ExecSpace(), obs_.data());
  }
  /// ppo.num_steps steps of every env, sampled actions.
  void rollout() {
    envs::StepOutputs out;
    out.next_obs = obs_.data();
    out.final_obs = final_obs_.data();
    out.reward = reward_.data();
    out.terminated = term_.data();
    out.truncated = trunc_.data();
    float* env_act = continuous_ ? env_actions_.data() : actions_.data();
    for (int t = 0; t < T_; ++t, ++step_) {
      actor_->act(space_, obs_.data(), N_, false, seed_, step_, offset_, actions_.data(), env_act);
      env_->step(space_, env_act, out);
    }
    space_.fence();
  }

 private:
  ExecSpace space_;
  std::unique_ptr<envs::VecEnvBase> env_;
  std::optional<algos::Actor> actor_;
  int N_, T_;
  std::uint64_t seed_, offset_, step_ = 0;
  bool continuous_ = false;
  View1<float> obs_, final_obs_, actions_, env_actions_, reward_;
  View1<std::uint8_t> term_, trunc_;
};

/// One iteration of the mode: rollout + update (train) or a serving rollout (serve).
void iterate(algos::Trainer* trainer, Server* server, double& rollout, double& update, double& updates) {
  if (trainer) {
    const auto m = trainer->iterate();
    rollout += m.time_rollout;
    update += m.time_update;
    updates += m.updates;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  server->rollout();
  rollout += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Who steps the envs: every GMI under dp; under mapping.template e-at the simulator GMIs, under
/// ea-t and async the serving GMIs (whose envs --num-envs counts), for trainers that learn from
/// them (`split`).
struct BenchRoles {
  std::optional<instances::SplitTraining> split;
  std::vector<int> steppers;  ///< MPI_COMM_WORLD ranks that step envs
  int learners = 0;           ///< GMIs that learn (and whose batches an iteration counts)
};

BenchRoles bench_roles(const config::Config& base, const instances::Session& session, int rank) {
  BenchRoles b;
  b.split = instances::plan_split_roles(base, session.layout(), rank);
  b.learners = b.split ? int(b.split->trainers.size()) : session.layout().size();
  if (b.split) b.steppers = b.split->simulators();
  else
    for (int w = 0; w < session.layout().size(); ++w) b.steppers.push_back(w);
  return b;
}

/// The config of one point: `n` envs per stepping GMI, every iteration the benchmark runs
/// (`iterations`) within the run's length (so an annealed learning rate stays positive); under a
/// role split the trainers' config, with the split for these envs in `split`.
config::Config point_config(const config::Config& base, const BenchRoles& roles, const instances::Session& session,
                            int n, int iterations, std::optional<instances::SplitTraining>& split) {
  config::Config cfg = base;
  cfg.env.num_envs = n;
  if (roles.split) {
    split = instances::plan_split_training(cfg, session.layout(), roles.split->me);
    cfg = split->trainer_config;
  } else {
    config::derive(cfg, roles.learners);
  }
  cfg.train.total_env_steps = cfg.batch_size * iterations * roles.learners;
  config::derive(cfg, roles.learners);
  config::derive_sizes(cfg);  // under e-at derive() lets the size checks wait for this config
  return cfg;
}

/// Under a split the trainers know what rank 0, which writes the results, may not (under e-at a
/// simulator; under ea-t and async the serving GMIs time nothing): the first trainer's kernels,
/// rates and counts for every GMI (collective).
void from_first_trainer(Result& r, const instances::SplitTraining& split) {
  const int root = split.trainers.front();
  r.path = mpi::broadcast_string(r.path, MPI_COMM_WORLD, root);
  r.trials = mpi::broadcast_string(r.trials, MPI_COMM_WORLD, root);
  double* const fields[] = {&r.updates_per_s, &r.kernels,   &r.copies,       &r.blas,
                            &r.steps_per_s,   &r.rollout_ms, &r.update_ms,    &r.iteration_ms,
                            &r.rollout_steps_per_s, &r.setup_s};
  constexpr int n = int(std::size(fields));
  double v[n];
  for (int i = 0; i < n; ++i) v[i] = *fields[i];
  mpi::broadcast(v, n, MPI_COMM_WORLD, root);
  for (int i = 0; i < n; ++i) *fields[i] = v[i];
}

/// Timed iterations: the slowest GMI's seconds, and of them in the rollout and the update (each
/// the slowest GMI's), the gradient updates made, and the GPU's samples over them (this GPU's, not
/// yet combined over the GPUs: gpu_figures).
struct Timed {
  double total_s = 0, rollout = 0, update = 0, updates = 0;
  GpuInterval gpu;
};

/// `warmup` untimed iterations, then `iterations` timed from a barrier of `comm`, the GMIs that
/// iterate (the GPU monitor restarted there).
Timed timed_iterations(algos::Trainer* trainer, Server* server, int warmup, int iterations, MPI_Comm comm,
                       GpuMonitor* gpu) {
  Timed t;
  for (int i = 0; i < warmup; ++i) iterate(trainer, server, t.rollout, t.update, t.updates);
  t.rollout = t.update = t.updates = 0;
  mpi::blocking_barrier(comm);
  if (gpu) gpu->read_now(), gpu->start();
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) iterate(trainer, server, t.rollout, t.update, t.updates);
  double most[3] = {std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), t.rollout, t.update};
  mpi::allreduce_max(most, 3, comm);
  t.total_s = most[0], t.rollout = most[1], t.update = most[2];
  t.gpu = gpu_window(gpu);
  return t;
}

/// The rates of `iterations` timed iterations.
void set_rates(Result& r, int iterations, const Timed& t) {
  r.steps_per_s = double(r.steps_per_iteration) * iterations / t.total_s;
  r.updates_per_s = t.updates / t.total_s;
  r.rollout_ms = 1e3 * t.rollout / iterations;
  r.rollout_steps_per_s = r.rollout_ms > 0 ? double(r.steps_per_iteration) / (r.rollout_ms / 1e3) : 0;
  r.update_ms = 1e3 * t.update / iterations;
  r.iteration_ms = 1e3 * t.total_s / iterations;
}

/// Launches of one more iteration (Kokkos kernels, deep copies, BLAS calls).
void count_iteration(algos::Trainer* trainer, Server* server, Result& r) {
  double rollout = 0, update = 0, updates = 0;
  g_kernels = g_copies = 0;
  const auto b0 = blas::call_count();
  count_launches(true);
  iterate(trainer, server, rollout, update, updates);
  count_launches(false);
  r.kernels = double(g_kernels);
  r.copies = double(g_copies);
  r.blas = double(blas::call_count() - b0);
}

/// Training under mapping.template ea-t or async: the serving GMIs roll out in their own loop
/// (Trainer::serve) until their trainer stops them, so until then the trainers time their
/// iterations among themselves (`trainers`).  A trainer's iteration waits for its serving GMIs'
/// rollouts (the rollout column) and learns from them (update).  After the timed iterations and
/// one counted one, the trainers stop their serving GMIs (Trainer::end_run); then every GMI takes
/// part in the GPU figures (collective).  The timed window opens with the rollouts made during
/// the last warm-up iteration waiting (at most async.rollouts_in_flight per serving GMI).
void time_async(algos::Trainer& trainer, const instances::SplitTraining& split, MPI_Comm trainers, int warmup,
                int iterations, GpuMonitor* gpu, Result& r) {
  GpuInterval g;
  if (!split.trainer) {
    trainer.serve([](std::int64_t) {});
  } else {
    const Timed timed = timed_iterations(&trainer, nullptr, warmup, iterations, trainers, gpu);
    g = timed.gpu;
    set_rates(r, iterations, timed);
    r.rollout_steps_per_s = 0;  // the rollouts' own rate is the serving GMIs', not this wait's
    r.path = trainer.kernels(), r.trials = trainer.kernel_trials();
    count_iteration(&trainer, nullptr, r);
    trainer.end_run();
  }
  gpu_figures(g, r);
}

Result measure(const config::Config& base, int total, int warmup, int iterations, int profile, int kernel_times,
               const std::string& mode, const instances::Session& session, mpi::GradientReducer* reducer,
               const BenchRoles& roles, GpuMonitor* gpu) {
  const int gmi_rank = session.me().gmi_rank;
  const int n = total / int(roles.steppers.size());
  const bool serve = mode == "serve", updates_only = mode == "update";
  std::optional<instances::SplitTraining> split;
  // Warm-up, timed, counted, extra and profiled iterations.
  const config::Config cfg = point_config(base, roles, session, n, warmup + iterations + 2 + profile, split);
  Result r;
  r.num_envs = total;
  r.envs_per_gmi = n;
  r.steps_per_iteration = cfg.batch_size * roles.learners;
  r.minibatch_size = cfg.minibatch_size;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<algos::Trainer> trainer;
  std::optional<Server> server;
  // Under ea-t and async the trainers' communicator (MPI_COMM_NULL on a serving GMI).
  const MPI_Comm trainers = split && split->trainer ? session.learner_comms()->world() : MPI_COMM_NULL;
  if (serve)
    server.emplace(cfg, std::uint64_t(gmi_rank) * n);
  else if (split && split->async)
    trainer = instances::make_async_trainer(*split, cfg, reducer, trainers);
  else if (split)
    trainer = instances::make_split_trainer(*split, cfg, reducer);
  else
    trainer = algos::make_trainer(cfg, std::uint64_t(gmi_rank) * n, reducer);
  Server* sv = server ? &*server : nullptr;
  r.setup_s = max_over_ranks(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  r.path = trainer ? trainer->kernels() : "actor";
  if (split && split->async) {
    time_async(*trainer, *split, trainers, warmup, iterations, gpu, r);
    r.memory_per_gmi = max_over_ranks(session.memory_in_use());
    from_first_trainer(r, *split);
    return r;
  }
  if (updates_only) {
    // Training steps alone on a full buffer: sample, forward, loss, backward, reduction, Adam.
    algos::UpdateBenchmark* off = trainer->update_benchmark();
    GMI_REQUIRE(off != nullptr, "bench --mode update: the trainer has no replay to update from");
    off->fill_replay_for_benchmark();
    off->run_updates(warmup);
    mpi::blocking_barrier();
    if (gpu) gpu->read_now(), gpu->start();
    const auto t1 = std::chrono::steady_clock::now();
    off->run_updates(iterations);
    const double s = max_over_ranks(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
    gpu_figures(gpu_window(gpu), r);
    r.ms_per_update = 1e3 * s / iterations;
    r.updates_per_s = iterations / s;
    r.update_ms = r.ms_per_update;
    r.memory_per_gmi = max_over_ranks(session.memory_in_use());
    g_kernels = g_copies = 0;
    const auto b0 = blas::call_count();
    count_launches(true);
    off->run_updates(1);
    count_launches(false);
    r.kernels = double(g_kernels);
    r.copies = double(g_copies);
    r.blas = double(blas::call_count() - b0);
    return r;
  }
  const Timed timed = timed_iterations(trainer.get(), sv, warmup, iterations, MPI_COMM_WORLD, gpu);
  gpu_figures(timed.gpu, r);
  if (trainer) r.path = trainer->kernels(), r.trials = trainer->kernel_trials();  // auto chose on the first iteration
  set_rates(r, iterations, timed);
  double rollout = 0, update = 0, updates = 0;  // of the iterations below, not reported
  r.memory_per_gmi = max_over_ranks(session.memory_in_use());
  // Kokkos' tool callbacks fence around every launch, which a graph capture cannot contain: the
  // rollout graph (captured from the second rollout on) must exist before launches are counted.
  if (warmup + iterations < 2) iterate(trainer.get(), sv, rollout, update, updates);
  count_iteration(trainer.get(), sv, r);
  if (split) from_first_trainer(r, *split);
  if (kernel_times > 0) {
    KernelTimer timer;
    for (int i = 0; i < kernel_times; ++i) iterate(trainer.get(), sv, rollout, update, updates);
    r.kernel_times = timer.sorted();
    for (KernelTime& k : r.kernel_times) k.calls /= kernel_times, k.seconds /= kernel_times;
  }
  if (trainer && profile > 0) {
    // Where the time goes: fenced at every phase boundary, so slower than the timed iterations.
    algos::PhaseClock clock;
    GMI_REQUIRE(trainer->profile_phases(&clock), "bench: this trainer cannot time its phases");
    clock.start(ExecSpace());
    for (int i = 0; i < profile; ++i) iterate(trainer.get(), sv, rollout, update, updates);
    trainer->profile_phases(nullptr);
    for (int p = 0; p < algos::kNumPhases; ++p) r.phase_s[p] = max_over_ranks(clock.seconds(algos::Phase(p))) / profile;
    r.profiled = profile;
    const nn::ActorCriticLayout L = algos::PpoTrainer::policy_layout(cfg);
    const envs::EnvSpec& spec = trainer->env_spec();
    PpoShape s;
    s.num_envs = n;
    s.num_steps = cfg.section<algos::PpoConfig>().num_steps;
    s.epochs = cfg.section<algos::PpoConfig>().update_epochs;
    s.minibatches = cfg.section<algos::PpoConfig>().num_minibatches;
    s.obs_dim = spec.obs_dim;
    s.act_dim = spec.act_dim;
    s.continuous = !spec.discrete();
    for (const auto& l : L.trunk.layers) s.trunk.emplace_back(l.in, l.out);
    for (const auto& l : L.actor.layers) s.actor.emplace_back(l.in, l.out);
    for (const auto& l : L.critic.layers) s.critic.emplace_back(l.in, l.out);
    s.params = double(L.num_params);
    const auto* ppo = dynamic_cast<const algos::PpoTrainer*>(trainer.get());
    s.fused_update = ppo ? ppo->fused_update() : algos::fused_wanted(cfg) && rl::FusedUpdate::supported(L);
    s.reduction = roles.learners > 1;
    s.normalize_obs = cfg.section<algos::PpoConfig>().normalize_obs;
    s.device_env = spec.host_bytes_per_env == 0;
    r.phase_work = ppo_phase_work(s);
  }
  return r;
}

/// Fraction of the limit a phase reached: the larger of its FLOP rate over the peak that bounds
/// it and its byte rate over the bandwidth (0 when the peaks are unknown).
/// The peaks bounding the rollout's and the update's matrix products (their kernels may differ).
struct MatmulPeaks {
  double rollout = 0, update = 0;
};

struct PhaseRate {
  double flops_per_s = 0, bytes_per_s = 0, flop_frac = 0, bw_frac = 0;
  double frac() const { return std::max(flop_frac, bw_frac); }
};
PhaseRate phase_rate(const Result& r, int p, const DevicePeaks& peaks, const MatmulPeaks& mm) {
  PhaseRate x;
  const double s = r.phase_s[p];
  if (s <= 0) return x;
  x.flops_per_s = r.phase_work[p].flops / s;
  x.bytes_per_s = r.phase_work[p].bytes / s;
  const algos::Phase ph = algos::Phase(p);
  const double fpeak = ph == algos::Phase::Inference ? mm.rollout : is_matmul_phase(ph) ? mm.update : peaks.fp32;
  if (fpeak > 0) x.flop_frac = x.flops_per_s / fpeak;
  if (peaks.bytes_per_s > 0) x.bw_frac = x.bytes_per_s / peaks.bytes_per_s;
  return x;
}

/// The phase furthest from its limit among those taking at least 5 % of a profiled iteration.
int furthest_phase(const Result& r, const DevicePeaks& peaks, const MatmulPeaks& mm) {
  double total = 0;
  for (double s : r.phase_s) total += s;
  int best = -1;
  for (int p = 0; p < algos::kNumPhases; ++p) {
    if (r.phase_s[p] < 0.05 * total || algos::Phase(p) == algos::Phase::Other) continue;
    if (best < 0 || phase_rate(r, p, peaks, mm).frac() < phase_rate(r, best, peaks, mm).frac())
      best = p;
  }
  return best;
}

void print_phases(const Result& r, const DevicePeaks& peaks, const MatmulPeaks& mm) {
  double total = 0;
  for (double s : r.phase_s) total += s;
  spdlog::info("phases at {} envs ({} per GMI; {} profiled iterations fenced at every phase: {:.2f} ms each)",
               r.num_envs, r.envs_per_gmi, r.profiled, 1e3 * total);
  spdlog::info("  {:<16} {:>9} {:>6} {:>11} {:>9} {:>10} {:>9}", "phase", "ms/iter", "share", "GFLOP/s", "GB/s",
               "% FLOP pk", "% BW pk");
  for (int p = 0; p < algos::kNumPhases; ++p) {
    if (r.phase_s[p] <= 0) continue;
    const PhaseRate x = phase_rate(r, p, peaks, mm);
    const auto pct = [&](double f) { return peaks.known() ? fmt::format("{:.1f}", 100 * f) : std::string("-"); };
    spdlog::info("  {:<16} {:>9.3f} {:>5.1f}% {:>11.1f} {:>9.1f} {:>10} {:>9}", algos::phase_name(algos::Phase(p)),
                 1e3 * r.phase_s[p], 100 * r.phase_s[p] / total, x.flops_per_s / 1e9, x.bytes_per_s / 1e9,
                 pct(x.flop_frac), pct(x.bw_frac));
  }
  const int f = furthest_phase(r, peaks, mm);
  if (peaks.known() && f >= 0)
    spdlog::info("  furthest from its limit (of the phases over 5 % of the time): {} at {:.1f} % of peak",
                 algos::phase_name(algos::Phase(f)), 100 * phase_rate(r, f, peaks, mm).frac());
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) o += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return o + "\"";
}

/// A number, or null where it is not known (JSON has no NaN).
std::string json_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.1f}", v) : "null";
}

/// The layout as JSON fields (shared by both benchmarks).
std::string layout_json(const instances::Session& s) {
  const auto& L = s.layout();
  std::string per = "[";
  for (std::size_t g = 0; g < L.gmis_per_gpu.size(); ++g) per += (g ? ", " : "") + std::to_string(L.gmis_per_gpu[g]);
  return fmt::format("\"gmis\": {}, \"nodes\": {}, \"gpus\": {}, \"gmis_per_gpu\": {}], \"backend\": {}",
                     L.size(), L.num_nodes, L.num_gpus, per, json_string(s.settings().backend));
}

/// --kernel-times: the longest kernels of one size, per iteration.
void print_kernel_times(const Result& r) {
  if (r.kernel_times.empty()) return;
  double total = 0;
  for (const KernelTime& k : r.kernel_times) total += k.seconds;
  spdlog::info("kernel by kernel at {} envs (fenced; ms and launches per iteration; {:.2f} ms in all, nested "
               "regions counted in their parents too)", r.num_envs, 1e3 * total);
  for (std::size_t i = 0; i < r.kernel_times.size() && i < 25; ++i) {
    const KernelTime& k = r.kernel_times[i];
    spdlog::info("  {:>9.3f} ms {:>5.1f}% {:>7.0f}x  {}", 1e3 * k.seconds, 100 * k.seconds / total, k.calls, k.name);
  }
}

/// ", "kernel_times": [...]" of a result timed kernel by kernel (empty otherwise).
std::string kernel_times_json(const Result& r) {
  if (r.kernel_times.empty()) return "";
  std::string out = ", \"kernel_times\": [";
  for (std::size_t i = 0; i < r.kernel_times.size(); ++i)
    out += fmt::format("{}{{\"name\": {}, \"calls_per_iteration\": {:.2f}, \"ms_per_iteration\": {:.4f}}}", i ? ", " : "",
                       json_string(r.kernel_times[i].name), r.kernel_times[i].calls, 1e3 * r.kernel_times[i].seconds);
  return out + "]";
}

/// ", "phases": [...], "furthest_from_limit": ..." of a profiled result (empty otherwise).
std::string phases_json(const Result& r, const DevicePeaks& peaks, const MatmulPeaks& mm) {
  if (r.profiled == 0) return "";
  std::string s = ", \"phases\": [";
  bool first = true;
  for (int p = 0; p < algos::kNumPhases; ++p) {
    if (r.phase_s[p] <= 0) continue;
    const PhaseRate x = phase_rate(r, p, peaks, mm);
    s += fmt::format("{}{{\"phase\": \"{}\", \"ms\": {:.4f}, \"flops\": {:.6g}, \"bytes\": {:.6g}, "
                     "\"flops_per_s\": {:.6g}, \"bytes_per_s\": {:.6g}, \"flop_peak_fraction\": {:.4f}, "
                     "\"bandwidth_peak_fraction\": {:.4f}}}",
                     first ? "" : ", ", algos::phase_name(algos::Phase(p)), 1e3 * r.phase_s[p], r.phase_work[p].flops,
                     r.phase_work[p].bytes, x.flops_per_s, x.bytes_per_s, x.flop_frac, x.bw_frac);
    first = false;
  }
  const int f = furthest_phase(r, peaks, mm);
  return s + "], \"furthest_from_limit\": " + json_string(f >= 0 && peaks.known() ? algos::phase_name(algos::Phase(f)) : "") ;
}

std::ofstream open_json(const std::string& path) {
  std::ofstream j(path);
  if (!j) throw InputError(path + ": cannot write");
  return j;
}

/// What the JSON says besides the results: the run's settings, layout and peaks.
struct JsonHead {
  const config::Config& base;
  std::string device, layout, reduce_name;
  int sims_per_trainer = 0, profile = 0;
  double budget = 0;  ///< the smallest memory share of a GMI, bytes
  DevicePeaks peaks;
  std::pair<double, std::string> mm_peak;
  MatmulPeaks mm;
};

/// Where --json is written first (then renamed over it).
std::string json_tmp(const BenchOptions& o) { return o.json_path + ".tmp"; }

/// --json can be written, checked by rank 0 before any point (collective: every rank's error).
void check_json_path(const BenchOptions& o, bool root) {
  if (o.json_path.empty()) return;
  instances::agreed([&] {
    if (!root) return;
    if (!std::ofstream(json_tmp(o)))
      throw InputError(fmt::format("--json {}: cannot write (its first copy, {})", o.json_path, json_tmp(o)));
    std::filesystem::remove(json_tmp(o));
  });
}

/// --json: the settings and every result so far (rank 0).
void write_json(const BenchOptions& o, const JsonHead& h, const std::vector<Result>& results) {
  const std::string tmp = json_tmp(o);
  {
    std::ofstream j = open_json(tmp);
    j << "{\n  \"benchmark\": \"" << h.base.algo << (o.mode == "serve" ? "_serve" : o.mode == "update" ? "_update" : "_end_to_end")
      << "\",\n  \"algo\": \"" << h.base.algo << "\",\n  \"mode\": \"" << o.mode
      << "\",\n  \"memory_budget_per_gmi\": " << fmt::format("{:.0f}", h.budget)
      << ",\n  \"gmi_drl_version\": \"" << GMI_DRL_VERSION
      << "\",\n  \"device\": " << json_string(h.device) << ",\n  \"config\": " << json_string(h.base.source)
      << ",\n  \"seed\": " << h.base.train.seed << ",\n  " << h.layout
      << ",\n  \"reduce\": " << json_string(h.reduce_name) << ",\n  \"template\": " << json_string(h.base.mapping.template_)
      << ",\n  \"simulators_per_trainer\": " << h.sims_per_trainer << ",\n  \"env\": \""
      << h.base.env.name << "\",\n  \"env_threads\": " << h.base.env.threads << ",\n  \"env_batch_size\": "
      << h.base.env.batch_size << ",\n  \"num_steps\": " << h.base.num_steps << ",\n  \"update_epochs\": "
      << h.base.section<algos::PpoConfig>().update_epochs << ",\n  \"num_minibatches\": " << h.base.section<algos::PpoConfig>().num_minibatches
      << ",\n  \"batch_size\": " << (results.empty() ? h.base.minibatch_size : results.front().minibatch_size)
      << ",\n  \"replay_storage\": \"" << h.base.section<algos::ReplayConfig>().storage
      << "\",\n  \"replay_capacity\": " << h.base.section<algos::ReplayConfig>().capacity
      << ",\n  \"matmul\": \"" << h.base.device.matmul << "\",\n  \"warmup_iterations\": " << o.warmup
      << ",\n  \"timed_iterations\": " << o.iterations << ",\n  \"profiled_iterations\": " << h.profile
      << ",\n  \"peaks\": {\"model\": " << json_string(h.peaks.model) << ", \"source\": " << json_string(h.peaks.source)
      << fmt::format(", \"fp32_flops\": {:.4g}, \"tf32_flops\": {:.4g}, \"bf16_flops\": {:.4g}, \"bytes_per_s\": {:.4g}, "
                     "\"matmul_peak_flops\": {:.4g}, \"matmul_peak\": {}}}",
                     h.peaks.fp32, h.peaks.tf32, h.peaks.bf16, h.peaks.bytes_per_s, h.mm_peak.first, json_string(h.mm_peak.second))
      << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      j << fmt::format(
          "    {{\"num_envs\": {}, \"envs_per_gmi\": {}, \"env_steps_per_iteration\": {}, \"minibatch_size\": {}, "
          "\"env_steps_per_s\": {:.1f}, "
          "\"updates_per_s\": {:.2f}, \"ms_per_update\": {:.4f}, \"rollout_env_steps_per_s\": {:.1f}, "
          "\"iteration_ms\": {:.3f}, \"rollout_ms\": {:.3f}, \"update_ms\": {:.3f}, "
          "\"kokkos_kernels_per_iteration\": {:.0f}, \"blas_calls_per_iteration\": {:.0f}, "
          "\"deep_copies_per_iteration\": {:.0f}, \"setup_s\": {:.3f}, \"memory_per_gmi\": {:.0f}, "
          "\"gpu_util_pct\": {}, \"gpu_util_samples\": {}, \"gpu_mem_mib\": {}, \"kernels\": \"{}\", \"kernel_trials\": {}{}{}}}{}\n",
          r.num_envs, r.envs_per_gmi, r.steps_per_iteration, r.minibatch_size, r.steps_per_s, r.updates_per_s, r.ms_per_update,
          r.rollout_steps_per_s,
          r.iteration_ms, r.rollout_ms,
          r.update_ms, r.kernels, r.blas, r.copies, r.setup_s, r.memory_per_gmi, json_number(r.gpu_util_pct),
          r.gpu_samples, json_number(r.gpu_mem_mib), r.path, json_string(r.trials), phases_json(r, h.peaks, h.mm), kernel_times_json(r),
          i + 1 < results.size() ? "," : "");
    }
    j << "  ]\n}\n";
  }
  // Whole or not at all: a reader (gmi_drl tune, between --more-from-stdin points) never sees a
  // file half written.
  std::filesystem::rename(tmp, o.json_path);
}

/// The benchmark's config: the files and --set, with env.num_envs at the largest --num-envs per
/// GMI (each point sets its own count and is checked below; the file's count is not what keys that
/// depend on it, such as env.batch_size, are checked against).
config::Config load_bench_config(const BenchOptions& o, int W) {
  config::Overrides sets = config::parse_overrides(o.sets);
  const int most = o.num_envs.empty() ? 0 : *std::max_element(o.num_envs.begin(), o.num_envs.end());
  if (most >= W && most % W == 0) sets.emplace_back("env.num_envs", std::to_string(most / W));
  return config::load(o.config_paths, sets, W);
}

/// What --mode can measure for this config's algorithm and template.
void check_mode(const BenchOptions& o, const config::Config& base) {
  if (o.mode != "train" && o.mode != "serve" && o.mode != "update")
    throw InputError("--mode: expected train, serve or update, got '" + o.mode + "'");
  const algos::Algorithm& algo = algos::algorithm(base.algo);
  if (o.mode == "serve" && !algo.serve_bench)
    throw InputError("--mode serve: serves the actors of algo " +
                     algos::algorithm_names([](const algos::Algorithm& a) { return a.serve_bench; }) +
                     "; this config has algo " + base.algo);
  if (o.mode == "update" && !algo.replay)
    throw InputError("--mode update: times updates on a replay buffer (algo " +
                     algos::algorithm_names([](const algos::Algorithm& a) { return a.replay; }) +
                     "); this config has algo " + base.algo);
  // The training templates that split roles; the others: plan_split_roles says what they are for.
  const std::string& t = base.mapping.template_;
  if (!config::splits_training(t)) return;
  if (o.mode != "train")
    throw InputError(fmt::format("mapping.template: {}: bench measures training under it (--mode train); --mode {} "
                                 "runs under dp",
                                 t, o.mode));
  if (o.kernel_times > 0)
    throw InputError(fmt::format("--kernel-times: times the kernels of rank 0's iterations, which under "
                                 "mapping.template {} {}; use it under dp",
                                 t, t == "e-at" ? "a simulator GMI does not run" : "only wait for and learn from rollouts"));
}

/// An env count (`what`: where it came from) splits evenly over the GMIs that step envs, into a
/// batch the algorithm takes.
void check_env_count(int n, const char* what, const config::Config& base, const BenchRoles& roles,
                     const instances::Session& session) {
  const int S = int(roles.steppers.size());
  const std::string who = roles.split ? std::string(instances::stepper_name(base.mapping.template_)) + " " : "";
  if (n < 1 || n % S != 0)
    throw InputError(fmt::format("{}: {} is not a positive count that splits evenly over {} {}GMI(s)", what, n, S, who));
  // The algorithm's own constraints on the batch (e.g. PPO's minibatches), as its config states them.
  try {
    std::optional<instances::SplitTraining> at_n;
    point_config(base, roles, session, n / S, 1, at_n);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {} ({} per {}GMI): {}", what, n, n / S, who, e.what()));
  }
}

/// --more-from-stdin: the next env count, which rank 0 reads from its standard input (a count a
/// line; blank lines skipped), or 0 at its end (collective; the other ranks wait for rank 0 with no
/// time limit, as it waits for its input).  Not a count: gmi::InputError on every rank.
int next_count_from_stdin(bool root) {
  std::string word;
  if (root) {
    std::string line;
    while (word.empty()) {
      if (!std::getline(std::cin, line)) {
        word = "end";
        break;
      }
      const auto first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
      if (first != std::string::npos) word = line.substr(first, last - first + 1);
    }
  }
  word = mpi::blocking_broadcast_string(word);
  if (word == "end") return 0;
  const auto n = config::parse_integer(word);
  if (!n || *n < 1 || *n > (1 << 30))
    throw InputError(fmt::format("--more-from-stdin: '{}' is not an env count (expected a positive integer a line, or "
                                 "end)",
                                 word));
  return int(*n);
}

}  // namespace

int run_bench(const BenchOptions& o, int* argc, char*** argv) {
  return runtime::run_mpi_command(argc, argv, "info", [&](mpi::Environment& mpi) {
    const int W = mpi.size();
    const bool serve = o.mode == "serve";
    config::Config base = load_bench_config(o, W);
    const algos::Algorithm& algo = algos::algorithm(base.algo);
    check_mode(o, base);
    instances::Session session(base, mpi);
    const BenchRoles roles = bench_roles(base, session, mpi.rank());
    for (int n : o.num_envs) check_env_count(n, "--num-envs", base, roles, session);
    if (roles.split) {
      spdlog::info("{}", roles.split->plan.table(session.layout()));
      session.set_learners(roles.split->trainers);
    }
    base.env.threads = session.env_threads(base.env.threads, roles.split ? roles.steppers : std::vector<int>{});
    const std::string table = session.layout_table();
    const std::string device = instances::device_description();
    const std::string what = serve ? "serve: rollouts only"
                             : o.mode == "update" ? "update: gradient updates on a full replay buffer"
                                                  : "train: rollout + update";
    const std::string settings = algo.settings(base);
    spdlog::info("gmi_drl {} bench ({}) | {} | {} | {} | matmul {}", GMI_DRL_VERSION, what, device, base.env.name,
                 settings, base.device.matmul);
    spdlog::info("layout: {}", table);
    std::unique_ptr<mpi::GradientReducer> reducer;
    if (roles.learners > 1)
      instances::agreed([&] { reducer = session.make_reducer(algos::num_params(base)); });
    const std::string reduce_name =
        roles.split ? mpi::broadcast_string(reducer ? reducer->name() : "none", MPI_COMM_WORLD, roles.split->trainers.front())
              : reducer ? reducer->name() : "none";
    // Per-phase profile and roofline (PPO train mode, single-agent environments: a multi-agent
    // trainer's roles are not split into phases, nor are a trainer's whose envs step elsewhere).
    const int profile = algo.phase_profile && o.mode == "train" && !envs::is_multi_agent(base.env.name) && !roles.split
                            ? o.phase_iterations
                            : 0;
    const DevicePeaks peaks = device_peaks();
    std::pair<double, std::string> mm_peak{0.0, ""};
    MatmulPeaks mm;
    if (profile > 0) {
      const nn::ActorCriticLayout L = algos::PpoTrainer::policy_layout(base);
      const bool fused = algos::fused_wanted(base);
      mm_peak = matmul_peak(peaks, base.device.matmul, fused && rl::FusedUpdate::supported(L));
      mm.update = mm_peak.first;
      mm.rollout = matmul_peak(peaks, base.device.matmul, fused && rl::fused_act_supported(L)).first;
      spdlog::info("peaks: {} ({})", peaks.model, peaks.source);
      if (peaks.known())
        spdlog::info("peaks: FP32 {:.1f} TFLOP/s, TF32 {:.1f}, BF16 {:.1f}, memory {:.2f} TB/s; matrix products bounded "
                     "by {} ({:.1f} TFLOP/s)",
                     peaks.fp32 / 1e12, peaks.tf32 / 1e12, peaks.bf16 / 1e12, peaks.bytes_per_s / 1e12, mm_peak.second,
                     mm_peak.first / 1e12);
    }
    std::vector<Result> results;
    const std::unique_ptr<GpuMonitor> gpu = gpu_monitor(session);
    GpuMonitor* monitor = gpu.get();
    spdlog::info("{:>9} {:>8} {:>14} {:>11} {:>12} {:>11} {:>11} {:>9} {:>8} {:>7} {:>9} {:>6}  {}", "num_envs",
                 "per GMI", "env steps/s", "updates/s", "iteration ms", "rollout ms", "update ms", "kernels", "blas",
                 "copies", "MiB/GMI", "GPU %", "path");
    double budget = -session.memory_budget();
    mpi::allreduce_max(&budget, 1);  // the smallest share any GMI has
    const JsonHead head{base,    device,  layout_json(session), reduce_name, roles.split ? roles.split->sims_per_trainer : 0,
                        profile, -budget, peaks,                mm_peak,     mm};
    check_json_path(o, mpi.rank() == 0);
    for (std::size_t i = 0;; ++i) {
      int n = 0;
      if (i < o.num_envs.size()) {
        n = o.num_envs[i];
      } else {
        if (!o.more_from_stdin || (n = next_count_from_stdin(mpi.rank() == 0)) == 0) break;
        check_env_count(n, "--more-from-stdin", base, roles, session);
      }
      const Result r = measure(base, n, o.warmup, o.iterations, profile, o.kernel_times, o.mode, session,
                               reducer.get(), roles, monitor);
      results.push_back(r);
      spdlog::info("{:>9} {:>8} {:>14.0f} {:>11.1f} {:>12.2f} {:>11.2f} {:>11.3f} {:>9.0f} {:>8.0f} {:>7.0f} {:>9.0f} "
                   "{:>6}  {}",
                   n, r.envs_per_gmi, r.steps_per_s, r.updates_per_s, r.iteration_ms, r.rollout_ms, r.update_ms,
                   r.kernels, r.blas, r.copies, r.memory_per_gmi / double(1 << 20),
                   std::isfinite(r.gpu_util_pct) ? fmt::format("{:.0f}", r.gpu_util_pct) : "-", r.path);
      if (!r.trials.empty()) spdlog::info("{:>9} kernels timed by device.fused_kernels auto: {}", "", r.trials);
      // Taking counts as they come, each result is written at once (its reader waits for it).
      if (o.more_from_stdin && !o.json_path.empty() && mpi.rank() == 0) write_json(o, head, results);
    }
    if (profile > 0)
      for (const Result& r : results) print_phases(r, peaks, mm);
    for (const Result& r : results) print_kernel_times(r);
    if (!o.json_path.empty() && mpi.rank() == 0) {
      write_json(o, head, results);
      spdlog::info("wrote {}", o.json_path);
    }
    return 0;
  });
}

namespace {

/// --sizes and --strategies, checked (InputError naming the option).
void check_reduce_options(const ReduceBenchOptions& o) {
  for (long long n : o.sizes)
    if (n < 1 || n > (1ll << 30)) throw InputError(fmt::format("--sizes: {} is not a float count in [1, 2^30]", n));
  const std::vector<std::string> known = {"mpr", "mrr", "har-ipc", "har-ipc-barriers", "har-mpi", "hybrid", "floor", "auto"};
  for (const auto& s : o.strategies)
    if (std::find(known.begin(), known.end(), s) == known.end())
      throw InputError("--strategies: unknown '" + s +
                       "' (expected mpr, mrr, har-ipc, har-ipc-barriers, har-mpi, hybrid, floor, auto)");
}

/// A strategy bench-reduce times: a reducer, or the floor (a device group without GMIs).
struct ReduceEntry {
  std::string label;
  std::unique_ptr<mpi::GradientReducer> r;
  std::unique_ptr<mpi::DeviceGroup> floor;
};

/// Every strategy of --strategies the layout can run, in order ("auto" is reported apart).
std::vector<ReduceEntry> reduce_entries(const ReduceBenchOptions& o, const mpi::Communicators& comms,
                                        const mpi::ReducerOptions& base, std::size_t max_n) {
  const mpi::Layout& L = comms.layout();
  std::vector<ReduceEntry> entries;
  for (const auto& s : o.strategies) {
    if (s == "floor") {
      // NCCL among one GMI per GPU: what the hardware allows without GMIs.
      if (L.num_gpus >= 2)
        entries.push_back({"floor (ring among GPU leaders)", nullptr,
                           std::make_unique<mpi::DeviceGroup>(comms.leaders(), mpi::ring_transport(), max_n)});
      continue;
    }
    if (s == "auto") continue;
    if (s == "hybrid") {
      for (int k = 1; k <= L.max_gmis_per_gpu(); ++k) {
        mpi::ReducerOptions h = base;
        h.hybrid_k = k;
        entries.push_back({fmt::format("hybrid k={}", k), mpi::make_strategy(comms, "hybrid", h), nullptr});
      }
      continue;
    }
    mpi::ReducerOptions opt = base;
    std::string name = s;
    if (s.rfind("har-", 0) == 0) {
      opt.intra_gpu = s == "har-mpi" ? "mpi" : "ipc";
      // har-ipc synchronises as the backend implies (device flags under MPS); har-ipc-barriers
      // always as time-sliced GMIs must (host barriers and interprocess events).
      if (s == "har-ipc-barriers") opt.concurrent_gmis = false;
      name = "har";
    }
    const std::string why = mpi::unsupported_reason(L, name, opt);
    if (!why.empty()) {
      spdlog::info("skipping {}: {}", s, why);
      continue;
    }
    entries.push_back({s, mpi::make_strategy(comms, name, opt), nullptr});
  }
  return entries;
}

/// One call of e: the reducer's mean, or the floor's sum, of `n` floats at `data`.
void reduce_once(ReduceEntry& e, const ExecSpace& space, float* data, std::size_t n) {
  if (e.r) e.r->allreduce_mean(space, data, n);
  else e.floor->allreduce_sum(space, data, n);
}

/// One checked call of e's reducer before it is timed: GMI g contributes g % 7 + 1 everywhere
/// (sums of small integers are exact in any order), so every element must come back as one value.
void check_reducer(ReduceEntry& e, const ExecSpace& space, float* data, long long n, const instances::Session& session) {
  const int W = session.comms().layout().size();
  float sum = 0;
  for (int g = 0; g < W; ++g) sum += float(g % 7 + 1);
  const float want = sum * (1.0f / float(W));
  Kokkos::deep_copy(space, Unmanaged1(data, std::size_t(n)), float(session.me().gmi_rank % 7 + 1));
  reduce_once(e, space, data, std::size_t(n));
  space.fence();
  std::vector<float> got(static_cast<std::size_t>(n));
  Kokkos::deep_copy(Kokkos::View<float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(got.data(), got.size()),
                    Unmanaged1(data, std::size_t(n)));
  const auto bad = std::find_if(got.begin(), got.end(), [&](float x) { return x != want; });
  if (bad != got.end())
    throw Error(fmt::format("bench-reduce: {} at {} floats returned {} at element {} on GMI {}, expected {}", e.label,
                            n, *bad, bad - got.begin(), session.me().gmi_rank, want));
}

struct ReducePoint {
  std::string label;
  long long n;
  double us;
};

/// Every entry at every size: checked once (reducers), warmed up, then timed (microseconds per
/// call, the slowest GMI's), one log line per point.
std::vector<ReducePoint> time_entries(const ReduceBenchOptions& o, std::vector<ReduceEntry>& entries,
                                      const instances::Session& session, const ExecSpace& space, View1<float> buf) {
  std::vector<ReducePoint> points;
  spdlog::info("{:<32} {:>10} {:>12} {:>10}", "strategy", "floats", "latency us", "GB/s alg");
  for (auto& e : entries)
    for (long long n : o.sizes) {
      // Where a trainer computes its gradient: the reducer's own buffer when it offers one.
      float* data = e.r && e.r->buffer() ? e.r->buffer() : buf.data();
      if (e.r) check_reducer(e, space, data, n, session);
      for (int i = 0; i < o.warmup; ++i) reduce_once(e, space, data, std::size_t(n));
      space.fence();
      mpi::blocking_barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.runs; ++i) {
        reduce_once(e, space, data, std::size_t(n));
        space.fence();
      }
      const double us = 1e6 * max_over_ranks(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) / o.runs;
      points.push_back({e.label, n, us});
      spdlog::info("{:<32} {:>10} {:>12.1f} {:>10.2f}", e.label, n, us, 4.0 * double(n) / us / 1e3);
    }
  return points;
}

/// What auto picks for each size (with --strategies auto and more than one GMI), logged.
std::vector<std::pair<long long, std::string>> auto_picks(const ReduceBenchOptions& o, const mpi::Communicators& comms,
                                                          const mpi::ReducerOptions& base, int auto_runs) {
  std::vector<std::pair<long long, std::string>> picks;
  if (std::find(o.strategies.begin(), o.strategies.end(), "auto") != o.strategies.end() && comms.layout().size() > 1)
    for (long long n : o.sizes) {
      mpi::ReducerOptions a = base;
      a.elements = std::size_t(n);
      a.auto_runs = auto_runs;
      mpi::ReducerChoice c = mpi::make_reducer(comms, a);
      picks.emplace_back(n, c.reducer->name());
      spdlog::info("auto at {} floats: {} (projected {:.1f} us; IP {:.1f} us, RP {:.1f} us, within-GPU {:.1f} us)", n,
                   c.reducer->name(), 1e6 * c.projections.front().seconds, 1e6 * c.costs.ip, 1e6 * c.costs.rp,
                   1e6 * c.costs.local);
    }
  return picks;
}

void write_reduce_json(const ReduceBenchOptions& o, const std::string& device, const instances::Session& session,
                       const std::vector<ReducePoint>& points,
                       const std::vector<std::pair<long long, std::string>>& picks) {
  std::ofstream j = open_json(o.json_path);
  j << "{\n  \"benchmark\": \"gradient_reduction\",\n  \"gmi_drl_version\": \"" << GMI_DRL_VERSION
    << "\",\n  \"device\": " << json_string(device) << ",\n  " << layout_json(session)
    << ",\n  \"runs\": " << o.runs << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < points.size(); ++i)
    j << fmt::format("    {{\"strategy\": {}, \"floats\": {}, \"latency_us\": {:.2f}}}{}\n",
                     json_string(points[i].label), points[i].n, points[i].us, i + 1 < points.size() ? "," : "");
  j << "  ],\n  \"auto\": [";
  for (std::size_t i = 0; i < picks.size(); ++i)
    j << fmt::format("{}{{\"floats\": {}, \"choice\": {}}}", i ? ", " : "", picks[i].first, json_string(picks[i].second));
  j << "]\n}\n";
  spdlog::info("wrote {}", o.json_path);
}

}  // namespace

int run_reduce_bench(const ReduceBenchOptions& o, int* argc, char*** argv) {
  return runtime::run_mpi_command(argc, argv, "info", [&](mpi::Environment& mpi) {
    const config::Config cfg = config::load(o.config_path, config::parse_overrides(o.sets), mpi.size());
    check_reduce_options(o);
    instances::Session session(cfg, mpi);
    const std::string table = session.layout_table();
    const std::string device = instances::device_description();
    const mpi::Communicators& comms = session.comms();
    spdlog::info("gmi_drl {} bench-reduce | {} | {} runs per point", GMI_DRL_VERSION, device, o.runs);
    spdlog::info("layout: {}", table);
    const std::size_t max_n = std::size_t(*std::max_element(o.sizes.begin(), o.sizes.end()));
    ExecSpace space;
    View1<float> buf("gmi::bench::reduce", max_n);
    Kokkos::deep_copy(buf, 1.0f);

    mpi::ReducerOptions base = session.reducer_options(max_n);
    base.strategy = "auto";
    std::vector<ReduceEntry> entries = reduce_entries(o, comms, base, max_n);
    const std::vector<ReducePoint> points = time_entries(o, entries, session, space, buf);
    const std::vector<std::pair<long long, std::string>> picks = auto_picks(o, comms, base, cfg.reduce.auto_runs);
    if (!o.json_path.empty() && mpi.rank() == 0) write_reduce_json(o, device, session, points, picks);
    return 0;
  });
}

}  // namespace gmi::tools
