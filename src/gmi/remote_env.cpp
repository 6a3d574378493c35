#include "src/gmi/remote_env.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <map>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/progress.hpp"
#include "src/gmi/state_bytes.hpp"

namespace gmi::instances {
namespace {

/// Blobs of this module on MPI_COMM_WORLD (async training uses 7420-7422; nothing else of a
/// training run uses it point to point).
constexpr int kBlobTag = 7419;

template <class T>
using HostPtr = Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using DevPtr = Kokkos::View<T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// n values from host bytes into device memory (queued on `space`).
template <class T>
void up(const ExecSpace& space, T* dev, const std::byte* host, std::size_t n) {
  Kokkos::deep_copy(space, DevPtr<T>(dev, n), HostPtr<const T>(reinterpret_cast<const T*>(host), n));
}
template <class T>
void down(const ExecSpace& space, T* host, const T* dev, std::size_t n) {
  Kokkos::deep_copy(space, HostPtr<T>(host, n), DevPtr<const T>(dev, n));
}

}  // namespace

// ---- row groups ----

std::vector<RowGroup> row_groups(const config::Config& cfg, int sim_envs) {
  if (envs::is_multi_agent(cfg.env.name)) {
    std::vector<RowGroup> g;
    for (const envs::RoleSpec& r : envs::multi_agent_spec(cfg.env.name, config::env_overrides(cfg)).roles)
      g.push_back({r.name + ".", sim_envs * r.agents, r.obs_dim, r.act_dim()});
    return g;
  }
  const envs::EnvSpec s = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  return {{"", sim_envs, s.obs_dim, s.act_dim}};
}

// ---- SimulatorLinks ----

SimulatorLinks::SimulatorLinks(const RolePlan& plan, int me, const config::Config& cfg, std::vector<RowGroup> groups,
                               int sim_envs)
    : E_(sim_envs), groups_(std::move(groups)) {
  const std::map<int, std::vector<int>> served = mpi::producers_by_consumer(plan.routes);  // trainer -> simulators
  for (const auto& [t, v] : served) {
    if (t == me) sims_ = v;
    const auto at = std::find(v.begin(), v.end(), me);
    if (at != v.end()) trainer_ = t, position_ = int(at - v.begin());
  }
  const mpi::ChannelOptions flow{cfg.channels.max_in_flight};
  std::vector<mpi::PackageType> command = {{"command", 1, 16, 8}};
  std::vector<mpi::PackageType> types;
  for (const RowGroup& g : groups_) {
    command.push_back({g.prefix + "action", g.rows, 4 * g.act_dim, 4});
    no_actions_.emplace_back(std::size_t(g.rows) * 4 * std::size_t(g.act_dim), std::byte{0});
    for (const mpi::PackageType& t : std::vector<mpi::PackageType>{{g.prefix + "next_obs", g.rows, 4 * g.obs_dim, 4},
                                                                   {g.prefix + "final_obs", g.rows, 4 * g.obs_dim, 4},
                                                                   {g.prefix + "reward", g.rows, 4, 4},
                                                                   {g.prefix + "terminated", g.rows, 1, 1},
                                                                   {g.prefix + "truncated", g.rows, 1, 1}})
      types.push_back(t);
  }
  for (const std::vector<mpi::Route>& routes : mpi::reverse_routes(plan.routes))
    commands_.push_back(std::make_unique<mpi::ExperienceChannels>(MPI_COMM_WORLD, routes, command,
                                                                  mpi::make_plan("single", command, 1, 1, {}), flow));
  // A trainer takes every step as it comes: one step per message, grouped by channels.plan.
  const mpi::TransferCost cost = mpi::measure_transfer_cost(MPI_COMM_WORLD, plan.routes, 5);
  outputs_ = std::make_unique<mpi::ExperienceChannels>(
      MPI_COMM_WORLD, plan.routes, types, mpi::make_plan(cfg.channels.plan, types, 1, 1, cost, "channels.plan"), flow);
}

SimulatorLinks::~SimulatorLinks() = default;

std::string SimulatorLinks::plan_text() const { return outputs_->plan().text(outputs_->types()); }

void SimulatorLinks::command(int op, std::int64_t arg) {
  for (int k = 0; k < int(sims_.size()); ++k) command_one(k, op, arg);
}

void SimulatorLinks::command_one(int k, int op, std::int64_t arg, const std::vector<const float*>& actions) {
  const std::int64_t row[2] = {op, arg};
  std::vector<const void*> p = {row};
  for (std::size_t g = 0; g < groups_.size(); ++g)
    p.push_back(actions.empty() ? static_cast<const void*>(no_actions_[g].data()) : actions[g]);
  commands_[std::size_t(k)]->push(p);
}

std::vector<const std::byte*> SimulatorLinks::outputs(int k) { return outputs_->next(std::size_t(k)); }

SimulatorLinks::Command SimulatorLinks::take() {
  const std::vector<const std::byte*> p = commands_[std::size_t(position_)]->next(0);
  Command c;
  std::int64_t row[2];
  std::memcpy(row, p[0], sizeof row);
  c.op = int(row[0]), c.arg = row[1];
  for (std::size_t g = 0; g < groups_.size(); ++g) c.actions.push_back(reinterpret_cast<const float*>(p[1 + g]));
  return c;
}

void SimulatorLinks::send_outputs(const std::vector<const void*>& packages) { outputs_->push(packages); }

void SimulatorLinks::send_blob(int to, const std::vector<std::byte>& data, const std::string& what) {
  mpi::send_bytes(MPI_COMM_WORLD, to, kBlobTag, data, what);
}

std::vector<std::byte> SimulatorLinks::receive_blob(int from, const std::string& what) {
  return mpi::receive_bytes(MPI_COMM_WORLD, from, kBlobTag, what);
}

namespace {

/// Simulator k's outputs of row group g into `out` (its rows [k rows_g, (k + 1) rows_g)).
void take_outputs(const ExecSpace& space, SimulatorLinks& links, const std::vector<const std::byte*>& p, int k,
                  std::size_t g, const envs::StepOutputs& out) {
  const RowGroup& G = links.groups()[g];
  const std::size_t n = std::size_t(G.rows), od = std::size_t(G.obs_dim), r0 = std::size_t(k) * n;
  const std::byte* const* q = p.data() + 5 * g;
  if (out.next_obs) up(space, out.next_obs + r0 * od, q[0], n * od);
  if (out.final_obs) up(space, out.final_obs + r0 * od, q[1], n * od);
  if (out.reward) up(space, out.reward + r0, q[2], n);
  if (out.terminated) up(space, out.terminated + r0, q[3], n);
  if (out.truncated) up(space, out.truncated + r0, q[4], n);
}

/// The episode statistics of every simulator: per row group {return, length, count, terms...}.
std::vector<envs::EpisodeStats> gather_stats(SimulatorLinks& links) {
  links.command(SimulatorLinks::kStats, 0);
  std::vector<envs::EpisodeStats> s;
  for (int sim : links.simulators()) {
    const std::vector<std::byte> b = links.receive_blob(sim, "the episode statistics of simulator GMI " + std::to_string(sim));
    std::vector<double> v(b.size() / sizeof(double));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(double));
    // [groups, terms, then per group: return, length, count, terms...]
    GMI_REQUIRE(v.size() >= 2, "episode statistics from a simulator GMI are truncated");
    const std::size_t groups = std::size_t(v[0]), terms = std::size_t(v[1]);
    GMI_REQUIRE(v.size() == 2 + groups * (3 + terms), "episode statistics from a simulator GMI are truncated");
    s.resize(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      const double* x = v.data() + 2 + g * (3 + terms);
      s[g].return_sum += x[0];
      s[g].length_sum += x[1];
      s[g].count += x[2];
      s[g].term_sums.resize(terms, 0.0);
      for (std::size_t t = 0; t < terms; ++t) s[g].term_sums[t] += x[3 + t];
    }
  }
  return s;
}

std::vector<envs::StateArray> gather_state(SimulatorLinks& links) {
  links.command(SimulatorLinks::kSave, 0);
  std::vector<envs::StateArray> all;
  for (int sim : links.simulators())
    join_part(all, from_bytes(links.receive_blob(sim, "the environment state of simulator GMI " + std::to_string(sim))));
  return all;
}

void scatter_state(SimulatorLinks& links, const std::vector<envs::StateArray>& state) {
  const std::size_t S = links.simulators().size();
  for (std::size_t k = 0; k < S; ++k) part_of(state, k, S);  // every array splits, before any command
  links.command(SimulatorLinks::kLoad, 0);
  for (std::size_t k = 0; k < S; ++k) {
    const int sim = links.simulators()[k];
    links.send_blob(sim, to_bytes(part_of(state, k, S)), "the environment state for simulator GMI " + std::to_string(sim));
  }
}

}  // namespace

// ---- RemoteVecEnv ----

RemoteVecEnv::RemoteVecEnv(std::shared_ptr<SimulatorLinks> links, const envs::EnvSpec& spec) : links_(std::move(links)) {
  GMI_REQUIRE(links_->is_trainer() && links_->groups().size() == 1, "RemoteVecEnv on a GMI without simulators");
  spec_ = spec;
  // Host memory per env: the staged actions and outputs (and what tells a trainer that these envs
  // do not step on its device, so it captures no rollout around them).
  spec_.host_bytes_per_env = std::max(spec_.host_bytes_per_env, 4.0 * (2 * spec_.obs_dim + spec_.act_dim + 1) + 2);
  num_envs_ = int(links_->simulators().size()) * links_->sim_envs();
  actions_.resize(std::size_t(num_envs_) * std::size_t(spec_.act_dim));
}

void RemoteVecEnv::reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode) {
  links_->command(SimulatorLinks::kReset, std::int64_t(first_episode));
  for (int k = 0; k < int(links_->simulators().size()); ++k)
    take_outputs(space, *links_, links_->outputs(k), k, 0, envs::StepOutputs{obs});
  space.fence();
}

void RemoteVecEnv::step(const ExecSpace& space, const float* actions, const envs::StepOutputs& out) {
  step_async(space, actions, out, 0, num_envs_);
  step_wait(space);
}

void RemoteVecEnv::step_async(const ExecSpace& space, const float* actions, const envs::StepOutputs& out, int lo,
                              int hi) {
  const int E = links_->sim_envs();
  GMI_REQUIRE(lo >= 0 && lo < hi && hi <= num_envs_ && lo % E == 0 && hi % E == 0,
              fmt::format("envs [{}, {}) of a trainer under e-at are not whole simulator GMIs of {} envs", lo, hi, E));
  const std::size_t ad = std::size_t(spec_.act_dim);
  down(space, actions_.data() + std::size_t(lo) * ad, actions + std::size_t(lo) * ad, std::size_t(hi - lo) * ad);
  space.fence();  // the actions are read before this returns
  for (int k = lo / E; k < hi / E; ++k)
    links_->command_one(k, SimulatorLinks::kStep, 0, {actions_.data() + std::size_t(k) * std::size_t(E) * ad});
  queued_.push_back({out, lo, hi});
}

void RemoteVecEnv::step_wait(const ExecSpace& space) {
  GMI_REQUIRE(!queued_.empty(), "step_wait without a step queued");
  const Queued q = queued_.front();
  queued_.pop_front();
  const int E = links_->sim_envs();
  for (int k = q.lo / E; k < q.hi / E; ++k) take_outputs(space, *links_, links_->outputs(k), k, 0, q.out);
  space.fence();  // before the next step hands the received buffers back
}

envs::EpisodeStats RemoteVecEnv::take_episode_stats(const ExecSpace&) {
  std::vector<envs::EpisodeStats> s = gather_stats(*links_);
  return s.empty() ? envs::EpisodeStats{} : s[0];
}

std::vector<envs::StateArray> RemoteVecEnv::save_state(const ExecSpace&) const { return gather_state(*links_); }

void RemoteVecEnv::load_state(const ExecSpace&, const std::vector<envs::StateArray>& state) {
  scatter_state(*links_, state);
}

// ---- RemoteMultiAgentVecEnv ----

RemoteMultiAgentVecEnv::RemoteMultiAgentVecEnv(std::shared_ptr<SimulatorLinks> links, const envs::MultiAgentSpec& spec)
    : links_(std::move(links)) {
  GMI_REQUIRE(links_->is_trainer() && links_->groups().size() == spec.roles.size(),
              "RemoteMultiAgentVecEnv on a GMI without simulators");
  spec_ = spec;
  num_envs_ = int(links_->simulators().size()) * links_->sim_envs();
  for (const RowGroup& g : links_->groups())
    actions_.emplace_back(links_->simulators().size() * std::size_t(g.rows) * std::size_t(g.act_dim));
}

void RemoteMultiAgentVecEnv::reset_all(const ExecSpace& space, float* const* obs_per_role, std::uint64_t first_episode) {
  links_->command(SimulatorLinks::kReset, std::int64_t(first_episode));
  for (int k = 0; k < int(links_->simulators().size()); ++k) {
    const std::vector<const std::byte*> p = links_->outputs(k);
    for (std::size_t g = 0; g < links_->groups().size(); ++g)
      take_outputs(space, *links_, p, k, g, envs::StepOutputs{obs_per_role[g]});
  }
  space.fence();
}

void RemoteMultiAgentVecEnv::step(const ExecSpace& space, const float* const* actions_per_role,
                                  const envs::StepOutputs* out_per_role) {
  const std::vector<RowGroup>& G = links_->groups();
  for (std::size_t g = 0; g < G.size(); ++g) down(space, actions_[g].data(), actions_per_role[g], actions_[g].size());
  space.fence();
  for (int k = 0; k < int(links_->simulators().size()); ++k) {
    std::vector<const float*> a;
    for (std::size_t g = 0; g < G.size(); ++g)
      a.push_back(actions_[g].data() + std::size_t(k) * std::size_t(G[g].rows) * std::size_t(G[g].act_dim));
    links_->command_one(k, SimulatorLinks::kStep, 0, a);
  }
  for (int k = 0; k < int(links_->simulators().size()); ++k) {
    const std::vector<const std::byte*> p = links_->outputs(k);
    for (std::size_t g = 0; g < G.size(); ++g) take_outputs(space, *links_, p, k, g, out_per_role[g]);
  }
  space.fence();
}

std::vector<envs::EpisodeStats> RemoteMultiAgentVecEnv::take_episode_stats(const ExecSpace&) {
  return gather_stats(*links_);
}

std::vector<envs::StateArray> RemoteMultiAgentVecEnv::save_state(const ExecSpace&) const {
  return gather_state(*links_);
}

void RemoteMultiAgentVecEnv::load_state(const ExecSpace&, const std::vector<envs::StateArray>& state) {
  scatter_state(*links_, state);
}

std::vector<envs::StateArray> RemoteMultiAgentVecEnv::full_state(const ExecSpace&) const {
  throw Error("full_state: the game's state is on the simulator GMIs (mapping.template e-at)");
}

// ---- SimulatorServer ----

envs::StepOutputs SimulatorServer::Buffers::outputs() const {
  return envs::StepOutputs{next_obs.data(), final_obs.data(), reward.data(), terminated.data(), truncated.data()};
}

SimulatorServer::SimulatorServer(std::shared_ptr<SimulatorLinks> links, const config::Config& cfg,
                                 std::uint64_t env_offset)
    : links_(std::move(links)) {
  GMI_REQUIRE(links_->is_simulator(), "SimulatorServer on a GMI without a trainer");
  const int E = links_->sim_envs();
  const std::uint64_t seed = std::uint64_t(cfg.train.seed);
  if (envs::is_multi_agent(cfg.env.name)) {
    game_ = envs::make_multi_agent_env(cfg.env.name, E, seed, env_offset, config::env_overrides(cfg));
    const envs::RoleSpec& r = game_->spec().roles.front();
    spec_.name = game_->spec().name, spec_.obs_dim = r.obs_dim, spec_.num_actions = r.num_actions,
    spec_.act_dim = r.act_dim(), spec_.action_nvec = r.action_nvec;
    spec_.max_episode_steps = game_->spec().max_episode_steps;
    for (const envs::RoleSpec& role : game_->spec().roles) spec_.reward_terms.push_back(role.name + "_return");
    for (const std::string& stat : game_->spec().stat_terms) spec_.reward_terms.push_back(stat);
  } else {
    env_ = envs::make_vec_env(cfg.env.name, E, seed, env_offset, config::env_overrides(cfg));
    spec_ = env_->spec();
  }
  for (const RowGroup& g : links_->groups()) {
    const std::size_t n = std::size_t(g.rows), od = std::size_t(g.obs_dim);
    Buffers b;
    b.actions = View1<float>("gmi::simulator::actions", n * std::size_t(g.act_dim));
    b.next_obs = View1<float>("gmi::simulator::next_obs", n * od);
    b.final_obs = View1<float>("gmi::simulator::final_obs", n * od);
    b.reward = View1<float>("gmi::simulator::reward", n);
    b.terminated = View1<std::uint8_t>("gmi::simulator::terminated", n);
    b.truncated = View1<std::uint8_t>("gmi::simulator::truncated", n);
    b.h_next.resize(n * od), b.h_final.resize(n * od), b.h_reward.resize(n), b.h_term.resize(n), b.h_trunc.resize(n);
    b_.push_back(std::move(b));
  }
}

void SimulatorServer::step(const std::vector<const float*>& actions) {
  std::vector<const float*> a;
  std::vector<envs::StepOutputs> outs;
  for (std::size_t g = 0; g < b_.size(); ++g) {
    up(space_, b_[g].actions.data(), reinterpret_cast<const std::byte*>(actions[g]), b_[g].actions.extent(0));
    a.push_back(b_[g].actions.data());
    outs.push_back(b_[g].outputs());
  }
  if (game_) game_->step(space_, a.data(), outs.data());
  else env_->step(space_, a[0], outs[0]);
  for (Buffers& b : b_) {
    down(space_, b.h_next.data(), b.next_obs.data(), b.h_next.size());
    down(space_, b.h_final.data(), b.final_obs.data(), b.h_final.size());
    down(space_, b.h_reward.data(), b.reward.data(), b.h_reward.size());
    down(space_, b.h_term.data(), b.terminated.data(), b.h_term.size());
    down(space_, b.h_trunc.data(), b.truncated.data(), b.h_trunc.size());
  }
  space_.fence();
}

void SimulatorServer::reset(std::uint64_t first_episode) {
  std::vector<float*> obs;
  for (Buffers& b : b_) obs.push_back(b.next_obs.data());
  if (game_) game_->reset_all(space_, obs.data(), first_episode);
  else env_->reset_all(space_, obs[0], first_episode);
  for (Buffers& b : b_) down(space_, b.h_next.data(), b.next_obs.data(), b.h_next.size());
  space_.fence();
}

std::vector<double> SimulatorServer::episode_stats() {
  std::vector<envs::EpisodeStats> s;
  if (game_) s = game_->take_episode_stats(space_);
  else s = {env_->take_episode_stats(space_)};
  std::size_t terms = 0;
  for (const envs::EpisodeStats& e : s) terms = std::max(terms, e.term_sums.size());
  std::vector<double> v = {double(s.size()), double(terms)};
  for (const envs::EpisodeStats& e : s) {
    v.insert(v.end(), {e.return_sum, e.length_sum, e.count});
    for (std::size_t t = 0; t < terms; ++t) v.push_back(t < e.term_sums.size() ? e.term_sums[t] : 0.0);
  }
  return v;
}

std::vector<envs::StateArray> SimulatorServer::save_env() const {
  return game_ ? game_->save_state(space_) : env_->save_state(space_);
}

void SimulatorServer::load_env(const std::vector<envs::StateArray>& state) {
  if (game_) game_->load_state(space_, state);
  else env_->load_state(space_, state);
  space_.fence();
}

std::int64_t SimulatorServer::serve() {
  using Clock = std::chrono::steady_clock;
  step_s_ = 0;
  const std::string mine = "simulator GMI of trainer GMI " + std::to_string(links_->trainer());
  mpi::progress().phase("serving the trainer");
  while (true) {
    const SimulatorLinks::Command c = links_->take();
    mpi::progress().beat();
    switch (c.op) {
      case SimulatorLinks::kStep: {
        const auto t0 = Clock::now();
        step(c.actions);
        step_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
        break;
      }
      case SimulatorLinks::kReset:
        reset(std::uint64_t(c.arg));
        break;
      case SimulatorLinks::kStats: {
        const std::vector<double> v = episode_stats();
        std::vector<std::byte> b(v.size() * sizeof(double));
        std::memcpy(b.data(), v.data(), b.size());
        links_->send_blob(links_->trainer(), b, "the episode statistics of a " + mine);
        continue;
      }
      case SimulatorLinks::kSave:
        links_->send_blob(links_->trainer(), to_bytes(save_env()), "the environment state of a " + mine);
        continue;
      case SimulatorLinks::kLoad:
        load_env(from_bytes(links_->receive_blob(links_->trainer(), "the environment state for a " + mine)));
        continue;
      case SimulatorLinks::kRelease:
        return c.arg;
      default:
        throw Error(fmt::format("simulator GMI: unknown command {} from trainer GMI {}", c.op, links_->trainer()));
    }
    std::vector<const void*> packages;
    for (const Buffers& b : b_)
      for (const void* p : {static_cast<const void*>(b.h_next.data()), static_cast<const void*>(b.h_final.data()),
                            static_cast<const void*>(b.h_reward.data()), static_cast<const void*>(b.h_term.data()),
                            static_cast<const void*>(b.h_trunc.data())})
        packages.push_back(p);
    links_->send_outputs(packages);
  }
}

}  // namespace gmi::instances
