// Throughput of the device physics pipeline:
//   bench_physics [--json FILE] [--seconds S | --steps K] [--warmup T] [--cases MODEL:MODE,...] [--envs N,...]
// steps Gymnasium's models (default ant.xml and humanoid.xml; MODE full: as they are, contacts
// and limits; smooth: the constraint solver off; euler: as full with the semi-implicit Euler
// integrator instead of the model's, for peers that have no other) at each number of envs
// (default 4096,65536) with random controls from the initial pose, after T seconds of simulated time
// (default 0: one env step; the bodies fall for about 0.3 s before they touch the floor), timing
// S seconds of env steps or exactly K of them (the same steps as a peer timed for K), a task's frame skip of time
// steps per env step in one launch, and prints env-steps/s and time-steps/s (a JSON list with --json).  Not a test:
// timings are reported, never asserted.
#include <mujoco/mujoco.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/gpu_monitor.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/physics/batch.hpp"

namespace {

struct Row {
  std::string model, pipeline;
  int envs, frame_skip;
  double env_steps_per_s, seconds;
  gmi::GpuInterval gpu;
  double warmup = 0;
};

/// A JSON number, or null for NaN (no figure).
std::string number(double x) {
  if (std::isnan(x)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", x);
  return b;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

/// `full`: the model as it is (contacts, limits); `euler`: the same with Euler; `smooth`: with the
/// constraint solver off.
Row run(const std::string& xml, const std::string& mode, int frame_skip, int n, double seconds, int steps,
        double warmup, gmi::GpuMonitor& gpu) {
  auto shared = gmi::envs::mujoco::load_model(xml, "");
  std::unique_ptr<mjModel, void (*)(mjModel*)> m(mj_copyModel(nullptr, shared.get()), mj_deleteModel);
  if (mode == "smooth") m->opt.disableflags |= mjDSBL_CONSTRAINT;
  if (mode == "euler") m->opt.integrator = mjINT_EULER;
  gmi::physics::Batch<float> batch(gmi::physics::from_mujoco<float>(m.get(), xml), n);
  auto hq = Kokkos::create_mirror_view(batch.qpos), hc = Kokkos::create_mirror_view(batch.ctrl);
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < m->nq; ++k) hq(i, k) = float(m->qpos0[k]);
    for (int k = 0; k < m->nu; ++k) hc(i, k) = 0.4f * u(g);
  }
  Kokkos::deep_copy(batch.qpos, hq), Kokkos::deep_copy(batch.ctrl, hc);
  gmi::ExecSpace space;
  const int warm = std::max(1, int(std::ceil(warmup / (frame_skip * m->opt.timestep))));
  for (int k = 0; k < warm; ++k) batch.step(space, frame_skip);
  space.fence();
  int iters = 0;
  gpu.read_now();
  gpu.start();
  const auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (steps > 0 ? iters < steps : el < seconds) {
    const int chunk = steps > 0 ? std::min(10, steps - iters) : 10;
    for (int k = 0; k < chunk; ++k) batch.step(space, frame_skip);
    space.fence();
    iters += chunk;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  gpu.read_now();
  return Row{xml,
             mode == "smooth"  ? "smooth (constraints off)"
             : mode == "euler" ? "full, Euler (contacts, limits)"
                               : "full (contacts, limits)",
             n,
             frame_skip,
             double(iters) * n / el,
             el,
             gpu.interval(true),
             warm * frame_skip * m->opt.timestep};
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    std::string json, cases = "ant.xml:full,ant.xml:smooth,humanoid.xml:full,humanoid.xml:smooth", envs = "4096,65536";
    double seconds = 2.0, warmup = 0;
    int steps = 0;
    for (int i = 1; i < argc; ++i) {
      const bool more = i + 1 < argc;
      if (!std::strcmp(argv[i], "--json") && more) {
        json = argv[++i];
      } else if (!std::strcmp(argv[i], "--seconds") && more) {
        seconds = std::atof(argv[++i]);
      } else if (!std::strcmp(argv[i], "--steps") && more) {
        steps = std::atoi(argv[++i]);
      } else if (!std::strcmp(argv[i], "--warmup") && more) {
        warmup = std::atof(argv[++i]);
      } else if (!std::strcmp(argv[i], "--cases") && more) {
        cases = argv[++i];
      } else if (!std::strcmp(argv[i], "--envs") && more) {
        envs = argv[++i];
      } else {
        std::fprintf(stderr,
                     "bench_physics: unknown argument '%s' (--json FILE, --seconds S, --steps K, --warmup T, "
                     "--cases MODEL:full|smooth|euler,..., --envs N,...)\n",
                     argv[i]);
        Kokkos::finalize();
        return 2;
      }
    }
    gmi::GpuMonitor gpu;
    if (!gpu.available()) std::printf("GPU utilisation not sampled: %s\n", gpu.why_not().c_str());
    std::vector<Row> rows;
    for (const std::string& c : split(cases)) {
      const auto colon = c.find(':');
      const std::string xml = c.substr(0, colon), mode = colon == std::string::npos ? "full" : c.substr(colon + 1);
      if (mode != "full" && mode != "smooth" && mode != "euler") {
        std::fprintf(stderr, "bench_physics: --cases: '%s' is not MODEL:full, MODEL:smooth or MODEL:euler\n",
                     c.c_str());
        Kokkos::finalize();
        return 2;
      }
      for (const std::string& e : split(envs)) {
        const int n = std::atoi(e.c_str());
        if (n <= 0) {
          std::fprintf(stderr, "bench_physics: --envs: '%s' is not a positive number\n", e.c_str());
          Kokkos::finalize();
          return 2;
        }
        rows.push_back(run(xml, mode, 5, n, seconds, steps, warmup, gpu));
        const Row& r = rows.back();
        std::printf("%-14s %-26s %6d envs  frame skip %d  %12.0f env-steps/s  GPU busy %5.1f %%  block %d\n",
                    r.model.c_str(), r.pipeline.c_str(), r.envs, r.frame_skip, r.env_steps_per_s, r.gpu.util_pct,
                    gmi::physics::threads_per_block());
        std::fflush(stdout);
      }
    }
    if (!json.empty()) {
      FILE* f = std::fopen(json.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "bench_physics: cannot write %s\n", json.c_str());
        rc = 1;
      } else {
        std::fprintf(f, "[\n");
        for (std::size_t i = 0; i < rows.size(); ++i)
          std::fprintf(f,
                       "  {\"model\": \"%s\", \"envs\": %d, \"frame_skip\": %d, \"pipeline\": \"%s\", "
                       "\"warmup_s\": %.3f, \"env_steps_per_s\": %.1f, \"seconds\": %.3f, \"gpu_util_pct\": %s, "
                       "\"gpu_util_samples\": %d, "
                       "\"gpu_mem_mib\": %s, \"threads_per_block\": %d}%s\n",
                       rows[i].model.c_str(), rows[i].envs, rows[i].frame_skip, rows[i].pipeline.c_str(),
                       rows[i].warmup, rows[i].env_steps_per_s, rows[i].seconds, number(rows[i].gpu.util_pct).c_str(),
                       rows[i].gpu.samples, number(rows[i].gpu.mem_mib).c_str(), gmi::physics::threads_per_block(),
                       i + 1 < rows.size() ? "," : "");
        std::fprintf(f, "]\n");
        std::fclose(f);
      }
    }
  }
  Kokkos::finalize();
  return rc;
}
