// Throughput of the device physics pipeline: `bench_physics [--json FILE] [--seconds S]` steps
// Gymnasium's Ant and Humanoid as they are (contacts, limits) and with the constraint solver off
// (the smooth dynamics) at 4096 and 65536 envs with random controls from the initial pose, a task's frame skip of time
// steps per env step in one launch, and prints env-steps/s and time-steps/s (a JSON list with --json).  Not a test:
// timings are reported, never asserted.
#include <mujoco/mujoco.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/physics/batch.hpp"

namespace {

struct Row {
  std::string model, pipeline;
  int envs, frame_skip;
  double env_steps_per_s, seconds;
};

/// `full`: the model as it is (contacts, limits); else with the constraint solver off.
Row run(const std::string& xml, bool full, int frame_skip, int n, double seconds) {
  auto shared = gmi::envs::mujoco::load_model(xml, "");
  std::unique_ptr<mjModel, void (*)(mjModel*)> m(mj_copyModel(nullptr, shared.get()), mj_deleteModel);
  if (!full) m->opt.disableflags |= mjDSBL_CONSTRAINT;
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
  batch.step(space, frame_skip);  // warm-up
  space.fence();
  int iters = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (el < seconds) {
    for (int k = 0; k < 10; ++k) batch.step(space, frame_skip);
    space.fence();
    iters += 10;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return Row{xml, full ? "full (contacts, limits)" : "smooth (constraints off)", n, frame_skip, double(iters) * n / el,
             el};
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    std::string json;
    double seconds = 2.0;
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
        json = argv[++i];
      else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
        seconds = std::atof(argv[++i]);
    }
    std::vector<Row> rows;
    struct Case {
      const char* xml;
      bool full;
    };
    for (const Case& c :
         {Case{"ant.xml", true}, Case{"ant.xml", false}, Case{"humanoid.xml", true}, Case{"humanoid.xml", false}})
      for (int n : {4096, 65536}) {
        rows.push_back(run(c.xml, c.full, 5, n, seconds));
        const Row& r = rows.back();
        std::printf("%-14s %-26s %6d envs  frame skip %d  %12.0f env-steps/s\n", r.model.c_str(), r.pipeline.c_str(),
                    r.envs, r.frame_skip, r.env_steps_per_s);
        std::fflush(stdout);
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
                       "\"env_steps_per_s\": %.1f, \"seconds\": %.3f}%s\n",
                       rows[i].model.c_str(), rows[i].envs, rows[i].frame_skip, rows[i].pipeline.c_str(),
                       rows[i].env_steps_per_s, rows[i].seconds, i + 1 < rows.size() ? "," : "");
        std::fprintf(f, "]\n");
        std::fclose(f);
      }
    }
  }
  Kokkos::finalize();
  return rc;
}
