#include "src/tools/env_tool.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/core/host_copy.hpp"
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

/// T steps of uniform valid actions for n envs of `spec` from `seed` ([T][n][act_dim]).
std::vector<float> random_actions(const envs::EnvSpec& spec, int n, std::size_t T, std::int64_t seed) {
  std::mt19937_64 gen{std::uint64_t(seed)};
  std::vector<float> a(T * std::size_t(n) * spec.act_dim);
  for (std::size_t j = 0; j < a.size(); ++j) {
    const int k = int(j % std::size_t(spec.act_dim));
    if (spec.discrete()) a[j] = float(std::uniform_int_distribution<int>(0, spec.num_actions - 1)(gen));
    else a[j] = std::uniform_real_distribution<float>(spec.act_low[k], spec.act_high[k])(gen);
  }
  return a;
}

/// A multi-agent game: per role /<role>/obs [T+1][rows][obs_dim] (after automatic resets),
/// final_obs [T][rows][obs_dim], action, reward [T][rows] float32, terminated, truncated [T][rows]
/// uint8; /state/<array> [T+1][N][width] (the full game state each step starts from); attributes
/// env, seed, roles (JSON list) and params (JSON: every resolved env.* parameter of the game).
void run_multi_agent(const EnvToolOptions& o, const config::Config& cfg) {
  const envs::EnvOverrides ov = config::env_overrides(cfg);
  ExecSpace space;
  auto env = envs::make_multi_agent_env(o.name, o.num_envs, std::uint64_t(o.seed), 0, ov);
  const envs::MultiAgentSpec spec = env->spec();
  const std::size_t T = std::size_t(o.steps), N = std::size_t(o.num_envs), R = spec.roles.size();
  spdlog::info("env {}: {} envs x {} agents, {} steps of random actions, seed {}", spec.name, N, spec.num_agents(), T,
               o.seed);
  struct Role {
    std::size_t rows = 0, od = 0, ad = 1;
    std::vector<float> actions;
    View1<float> act, obs, fin, rew;
    View1<std::uint8_t> term, trunc;
  };
  std::vector<Role> b(R);
  std::mt19937_64 gen{std::uint64_t(o.seed)};
  for (std::size_t r = 0; r < R; ++r) {
    const envs::RoleSpec& rs = spec.roles[r];
    b[r].rows = N * rs.agents;
    b[r].od = rs.obs_dim;
    b[r].ad = std::size_t(rs.act_dim());
    b[r].act = View1<float>("gmi::tools::env::actions", T * b[r].rows * b[r].ad);
    b[r].obs = View1<float>("gmi::tools::env::obs", (T + 1) * b[r].rows * b[r].od);
    b[r].fin = View1<float>("gmi::tools::env::final_obs", T * b[r].rows * b[r].od);
    b[r].rew = View1<float>("gmi::tools::env::reward", T * b[r].rows);
    b[r].term = View1<std::uint8_t>("gmi::tools::env::terminated", T * b[r].rows);
    b[r].trunc = View1<std::uint8_t>("gmi::tools::env::truncated", T * b[r].rows);
  }
  for (std::size_t t = 0; t < T; ++t)  // step by step, role by role, row by row
    for (std::size_t r = 0; r < R; ++r) {
      const std::vector<int> sizes = spec.roles[r].action_sizes();
      for (std::size_t k = 0; k < b[r].rows; ++k)
        for (int n : sizes) b[r].actions.push_back(float(std::uniform_int_distribution<int>(0, n - 1)(gen)));
    }
  for (std::size_t r = 0; r < R; ++r)
    Kokkos::deep_copy(space, b[r].act,
                      Kokkos::View<const float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          b[r].actions.data(), b[r].actions.size()));
  std::vector<float*> obs0(R);
  for (std::size_t r = 0; r < R; ++r) obs0[r] = b[r].obs.data();
  env->reset_all(space, obs0.data());
  std::vector<envs::StateArray> states = env->full_state(space);
  auto append = [&](const std::vector<envs::StateArray>& now) {
    for (std::size_t k = 0; k < states.size(); ++k)
      std::visit(
          [&](auto& to) {
            using V = std::decay_t<decltype(to)>;
            const V& from = std::get<V>(now[k].values);
            to.insert(to.end(), from.begin(), from.end());
          },
          states[k].values);
  };
  for (std::size_t t = 0; t < T; ++t) {
    std::vector<const float*> act(R);
    std::vector<envs::StepOutputs> out(R);
    for (std::size_t r = 0; r < R; ++r) {
      const std::size_t rows = b[r].rows, od = b[r].od;
      act[r] = b[r].act.data() + t * rows * b[r].ad;
      out[r].next_obs = b[r].obs.data() + (t + 1) * rows * od;
      out[r].final_obs = b[r].fin.data() + t * rows * od;
      out[r].reward = b[r].rew.data() + t * rows;
      out[r].terminated = b[r].term.data() + t * rows;
      out[r].truncated = b[r].trunc.data() + t * rows;
    }
    env->step(space, act.data(), out.data());
    append(env->full_state(space));
  }
  space.fence();
  io::H5Handle f = io::create_file(o.out);
  nlohmann::json roles = nlohmann::json::array();
  for (std::size_t r = 0; r < R; ++r) {
    const envs::RoleSpec& rs = spec.roles[r];
    roles.push_back(rs.name);
    const std::size_t rows = b[r].rows, od = b[r].od;
    std::vector<float> obs = to_host(b[r].obs), fin = to_host(b[r].fin), rew = to_host(b[r].rew);
    const std::vector<std::uint8_t> term = to_host(b[r].term), trunc = to_host(b[r].trunc);
    for (std::size_t t = 0; t < T; ++t)  // final_obs is written only where an episode ended
      for (std::size_t k = 0; k < rows; ++k)
        if (!term[t * rows + k] && !trunc[t * rows + k])
          for (std::size_t j = 0; j < od; ++j) fin[(t * rows + k) * od + j] = obs[((t + 1) * rows + k) * od + j];
    io::H5Handle g = io::create_group(f, rs.name);
    io::write(g, "obs", obs.data(), {T + 1, rows, od});
    io::write(g, "final_obs", fin.data(), {T, rows, od});
    if (b[r].ad == 1)
      io::write(g, "action", b[r].actions.data(), {T, rows});
    else
      io::write(g, "action", b[r].actions.data(), {T, rows, b[r].ad});
    io::write(g, "reward", rew.data(), {T, rows});
    io::write(g, "terminated", term.data(), {T, rows});
    io::write(g, "truncated", trunc.data(), {T, rows});
  }
  io::H5Handle g = io::create_group(f, "state");
  for (const envs::StateArray& a : states) {
    const std::vector<hsize_t> dims{T + 1, N, hsize_t(a.width)};
    if (const auto* v = std::get_if<std::vector<float>>(&a.values)) {
      io::write(g, a.name, v->data(), dims);
    } else if (const auto* v = std::get_if<std::vector<int>>(&a.values)) {
      const std::vector<std::int64_t> w(v->begin(), v->end());
      io::write(g, a.name, w.data(), dims);
    } else {
      throw Error("gmi_drl env: state array '" + a.name + "' has an unexpected type");
    }
  }
  // The game's parameters as it resolved them (null keys filled with the game's defaults).
  config::Config resolved = cfg;
  resolved.env.tag = envs::resolve_tag_params(o.name, cfg.env.tag);
  nlohmann::json params = nlohmann::json::object();
  for (const std::string& key : config::tag_keys())
    params[key.substr(4)] = nlohmann::json::parse(config::value_text(resolved, key));
  io::write_attribute(f, "env", spec.name);
  io::write_attribute(f, "seed", std::to_string(o.seed));
  io::write_attribute(f, "roles", roles.dump());
  io::write_attribute(f, "params", params.dump());
  spdlog::info("wrote {}", o.out);
}

}  // namespace

void run_env_tool(const EnvToolOptions& o) {
  if (o.num_envs < 1) throw InputError("--num-envs: expected an integer >= 1");
  if (o.random_actions == !o.actions_file.empty())
    throw InputError("give --actions FILE or --random-actions --steps T (one of them)");
  if (o.random_actions && o.steps < 1) throw InputError("--random-actions: give the number of steps, --steps T");
  if (!o.random_actions && o.steps > 0) throw InputError("--steps: goes with --random-actions (--actions gives one line per step)");
  config::Overrides extra;
  if (o.max_episode_steps > 0) extra.emplace_back("env.max_episode_steps", std::to_string(o.max_episode_steps));
  const config::Config cfg = config::env_only(o.name, o.sets, "gmi_drl env", extra);
  if (envs::is_multi_agent(o.name)) {
    if (!o.random_actions)
      throw InputError("--actions: " + o.name + " is a multi-agent game; give --random-actions --steps T (the "
                       "actions are written to the file)");
    run_multi_agent(o, cfg);
    return;
  }
  const envs::EnvOverrides ov = config::env_overrides(cfg);
  const envs::EnvSpec spec = envs::env_spec(o.name, ov);
  std::size_t T = std::size_t(o.steps);
  const std::vector<float> actions = o.random_actions ? random_actions(spec, o.num_envs, T, o.seed)
                                                      : read_actions(o.actions_file, spec, o.num_envs, T);
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
  io::write_attribute(f, "num_actions", std::to_string(spec.num_actions));
  spdlog::info("wrote {}", o.out);
}

}  // namespace gmi::tools
