#include "src/tools/bench.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "kernels/nn/blas.hpp"
#include "mpi/environment.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/runtime/kokkos_scope.hpp"
#include "src/runtime/mpi_command.hpp"

namespace gmi::tools {
namespace {

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
  int num_envs = 0;
  std::int64_t steps_per_iteration = 0;
  double steps_per_s = 0, rollout_ms = 0, update_ms = 0, iteration_ms = 0;
  double kernels = 0, copies = 0, blas = 0, setup_s = 0;
  std::string path;  ///< fused or layered kernels
};

Result measure(const config::Config& base, int n, int warmup, int iterations, int world) {
  config::Config cfg = base;
  cfg.env.num_envs = n;
  cfg.train.total_env_steps = std::int64_t(n) * cfg.ppo.num_steps * (warmup + iterations + 1) * world;
  config::derive(cfg, world);
  Result r;
  r.num_envs = n;
  r.steps_per_iteration = cfg.batch_size;
  const auto t0 = std::chrono::steady_clock::now();
  algos::PpoTrainer trainer(cfg, 0);
  r.setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.path = trainer.kernels();
  for (int i = 0; i < warmup; ++i) trainer.iterate();
  double rollout = 0, update = 0;
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    const auto m = trainer.iterate();
    rollout += m.time_rollout;
    update += m.time_update;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  r.steps_per_s = double(cfg.batch_size) * iterations / total;
  r.rollout_ms = 1e3 * rollout / iterations;
  r.update_ms = 1e3 * update / iterations;
  r.iteration_ms = 1e3 * total / iterations;
  g_kernels = g_copies = 0;
  const auto b0 = blas::call_count();
  count_launches(true);
  trainer.iterate();
  count_launches(false);
  r.kernels = double(g_kernels);
  r.copies = double(g_copies);
  r.blas = double(blas::call_count() - b0);
  return r;
}

}  // namespace

int run_bench(const BenchOptions& o, int* argc, char*** argv) {
  return runtime::run_mpi_command(argc, argv, "info", [&](mpi::Environment& mpi) {
    const config::Config base = config::load(o.config_path, config::parse_overrides(o.sets), 1);
    for (int n : o.num_envs)
      if (n < 1 || std::int64_t(n) * base.ppo.num_steps % base.ppo.num_minibatches != 0)
        throw InputError(fmt::format("--num-envs: {} is not a positive count whose batch "
                                     "(x ppo.num_steps {}) divides into {} minibatches",
                                     n, base.ppo.num_steps, base.ppo.num_minibatches));
    runtime::KokkosScope kokkos;
    const std::string device = runtime::device_description();
    spdlog::info("gmi_drl {} bench | {} | {} | {} steps x {} epochs x {} minibatches | matmul {}",
                 GMI_DRL_VERSION, device, base.env.name, base.ppo.num_steps, base.ppo.update_epochs,
                 base.ppo.num_minibatches, base.device.matmul);
    std::vector<Result> results;
    spdlog::info("{:>9} {:>14} {:>12} {:>11} {:>11} {:>9} {:>8} {:>7}  {}", "num_envs", "env steps/s",
                 "iteration ms", "rollout ms", "update ms", "kernels", "blas", "copies", "path");
    for (int n : o.num_envs) {
      const Result r = measure(base, n, o.warmup, o.iterations, 1);
      results.push_back(r);
      spdlog::info("{:>9} {:>14.0f} {:>12.2f} {:>11.2f} {:>11.2f} {:>9.0f} {:>8.0f} {:>7.0f}  {}", n,
                   r.steps_per_s, r.iteration_ms, r.rollout_ms, r.update_ms, r.kernels, r.blas,
                   r.copies, r.path);
    }
    if (!o.json_path.empty() && mpi.rank() == 0) {
      std::ofstream j(o.json_path);
      if (!j) throw InputError(o.json_path + ": cannot write");
      j << "{\n  \"benchmark\": \"ppo_end_to_end\",\n  \"gmi_drl_version\": \"" << GMI_DRL_VERSION
        << "\",\n  \"device\": \"" << device << "\",\n  \"env\": \"" << base.env.name
        << "\",\n  \"num_steps\": " << base.ppo.num_steps << ",\n  \"update_epochs\": "
        << base.ppo.update_epochs << ",\n  \"num_minibatches\": " << base.ppo.num_minibatches
        << ",\n  \"matmul\": \"" << base.device.matmul << "\",\n  \"warmup_iterations\": " << o.warmup
        << ",\n  \"timed_iterations\": " << o.iterations << ",\n  \"results\": [\n";
      for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        j << fmt::format(
            "    {{\"num_envs\": {}, \"env_steps_per_iteration\": {}, \"env_steps_per_s\": {:.1f}, "
            "\"iteration_ms\": {:.3f}, \"rollout_ms\": {:.3f}, \"update_ms\": {:.3f}, "
            "\"kokkos_kernels_per_iteration\": {:.0f}, \"blas_calls_per_iteration\": {:.0f}, "
            "\"deep_copies_per_iteration\": {:.0f}, \"setup_s\": {:.3f}, \"kernels\": \"{}\"}}{}\n",
            r.num_envs, r.steps_per_iteration, r.steps_per_s, r.iteration_ms, r.rollout_ms,
            r.update_ms, r.kernels, r.blas, r.copies, r.setup_s, r.path,
            i + 1 < results.size() ? "," : "");
      }
      j << "  ]\n}\n";
      spdlog::info("wrote {}", o.json_path);
    }
    return 0;
  });
}

}  // namespace gmi::tools
