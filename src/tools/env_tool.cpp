#include "src/tools/env_tool.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/envs/registry.hpp"
#include "src/config/config.hpp"
#include "src/io/h5.hpp"

namespace gmi::tools {
namespace {

/// Parse the action file into [T][N][act_dim], checking every value against the action space.
std::vector<float> read_actions(const std::string& path, const envs::EnvSpec& spec, int n,
                                std::size_t& steps) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open actions file");
  const std::size_t per_line = std::size_t(n) * spec.act_dim;
  std::vector<float> all;
  std::string line;
  int lineno = 0;
  steps = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;  // blank or comment
    std::istringstream ls(line);
    std::string tok;
    std::size_t count = 0;
    while (ls >> tok) {
      ++count;
      if (count > per_line) break;
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(tok.c_str(), &end);
      if (errno != 0 || *end != '\0' || !std::isfinite(v))
        throw InputError(fmt::format("{}:{}: '{}' is not a finite number", path, lineno, tok));
      if (spec.discrete() && (v != std::floor(v) || v < 0 || v >= spec.num_actions))
        throw InputError(fmt::format("{}:{}: action '{}' is not an integer in [0, {}) for {}", path,
                                     lineno, tok, spec.num_actions, spec.name));
      all.push_back(float(v));
    }
    if (count != per_line)
      throw InputError(fmt::format(
          "{}:{}: expected {} numbers (num_envs {} x action dimension {}), got {}{}", path, lineno,
          per_line, n, spec.act_dim, count > per_line ? "more" : std::to_string(count), ""));
    ++steps;
  }
  if (steps == 0) throw InputError(path + ": no actions (expected one line per step)");
  return all;
}

}  // namespace

void run_env_tool(const EnvToolOptions& o) {
  config::Overrides extra;
  if (o.max_episode_steps > 0) extra.emplace_back("env.max_episode_steps", std::to_string(o.max_episode_steps));
  const config::Config cfg = config::env_only(o.name, o.sets, "gmi_drl env", extra);
  const envs::EnvOverrides ov = config::env_overrides(cfg);
  const envs::EnvSpec spec = envs::env_spec(o.name, ov);
  if (o.num_envs < 1) throw InputError("--num-envs: expected an integer >= 1");
  std::size_t T = 0;
  const std::vector<float> actions = read_actions(o.actions_file, spec, o.num_envs, T);
  const std::size_t N = o.num_envs, od = spec.obs_dim, ad = spec.act_dim;
  spdlog::info("env {}: {} envs, {} steps, seed {}", spec.name, N, T, o.seed);

  ExecSpace space;
  auto env = envs::make_vec_env(o.name, o.num_envs, std::uint64_t(o.seed), 0, ov);
  View1<float> d_actions("gmi::tools::env::actions", actions.size());
  View1<float> d_obs("gmi::tools::env::obs", (T + 1) * N * od);
  View1<float> d_final("gmi::tools::env::final_obs", T * N * od);
  View1<float> d_reward("gmi::tools::env::reward", T * N);
  View1<std::uint8_t> d_term("gmi::tools::env::terminated", T * N);
  View1<std::uint8_t> d_trunc("gmi::tools::env::truncated", T * N);
  {
    Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(actions.data(),
                                                                                   actions.size());
    Kokkos::deep_copy(space, d_actions, h);
  }
  env->reset_all(space, d_obs.data());
  // Host-simulated environments: the simulator state each step starts from, [T + 1][N][width].
  std::vector<envs::StateArray> sim = env->simulator_state();
  auto record_state = [&] {
    const std::vector<envs::StateArray> now = env->simulator_state();
    for (std::size_t k = 0; k < sim.size(); ++k) {
      auto& to = std::get<std::vector<double>>(sim[k].values);
      const auto& from = std::get<std::vector<double>>(now[k].values);
      to.insert(to.end(), from.begin(), from.end());
    }
  };
  for (std::size_t t = 0; t < T; ++t) {
    envs::StepOutputs out;
    out.next_obs = d_obs.data() + (t + 1) * N * od;
    out.final_obs = d_final.data() + t * N * od;
    out.reward = d_reward.data() + t * N;
    out.terminated = d_term.data() + t * N;
    out.truncated = d_trunc.data() + t * N;
    env->step(space, d_actions.data() + t * N * ad, out);
    if (!sim.empty()) {
      space.fence();
      record_state();
    }
  }
  space.fence();
  auto obs = Kokkos::create_mirror_view_and_copy(HostSpace(), d_obs);
  auto fin = Kokkos::create_mirror_view_and_copy(HostSpace(), d_final);
  auto rew = Kokkos::create_mirror_view_and_copy(HostSpace(), d_reward);
  auto term = Kokkos::create_mirror_view_and_copy(HostSpace(), d_term);
  auto trunc = Kokkos::create_mirror_view_and_copy(HostSpace(), d_trunc);
  // The kernel writes final_obs only where an episode ended; elsewhere the true next observation
  // is the one the agent sees.
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < N; ++i)
      if (!term(t * N + i) && !trunc(t * N + i))
        for (std::size_t k = 0; k < od; ++k) fin((t * N + i) * od + k) = obs(((t + 1) * N + i) * od + k);

  io::H5Handle f = io::create_file(o.out);
  io::write(f, "obs", obs.data(), {T + 1, N, od});
  io::write(f, "final_obs", fin.data(), {T, N, od});
  io::write(f, "reward", rew.data(), {T, N});
  io::write(f, "terminated", term.data(), {T, N});
  io::write(f, "truncated", trunc.data(), {T, N});
  io::write(f, "action", actions.data(), {T, N, ad});
  for (const envs::StateArray& a : sim)
    io::write(f, a.name, std::get<std::vector<double>>(a.values).data(), {T + 1, N, std::size_t(a.width)});
  io::write_attribute(f, "env", spec.name);
  io::write_attribute(f, "seed", std::to_string(o.seed));
  io::write_attribute(f, "max_episode_steps", std::to_string(spec.max_episode_steps));
  spdlog::info("wrote {}", o.out);
}

}  // namespace gmi::tools
