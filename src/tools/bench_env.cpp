// gmi_drl bench-env: raw environment throughput with random actions (the actions are drawn once,
// uploaded once, and stepped through: what is timed is the environments, and for host-simulated
// ones on GPU builds the copies of actions and results through pinned memory); --repeats R times
// R runs per point and reports their median (the JSON keeps every run).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/envs.hpp"
#include "kernels/envs/registry.hpp"
#include "src/config/config.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/tools/bench.hpp"

namespace gmi::tools {
namespace {

/// env-steps/s of `repeats` timed calls of `run` (each `steps` vector steps of `envs` envs, the
/// device waited for), and their median.
struct Timed {
  std::vector<double> runs;
  double median = 0;
  std::string spread() const {  // for the log line
    if (runs.size() < 2) return "";
    const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
    return fmt::format(" (median of {}: {:.0f}-{:.0f})", runs.size(), *lo, *hi);
  }
  std::string json() const {
    std::string r;
    for (double v : runs) r += fmt::format("{}{:.1f}", r.empty() ? "" : ", ", v);
    return fmt::format("\"env_steps_per_s\": {:.1f}, \"runs\": [{}]", median, r);
  }
};

template <class Run>
Timed time_runs(int repeats, int steps, int envs, const ExecSpace& space, Run&& run) {
  Timed t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    space.fence();
    t.runs.push_back(double(steps) * envs / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> sorted = t.runs;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  t.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return t;
}

/// A multi-agent game: every role's rows stepped with fixed random actions (one draw per row).
void run_multi_agent_env_bench(const EnvBenchOptions& o, const config::Config& cfg) {
  ExecSpace space;
  auto env = envs::make_multi_agent_env(o.name, o.num_envs, 1, 0, config::env_overrides(cfg));
  const envs::MultiAgentSpec spec = env->spec();
  std::vector<View1<float>> obs, fin, rew, act;
  std::vector<View1<std::uint8_t>> term, trunc;
  std::vector<float*> obs_p;
  std::vector<const float*> act_p;
  std::vector<envs::StepOutputs> out;
  std::mt19937 g(7);
  for (const envs::RoleSpec& r : spec.roles) {
    const std::size_t rows = std::size_t(o.num_envs) * r.agents;
    obs.emplace_back("gmi::bench_env::obs", rows * r.obs_dim);
    fin.emplace_back("gmi::bench_env::final_obs", rows * r.obs_dim);
    rew.emplace_back("gmi::bench_env::reward", rows);
    term.emplace_back("gmi::bench_env::terminated", rows);
    trunc.emplace_back("gmi::bench_env::truncated", rows);
    const std::vector<int> sizes = r.action_sizes();
    std::vector<float> a(rows * sizes.size());
    for (std::size_t k = 0; k < a.size(); ++k) a[k] = float(g() % std::uint32_t(sizes[k % sizes.size()]));
    act.emplace_back("gmi::bench_env::actions", a.size());
    Kokkos::deep_copy(act.back(),
                      Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(a.data(), a.size()));
    obs_p.push_back(obs.back().data());
    act_p.push_back(act.back().data());
    out.push_back({obs.back().data(), fin.back().data(), rew.back().data(), term.back().data(), trunc.back().data()});
  }
  env->reset_all(space, obs_p.data());
  for (int i = 0; i < o.warmup; ++i) env->step(space, act_p.data(), out.data());
  space.fence();
  const Timed timed = time_runs(o.repeats, o.steps, o.num_envs, space, [&] {
    for (int i = 0; i < o.steps; ++i) env->step(space, act_p.data(), out.data());
  });
  const double sps = timed.median;
  spdlog::info("{} | {} envs x {} agents | {:.0f} env steps/s, {:.0f} agent steps/s{}", o.name, o.num_envs,
               spec.num_agents(), sps, sps * spec.num_agents(), timed.spread());
  if (!o.json_path.empty()) {
    std::ofstream j(o.json_path);
    if (!j) throw InputError("--json: cannot write " + o.json_path);
    j << fmt::format("{{\n  \"benchmark\": \"env_steps\",\n  \"gmi_drl_version\": \"{}\",\n  \"device\": \"{}\",\n  "
                     "\"env\": \"{}\",\n  \"num_envs\": {},\n  \"agents\": {},\n  \"steps\": {},\n  "
                     "\"repeats\": {},\n  {},\n  \"agent_steps_per_s\": {:.1f}\n}}\n",
                     GMI_DRL_VERSION, instances::device_description(), o.name, o.num_envs, spec.num_agents(), o.steps,
                     o.repeats, timed.json(), sps * spec.num_agents());
    spdlog::info("wrote {}", o.json_path);
  }
}

}  // namespace

void run_env_bench(const EnvBenchOptions& o) {
  if (o.num_envs < 1) throw InputError("--num-envs: expected an integer >= 1");
  if (o.steps < 1) throw InputError("--steps: expected an integer >= 1");
  if (o.repeats < 1) throw InputError("--repeats: expected an integer >= 1");
  for (int t : o.threads)
    if (t < 1) throw InputError(fmt::format("--threads: {} is not a thread count (>= 1)", t));
  const config::Config cfg = config::env_only(o.name, o.sets, "bench-env", {{"env.num_envs", std::to_string(o.num_envs)}});
  if (envs::is_multi_agent(o.name)) {
    run_multi_agent_env_bench(o, cfg);
    return;
  }
  const bool host = envs::mujoco::is_mujoco(o.name);
  const std::vector<int> threads = host ? o.threads : std::vector<int>{1};
  const int N = o.num_envs;
  struct Point {
    int threads;
    Timed timed;
  };
  std::vector<Point> points;
  ExecSpace space;
  // env.batch_size (or env.async_halves; checked with the config): groups stepped asynchronously.
  const int group = host ? config::env_group_size(cfg.env) : N, groups = (N + group - 1) / group;
  for (int t : threads) {
    envs::EnvOverrides ov = config::env_overrides(cfg);
    ov.mujoco.threads = t;
    auto env = envs::make_vec_env(o.name, N, 1, 0, ov);
    const envs::EnvSpec& s = env->spec();
    const std::size_t od = s.obs_dim, ad = s.act_dim;
    // 64 steps of random actions, cycled.
    const int K = 64;
    std::vector<float> a(std::size_t(K) * N * ad);
    std::mt19937 g(7);
    for (std::size_t j = 0; j < a.size(); ++j) {
      const std::size_t k = j % ad;
      if (s.discrete()) a[j] = float(g() % std::uint32_t(s.num_actions));
      else a[j] = s.act_low[k] + (s.act_high[k] - s.act_low[k]) * std::uniform_real_distribution<float>(0, 1)(g);
    }
    View1<float> act("gmi::bench_env::actions", a.size()), obs("gmi::bench_env::obs", N * od),
        fin("gmi::bench_env::final_obs", N * od), rew("gmi::bench_env::reward", N);
    View1<std::uint8_t> term("gmi::bench_env::terminated", N), trunc("gmi::bench_env::truncated", N);
    Kokkos::deep_copy(act, Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(a.data(), a.size()));
    env->reset_all(space, obs.data());
    const envs::StepOutputs out{obs.data(), fin.data(), rew.data(), term.data(), trunc.data()};
    auto actions = [&](int i) { return act.data() + std::size_t(i % K) * N * ad; };
    // Steps i in [from, to): one batch, or in groups of `group` taken in turn (each group's next
    // step queued as soon as its last one came back, as a PPO rollout does with env.batch_size).
    auto run = [&](int from, int to) {
      if (from >= to) return;
      if (group >= N) {
        for (int i = from; i < to; ++i) env->step(space, actions(i), out);
        return;
      }
      for (int g = 0; g < groups; ++g) env->step_async(space, actions(from), out, g * group, std::min(N, (g + 1) * group));
      for (int i = from; i < to; ++i)
        for (int g = 0; g < groups; ++g) {
          env->step_wait(space);
          if (i + 1 < to) env->step_async(space, actions(i + 1), out, g * group, std::min(N, (g + 1) * group));
        }
    };
    run(0, o.warmup);
    space.fence();
    points.push_back({t, time_runs(o.repeats, o.steps, N, space, [&] { run(0, o.steps); })});
    spdlog::info("{} | {} envs{} | {} thread(s) | {:.0f} env steps/s{}", o.name, N,
                 group < N ? fmt::format(" in groups of {}", group) : "", host ? t : 0, points.back().timed.median,
                 points.back().timed.spread());
  }
  if (!o.json_path.empty()) {
    std::ofstream j(o.json_path);
    if (!j) throw InputError("--json: cannot write " + o.json_path);
    j << "{\n  \"benchmark\": \"env_steps\",\n  \"gmi_drl_version\": \"" << GMI_DRL_VERSION << "\",\n  \"device\": \""
      << instances::device_description() << "\",\n  \"env\": \"" << o.name << "\",\n  \"num_envs\": " << N
      << ",\n  \"batch_size\": " << group << ",\n  \"steps\": " << o.steps << ",\n  \"repeats\": " << o.repeats
      << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < points.size(); ++i)
      j << fmt::format("    {{\"threads\": {}, {}}}{}\n", points[i].threads, points[i].timed.json(),
                       i + 1 < points.size() ? "," : "");
    j << "  ]\n}\n";
    spdlog::info("wrote {}", o.json_path);
  }
}

}  // namespace gmi::tools
