#include "src/algos/ppo/multi_agent.hpp"
#include "src/algos/ppo/section.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/deadline.hpp"
#include "mpi/progress.hpp"
#include "src/algos/trainer_state.hpp"

namespace gmi::algos {
namespace {

using Clock = std::chrono::steady_clock;

/// Initial weights of role r: the run's seed, moved by a different odd constant per role, so that
/// two roles with the same shapes do not start from the same weights.
std::uint64_t role_seed(std::uint64_t seed, int r) { return seed + 0x9E3779B97F4A7C15ull * std::uint64_t(r + 1); }

/// Row 0 of role r on the GMI whose first env is `env_offset`, in the role's action-noise stream:
/// the role in bits 48+, then the global (env, agent) row.
std::uint64_t role_rows_offset(std::uint64_t env_offset, int agents, int r) {
  return (std::uint64_t(r + 1) << 48) | (env_offset * std::uint64_t(agents));
}

template <class T>
std::vector<T> slice(const std::vector<T>& v, std::size_t at, std::size_t n, const std::string& what) {
  GMI_REQUIRE(at + n <= v.size(), "multi-agent state: '" + what + "' is shorter than the roles need");
  return std::vector<T>(v.begin() + at, v.begin() + at + n);
}

/// Per step and env, every role's block of values one after another (blocks[r] values each):
/// HostRollout's layout of a game from the roles' own ([steps][N][block_r] each).
template <class V>
std::vector<V> interleave(const std::vector<const std::vector<V>*>& parts, const std::vector<std::size_t>& blocks,
                          std::size_t steps, std::size_t N) {
  std::size_t width = 0;
  for (std::size_t b : blocks) width += b;
  for (std::size_t r = 0; r < parts.size(); ++r)
    GMI_REQUIRE(parts[r]->size() == steps * N * blocks[r], "multi-agent rollout: a role's part of the wrong size");
  std::vector<V> out(steps * N * width);
  V* o = out.data();
  for (std::size_t j = 0; j < steps * N; ++j)
    for (std::size_t r = 0; r < parts.size(); ++r) {
      const V* from = parts[r]->data() + j * blocks[r];
      o = std::copy(from, from + blocks[r], o);
    }
  return out;
}

/// interleave's inverse: each role's values ([steps][N][block_r]) from `in`.
template <class V>
std::vector<std::vector<V>> deinterleave(const std::vector<V>& in, const std::vector<std::size_t>& blocks,
                                         std::size_t steps, std::size_t N, const std::string& what) {
  std::size_t width = 0;
  for (std::size_t b : blocks) width += b;
  GMI_REQUIRE(in.size() == steps * N * width,
              fmt::format("multi-agent PPO: {} has {} values (expected {} steps x {} envs x {})", what, in.size(),
                          steps, N, width));
  std::vector<std::vector<V>> parts(blocks.size());
  for (std::size_t r = 0; r < blocks.size(); ++r) parts[r].reserve(steps * N * blocks[r]);
  const V* p = in.data();
  for (std::size_t j = 0; j < steps * N; ++j)
    for (std::size_t r = 0; r < blocks.size(); ++r) parts[r].insert(parts[r].end(), p, p + blocks[r]), p += blocks[r];
  return parts;
}

}  // namespace

envs::EnvSpec MultiAgentPpoTrainer::role_spec(const envs::MultiAgentSpec& g, int r) {
  const envs::RoleSpec& role = g.roles[r];
  envs::EnvSpec s;
  s.name = g.name + ":" + role.name;
  s.obs_dim = role.obs_dim;
  s.act_dim = role.act_dim();
  s.num_actions = role.num_actions;
  s.action_nvec = role.action_nvec;
  s.obs_low.assign(role.obs_dim, -INFINITY);
  s.obs_high.assign(role.obs_dim, INFINITY);
  s.max_episode_steps = g.max_episode_steps;
  return s;
}

std::size_t MultiAgentPpoTrainer::num_params(const config::Config& cfg) {
  const envs::MultiAgentSpec g = envs::multi_agent_spec(cfg.env.name, config::env_overrides(cfg));
  std::size_t n = 0;
  for (int r = 0; r < int(g.roles.size()); ++r) n += nn::ActorCriticLayout(policy_spec(cfg, role_spec(g, r))).num_params;
  return n;
}

MemoryNeeds MultiAgentPpoTrainer::memory_needs(const config::Config& cfg) {
  const envs::MultiAgentSpec g = envs::multi_agent_spec(cfg.env.name, config::env_overrides(cfg));
  MemoryNeeds m;
  m.drivers = {"env.num_envs", "ppo.num_steps", "env.num_taggers", "env.num_runners", "policy.actor_hidden",
               "policy.critic_hidden"};
  for (int r = 0; r < int(g.roles.size()); ++r) {
    const MemoryNeeds role = PpoTrainer::memory_needs(cfg, role_spec(g, r), cfg.env.num_envs * g.roles[r].agents);
    m.device_bytes += role.device_bytes;
    m.host_bytes += role.host_bytes;
  }
  m.device_bytes += double(cfg.env.num_envs) * g.num_agents() * 16 * 8;  // the game's state (generous)
  return m;
}

MultiAgentPpoTrainer::MultiAgentPpoTrainer(const config::Config& cfg, std::uint64_t env_offset,
                                           mpi::GradientReducer* reducer, GamePtr game)
    : cfg_(cfg), N_(cfg.env.num_envs) {
  const std::uint64_t seed = std::uint64_t(cfg.train.seed);
  env_ = game ? std::move(game) : envs::make_multi_agent_env(cfg.env.name, N_, seed, env_offset, config::env_overrides(cfg));
  GMI_REQUIRE(env_->num_envs() == N_, "a trainer was given a game of another number of envs");
  game_ = env_->spec();
  const int R = int(game_.roles.size());
  for (int r = 0; r < R; ++r) {
    const int agents = game_.roles[r].agents;
    roles_.push_back(std::make_unique<PpoTrainer>(cfg, role_spec(game_, r), N_ * agents,
                                                  role_rows_offset(env_offset, agents, r), role_seed(seed, r), reducer));
    params_.push_back(roles_.back()->layout().num_params);
    const auto& frozen = cfg.section<PpoConfig>().frozen_roles;
    if (std::find(frozen.begin(), frozen.end(), game_.roles[r].name) != frozen.end()) roles_.back()->freeze();
  }
  spec_ = role_spec(game_, 0);
  spec_.name = game_.name;
  for (const envs::RoleSpec& role : game_.roles) spec_.reward_terms.push_back(role.name + "_return");
  for (const std::string& stat : game_.stat_terms) spec_.reward_terms.push_back(stat);
  std::vector<float*> obs;
  for (auto& role : roles_) obs.push_back(role->obs_at(0));
  env_->reset_all(space_, obs.data());
  space_.fence();
}

std::int64_t MultiAgentPpoTrainer::updates() const {
  std::int64_t n = 0;
  for (const auto& role : roles_) n += role->updates();
  return n;
}

std::vector<std::string> MultiAgentPpoTrainer::loss_columns() const {
  std::vector<std::string> c;
  for (std::size_t r = 0; r < roles_.size(); ++r)
    for (const std::string& name : roles_[r]->loss_columns()) c.push_back(game_.roles[r].name + "_" + name);
  return c;
}

std::string MultiAgentPpoTrainer::describe() const {
  std::string roles;
  for (std::size_t r = 0; r < roles_.size(); ++r) {
    const envs::RoleSpec& role = game_.roles[r];
    const std::string actions = role.action_nvec.empty() ? fmt::format("{} actions", role.num_actions)
                                                         : fmt::format("MultiDiscrete{} actions", role.action_nvec);
    roles += fmt::format("{}{} x {} (obs {}, {}, policy {} params{})", r ? ", " : "", role.name, role.agents,
                         role.obs_dim, actions, params_[r], roles_[r]->frozen() ? ", frozen" : "");
  }
  return fmt::format("ppo, multi-agent ({} agents per env; one policy per role: {}) | {} envs x {} steps per GMI, {} "
                     "minibatches, {} epochs | {} kernels",
                     game_.num_agents(), roles, N_, cfg_.section<PpoConfig>().num_steps, cfg_.section<PpoConfig>().num_minibatches,
                     cfg_.section<PpoConfig>().update_epochs, kernels());
}

std::string MultiAgentPpoTrainer::kernels() const {
  const std::string first = roles_.front()->kernels();
  std::string out;
  bool same = true;
  for (std::size_t r = 0; r < roles_.size(); ++r) {
    const std::string k = roles_[r]->kernels();
    same = same && k == first;
    out += (r ? "; " : "") + game_.roles[r].name + ": " + k;
  }
  return same ? first : out;
}

std::string MultiAgentPpoTrainer::kernel_trials() const {
  std::string out;
  for (std::size_t r = 0; r < roles_.size(); ++r) {
    const std::string t = roles_[r]->kernel_trials();
    if (!t.empty()) out += (out.empty() ? "" : " | ") + game_.roles[r].name + ": " + roles_[r]->kernels() + ", " + t;
  }
  return out;
}

std::vector<float> MultiAgentPpoTrainer::params_host() const {
  std::vector<float> all;
  for (const auto& role : roles_) {
    const std::vector<float> p = role->params_host();
    all.insert(all.end(), p.begin(), p.end());
  }
  return all;
}

void MultiAgentPpoTrainer::inject_nonfinite_gradient() {
  for (auto& role : roles_) role->inject_nonfinite_gradient();
}

IterationMetrics MultiAgentPpoTrainer::iterate() {
  const auto t0 = Clock::now();
  for (auto& role : roles_) role->begin_iteration();
  rollout_steps();
  const double time_rollout = std::chrono::duration<double>(Clock::now() - t0).count();
  return learn_roles(env_->take_episode_stats(space_), time_rollout);
}

void MultiAgentPpoTrainer::rollout_steps() {
  const int R = int(roles_.size()), T = cfg_.section<PpoConfig>().num_steps;
  mpi::progress().phase("rollout");
  std::vector<const float*> actions(R);
  std::vector<envs::StepOutputs> outs(R);
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      roles_[r]->act(t, 0, N_ * game_.roles[r].agents);
      actions[r] = roles_[r]->actions_at(t);
      outs[r] = roles_[r]->step_outputs(t);
    }
    env_->step(space_, actions.data(), outs.data());
    mpi::progress().beat();
  }
  for (auto& role : roles_) role->finish_rollout();
  space_.fence();
}

IterationMetrics MultiAgentPpoTrainer::learn_roles(const std::vector<envs::EpisodeStats>& stats, double time_rollout) {
  GMI_REQUIRE(stats.size() == roles_.size(), "multi-agent PPO: episode statistics of another number of roles");
  const int R = int(roles_.size());
  IterationMetrics m;
  m.time_rollout = time_rollout;
  double norms = 0;
  int with_norm = 0;
  for (int r = 0; r < R; ++r) {
    const IterationMetrics mr = roles_[r]->learn(stats[r], time_rollout);
    m.losses.insert(m.losses.end(), mr.losses.begin(), mr.losses.end());
    if (std::isfinite(mr.grad_norm)) norms += mr.grad_norm, ++with_norm;
    if (r == 0) m.learning_rate = mr.learning_rate, m.iteration = mr.iteration;
    m.updates += mr.updates;
    m.skipped_updates += mr.skipped_updates;
    m.nonfinite_streak = std::max(m.nonfinite_streak, mr.nonfinite_streak);
    m.time_update += mr.time_update;
  }
  m.grad_norm = with_norm > 0 ? norms / with_norm : std::nan("");
  // Environment episodes: the game's statistics come per (agent, episode) pair of each role.
  const double a0 = game_.roles[0].agents;
  m.episodes = stats[0].count / a0;
  m.episode_length_sum = stats[0].length_sum / a0;
  m.episode_return_sum = stats[0].return_sum / a0;
  for (int r = 0; r < R; ++r) m.episode_term_sums.push_back(stats[r].return_sum / game_.roles[r].agents);
  for (std::size_t k = 0; k < game_.stat_terms.size(); ++k) m.episode_term_sums.push_back(stats[0].term_sums[k] / a0);
  return m;
}

TrainerState MultiAgentPpoTrainer::save_state() const {
  TrainerState s;
  const int R = int(roles_.size());
  std::vector<TrainerState> rs;
  for (const auto& role : roles_) rs.push_back(role->save_state());
  s.iteration = rs[0].iteration;
  s.adam_step = rs[0].adam_step;
  for (int r = 0; r < R; ++r) {
    const std::string name = game_.roles[r].name;
    s.params.insert(s.params.end(), rs[r].params.begin(), rs[r].params.end());
    s.adam_m.insert(s.adam_m.end(), rs[r].adam_m.begin(), rs[r].adam_m.end());
    s.adam_v.insert(s.adam_v.end(), rs[r].adam_v.begin(), rs[r].adam_v.end());
    s.counters.emplace_back(name + "_adam_step", rs[r].adam_step);
    s.counters.emplace_back(name + "_nonfinite_streak", rs[r].nonfinite_streak);
    for (const auto& [counter, value] : rs[r].counters) s.counters.emplace_back(name + "_" + counter, value);
    s.tensors64.emplace_back(name + "_obs_rms", rs[r].obs_rms);
    s.tensors64.emplace_back(name + "_ret_rms", rs[r].ret_rms);
    s.nonfinite_streak = std::max(s.nonfinite_streak, rs[r].nonfinite_streak);
  }
  // Observations per env: each role's agents' rows one after the other.
  std::vector<const std::vector<float>*> obs;
  for (const TrainerState& role : rs) obs.push_back(&role.obs);
  s.obs = interleave(obs, obs_blocks(), 1, std::size_t(N_));
  s.env = env_->save_state(space_);
  for (int r = 0; r < R; ++r) {
    envs::StateArray a;
    a.name = game_.roles[r].name + "_return_acc";
    a.values = rs[r].return_acc;
    a.width = game_.roles[r].agents;
    s.env.push_back(std::move(a));
  }
  s.rng = rs[0].rng;
  return s;
}

TrainerState MultiAgentPpoTrainer::role_state(const TrainerState& s, int r, bool own) const {
  const std::string name = game_.roles[r].name;
  std::size_t at = 0;
  for (int q = 0; q < r; ++q) at += params_[q];
  std::size_t total = 0;
  for (std::size_t n : params_) total += n;
  GMI_REQUIRE(s.params.size() == total && s.adam_m.size() == total && s.adam_v.size() == total,
              "multi-agent state: " + std::to_string(s.params.size()) + " parameters where the roles' policies have " +
                  std::to_string(total));
  TrainerState t;
  t.iteration = s.iteration;
  t.adam_step = s.counter(name + "_adam_step");
  t.nonfinite_streak = int(s.counter(name + "_nonfinite_streak"));
  for (const auto& [counter, value] : s.counters)  // the role's own (its kernel_paths)
    if (counter.rfind(name + "_", 0) == 0) t.counters.emplace_back(counter.substr(name.size() + 1), value);
  t.params = slice(s.params, at, params_[r], "params");
  t.adam_m = slice(s.adam_m, at, params_[r], "adam_m");
  t.adam_v = slice(s.adam_v, at, params_[r], "adam_v");
  t.obs_rms = required_tensor64(s, name + "_obs_rms", kAnySize, "multi-agent");  // sizes: the role's load checks
  t.ret_rms = required_tensor64(s, name + "_ret_rms", kAnySize, "multi-agent");
  if (!own) return t;
  t.obs = std::move(deinterleave(s.obs, obs_blocks(), 1, std::size_t(N_), "the state's observations")[std::size_t(r)]);
  for (const envs::StateArray& a : s.env)
    if (a.name == name + "_return_acc") t.return_acc = std::get<std::vector<float>>(a.values);
  GMI_REQUIRE(t.return_acc.size() == std::size_t(N_) * game_.roles[r].agents,
              "multi-agent state: '" + name + "_return_acc' missing or of the wrong size");
  return t;
}

void MultiAgentPpoTrainer::load_state(const TrainerState& s) {
  for (int r = 0; r < int(roles_.size()); ++r) roles_[r]->load_state(role_state(s, r, true));
  // The game's arrays: s.env without the roles' return accumulators (save_state appends them).
  std::vector<envs::StateArray> game;
  for (const envs::StateArray& a : s.env) {
    bool role_array = false;
    for (const envs::RoleSpec& role : game_.roles) role_array = role_array || a.name == role.name + "_return_acc";
    if (!role_array) game.push_back(a);
  }
  env_->load_state(space_, game);
  space_.fence();
}

void MultiAgentPpoTrainer::load_shared_state(const TrainerState& s, std::uint64_t first_episode) {
  std::vector<float*> obs;
  for (int r = 0; r < int(roles_.size()); ++r) {
    roles_[r]->load_shared_state(role_state(s, r, false), first_episode);
    obs.push_back(roles_[r]->obs_at(0));
  }
  env_->reset_all(space_, obs.data(), first_episode);
  space_.fence();
}

void MultiAgentPpoTrainer::prepare_serving(int) {
  for (auto& role : roles_) role->freeze();
}

void MultiAgentPpoTrainer::serve_rollout(std::int64_t index, HostRollout& out) {
  const int R = int(roles_.size());
  std::vector<HostRollout> parts(static_cast<std::size_t>(R));
  serve_device_rollout(index, out, [&] {
    for (int r = 0; r < R; ++r) roles_[r]->rollout_to_host(parts[std::size_t(r)]);
  });
  const std::size_t N = std::size_t(N_), T = std::size_t(cfg_.section<PpoConfig>().num_steps);
  auto per_role = [&](auto HostRollout::*member, auto width, std::size_t steps) {
    using V = typename std::decay_t<decltype(out.*member)>::value_type;
    std::vector<const std::vector<V>*> in;
    std::vector<std::size_t> blocks;
    for (int r = 0; r < R; ++r) in.push_back(&(parts[std::size_t(r)].*member)), blocks.push_back(block(r, width(r)));
    out.*member = interleave(in, blocks, steps, N);
  };
  auto obs = [&](int r) { return game_.roles[r].obs_dim; };
  auto one = [](int) { return 1; };
  per_role(&HostRollout::obs, obs, T + 1);
  per_role(&HostRollout::final_obs, obs, T);
  per_role(&HostRollout::actions, [&](int r) { return game_.roles[r].act_dim(); }, T);
  for (auto member : {&HostRollout::logp, &HostRollout::values, &HostRollout::rewards}) per_role(member, one, T);
  for (auto member : {&HostRollout::terminated, &HostRollout::truncated}) per_role(member, one, T);
}

IterationMetrics MultiAgentPpoTrainer::learn_rollout(const HostRollout& in, double time_rollout) {
  const int R = int(roles_.size());
  const std::size_t N = std::size_t(N_), T = std::size_t(cfg_.section<PpoConfig>().num_steps);
  std::vector<HostRollout> parts(static_cast<std::size_t>(R));
  auto per_role = [&](auto HostRollout::*member, auto width, std::size_t steps, const char* what) {
    std::vector<std::size_t> blocks;
    for (int r = 0; r < R; ++r) blocks.push_back(block(r, width(r)));
    auto split = deinterleave(in.*member, blocks, steps, N, what);
    for (int r = 0; r < R; ++r) parts[std::size_t(r)].*member = std::move(split[std::size_t(r)]);
  };
  auto obs = [&](int r) { return game_.roles[r].obs_dim; };
  auto one = [](int) { return 1; };
  per_role(&HostRollout::obs, obs, T + 1, "a served rollout's observations");
  per_role(&HostRollout::final_obs, obs, T, "a served rollout's final observations");
  per_role(&HostRollout::actions, [&](int r) { return game_.roles[r].act_dim(); }, T, "a served rollout's actions");
  per_role(&HostRollout::logp, one, T, "a served rollout's log-probabilities");
  per_role(&HostRollout::values, one, T, "a served rollout's values");
  per_role(&HostRollout::rewards, one, T, "a served rollout's rewards");
  per_role(&HostRollout::terminated, one, T, "a served rollout's terminations");
  per_role(&HostRollout::truncated, one, T, "a served rollout's truncations");
  for (int r = 0; r < R; ++r) roles_[r]->rollout_from_host(parts[std::size_t(r)]);
  return learn_roles(in.role_episodes, time_rollout);
}

std::optional<DeviceRollout> MultiAgentPpoTrainer::device_rollout() {
  DeviceRollout d{space_, {}};
  for (const auto& role : roles_) {
    const std::vector<DeviceRollout::Array> a = role->rollout_arrays();
    d.arrays.insert(d.arrays.end(), a.begin(), a.end());
  }
  return d;
}

void MultiAgentPpoTrainer::serve_device_rollout(std::int64_t index, HostRollout& out,
                                                const std::function<void()>& pack) {
  for (auto& role : roles_) role->begin_served_rollout(index);
  rollout_steps();
  out.role_episodes = env_->take_episode_stats(space_);
  pack();
  for (auto& role : roles_) role->end_served_rollout();
}

void MultiAgentPpoTrainer::begin_device_rollout() {
  for (auto& role : roles_) role->begin_iteration();
}

IterationMetrics MultiAgentPpoTrainer::learn_device_rollout(const HostRollout& in, double time_rollout) {
  for (auto& role : roles_) role->finish_rollout();
  return learn_roles(in.role_episodes, time_rollout);
}

void MultiAgentPpoTrainer::set_policy(const std::vector<float>& params, const std::vector<double>& acting) {
  std::size_t p = 0, a = 0;
  for (auto& role : roles_) {
    const std::size_t np = role->layout().num_params, na = role->acting_state_size();
    GMI_REQUIRE(p + np <= params.size() && a + na <= acting.size(), "multi-agent PPO: published weights too short");
    role->set_policy(std::vector<float>(params.begin() + std::ptrdiff_t(p), params.begin() + std::ptrdiff_t(p + np)),
                     std::vector<double>(acting.begin() + std::ptrdiff_t(a), acting.begin() + std::ptrdiff_t(a + na)));
    p += np, a += na;
  }
  GMI_REQUIRE(p == params.size() && a == acting.size(), "multi-agent PPO: published weights of another size");
}

std::vector<double> MultiAgentPpoTrainer::acting_state_host() const {
  std::vector<double> all;
  for (const auto& role : roles_) {
    const std::vector<double> s = role->acting_state_host();
    all.insert(all.end(), s.begin(), s.end());
  }
  return all;
}

std::vector<float> MultiAgentPpoTrainer::start_obs_host() const {
  std::vector<std::vector<float>> obs;
  std::vector<const std::vector<float>*> in;
  for (const auto& role : roles_) obs.push_back(role->start_obs_host());
  for (const std::vector<float>& o : obs) in.push_back(&o);
  return interleave(in, obs_blocks(), 1, std::size_t(N_));
}

void MultiAgentPpoTrainer::set_start_obs(const std::vector<float>& obs) {
  const auto parts = deinterleave(obs, obs_blocks(), 1, std::size_t(N_), "the observations a rollout starts from");
  for (int r = 0; r < int(roles_.size()); ++r) roles_[r]->set_start_obs(parts[std::size_t(r)]);
}

std::vector<envs::StateArray> MultiAgentPpoTrainer::env_state() const {
  space_.fence();
  return env_->save_state(space_);
}

void MultiAgentPpoTrainer::set_env_state(const std::vector<envs::StateArray>& state) {
  env_->load_state(space_, state);
  space_.fence();
}

}  // namespace gmi::algos
