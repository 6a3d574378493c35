#include "src/gmi/remote_env.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/progress.hpp"

namespace gmi::instances {
namespace {

/// Blobs of this module on MPI_COMM_WORLD (nothing else of a training run uses it point to point).
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

// ---- state arrays as bytes ----
struct Writer {
  std::vector<std::byte> out;
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  }
  template <class T>
  void put(T v) {
    raw(&v, sizeof v);
  }
};
struct Reader {
  const std::vector<std::byte>& in;
  std::size_t at = 0;
  void raw(void* p, std::size_t n) {
    GMI_REQUIRE(at + n <= in.size(), "environment state from a simulator GMI is truncated");
    std::memcpy(p, in.data() + at, n);
    at += n;
  }
  template <class T>
  T get() {
    T v;
    raw(&v, sizeof v);
    return v;
  }
};

std::vector<std::byte> to_bytes(const std::vector<envs::StateArray>& arrays) {
  Writer w;
  w.put<std::uint64_t>(arrays.size());
  for (const envs::StateArray& a : arrays) {
    w.put<std::uint64_t>(a.name.size());
    w.raw(a.name.data(), a.name.size());
    w.put<std::uint8_t>(a.rng);
    w.put<std::int32_t>(a.width);
    w.put<std::uint8_t>(std::uint8_t(a.values.index()));
    std::visit([&](const auto& v) {
      w.put<std::uint64_t>(v.size());
      w.raw(v.data(), v.size() * sizeof(v[0]));
    }, a.values);
  }
  return std::move(w.out);
}

template <class T>
std::vector<T> read_values(Reader& r) {
  std::vector<T> v(r.get<std::uint64_t>());
  r.raw(v.data(), v.size() * sizeof(T));
  return v;
}

std::vector<envs::StateArray> from_bytes(const std::vector<std::byte>& bytes) {
  Reader r{bytes};
  std::vector<envs::StateArray> arrays(r.get<std::uint64_t>());
  for (envs::StateArray& a : arrays) {
    a.name.resize(r.get<std::uint64_t>());
    r.raw(a.name.data(), a.name.size());
    a.rng = r.get<std::uint8_t>() != 0;
    a.width = r.get<std::int32_t>();
    switch (r.get<std::uint8_t>()) {
      case 0: a.values = read_values<float>(r); break;
      case 1: a.values = read_values<double>(r); break;
      case 2: a.values = read_values<int>(r); break;
      case 3: a.values = read_values<std::uint64_t>(r); break;
      default: throw Error("environment state from a simulator GMI has an unknown value type");
    }
  }
  return arrays;
}

std::size_t values_of(const envs::StateArray& a) {
  return std::visit([](const auto& v) { return v.size(); }, a.values);
}

/// Values [begin, end) of `a`.
envs::StateArray slice(const envs::StateArray& a, std::size_t begin, std::size_t end) {
  envs::StateArray s{a.name, a.rng, {}, a.width};
  std::visit([&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    s.values = V(v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end));
  }, a.values);
  return s;
}

void append(envs::StateArray& to, const envs::StateArray& from) {
  GMI_REQUIRE(to.values.index() == from.values.index() && to.width == from.width,
              "environment state '" + to.name + "' differs in type between simulator GMIs");
  std::visit([&](auto& v) {
    const auto& f = std::get<std::decay_t<decltype(v)>>(from.values);
    v.insert(v.end(), f.begin(), f.end());
  }, to.values);
}

}  // namespace

// ---- SimulatorLinks ----

SimulatorLinks::SimulatorLinks(const RolePlan& plan, int me, const config::Config& cfg, const envs::EnvSpec& spec,
                               int sim_envs)
    : E_(sim_envs), spec_(spec) {
  std::map<int, std::vector<int>> served;  // trainer -> its simulators, in route order
  for (const mpi::Route& r : plan.routes) {
    served[r.consumer].push_back(r.producer);
    if (r.producer == me) trainer_ = r.consumer, position_ = int(served[r.consumer].size()) - 1;
  }
  if (served.count(me)) sims_ = served[me];
  std::size_t fan = 0;
  for (const auto& [t, v] : served) fan = std::max(fan, v.size());
  const mpi::ChannelOptions flow{cfg.channels.max_in_flight};
  const mpi::PackageType command{"command", 1, 16, 8}, action{"action", E_, 4 * spec_.act_dim, 4};
  for (std::size_t k = 0; k < fan; ++k) {
    std::vector<mpi::Route> routes;
    for (const auto& [t, v] : served)
      if (v.size() > k) routes.push_back({t, v[k]});
    commands_.push_back(std::make_unique<mpi::ExperienceChannels>(
        MPI_COMM_WORLD, routes, std::vector{command, action},
        mpi::make_plan("single", {command, action}, 1, 1, {}), flow));
  }
  const std::vector<mpi::PackageType> types = {{"next_obs", E_, 4 * spec_.obs_dim, 4},
                                               {"final_obs", E_, 4 * spec_.obs_dim, 4},
                                               {"reward", E_, 4, 4},
                                               {"terminated", E_, 1, 1},
                                               {"truncated", E_, 1, 1}};
  // A trainer takes every step as it comes: one step per message, grouped by channels.plan.
  const mpi::TransferCost cost = mpi::measure_transfer_cost(MPI_COMM_WORLD, plan.routes, 5);
  outputs_ = std::make_unique<mpi::ExperienceChannels>(
      MPI_COMM_WORLD, plan.routes, types, mpi::make_plan(cfg.channels.plan, types, 1, 1, cost, "channels.plan"), flow);
  command_row_.assign(std::size_t(E_) * 4 * std::size_t(spec_.act_dim), std::byte{0});
}

SimulatorLinks::~SimulatorLinks() = default;

std::string SimulatorLinks::plan_text() const { return outputs_->plan().text(outputs_->types()); }

void SimulatorLinks::command(int op, std::int64_t arg, const float* actions) {
  const std::int64_t row[2] = {op, arg};
  const std::size_t per = std::size_t(E_) * std::size_t(spec_.act_dim);
  for (std::size_t k = 0; k < sims_.size(); ++k) {
    const void* a = actions ? static_cast<const void*>(actions + k * per) : command_row_.data();
    commands_[k]->push({row, a});
  }
}

void SimulatorLinks::command_one(int k, int op, std::int64_t arg, const float* actions) {
  const std::int64_t row[2] = {op, arg};
  commands_[std::size_t(k)]->push({row, actions ? static_cast<const void*>(actions) : command_row_.data()});
}

std::vector<const std::byte*> SimulatorLinks::outputs(int k) { return outputs_->next(std::size_t(k)); }

SimulatorLinks::Command SimulatorLinks::take() {
  const std::vector<const std::byte*> p = commands_[std::size_t(position_)]->next(0);
  std::int64_t row[2];
  std::memcpy(row, p[0], sizeof row);
  return Command{int(row[0]), row[1], reinterpret_cast<const float*>(p[1])};
}

void SimulatorLinks::send_outputs(const std::vector<const void*>& packages) { outputs_->push(packages); }

void SimulatorLinks::send_blob(int to, const std::vector<std::byte>& data, const std::string& what) {
  mpi::send_bytes(MPI_COMM_WORLD, to, kBlobTag, data, what);
}

std::vector<std::byte> SimulatorLinks::receive_blob(int from, const std::string& what) {
  return mpi::receive_bytes(MPI_COMM_WORLD, from, kBlobTag, what);
}

// ---- RemoteVecEnv ----

RemoteVecEnv::RemoteVecEnv(std::shared_ptr<SimulatorLinks> links) : links_(std::move(links)) {
  GMI_REQUIRE(links_->is_trainer(), "RemoteVecEnv on a GMI without simulators");
  spec_ = links_->spec();
  // Host memory per env: the staged actions and outputs (and what tells a trainer that these envs
  // do not step on its device, so it captures no rollout around them).
  spec_.host_bytes_per_env = std::max(spec_.host_bytes_per_env, 4.0 * (2 * spec_.obs_dim + spec_.act_dim + 1) + 2);
  num_envs_ = int(links_->simulators().size()) * links_->sim_envs();
  actions_.resize(std::size_t(num_envs_) * std::size_t(spec_.act_dim));
}

void RemoteVecEnv::reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode) {
  links_->command(SimulatorLinks::kReset, std::int64_t(first_episode));
  const std::size_t rows = std::size_t(links_->sim_envs()) * std::size_t(spec_.obs_dim);
  for (int k = 0; k < int(links_->simulators().size()); ++k)
    up(space, obs + std::size_t(k) * rows, links_->outputs(k)[0], rows);
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
    links_->command_one(k, SimulatorLinks::kStep, 0, actions_.data() + std::size_t(k) * std::size_t(E) * ad);
  queued_.push_back({out, lo, hi});
}

void RemoteVecEnv::step_wait(const ExecSpace& space) {
  GMI_REQUIRE(!queued_.empty(), "step_wait without a step queued");
  const Queued q = queued_.front();
  queued_.pop_front();
  const envs::StepOutputs& out = q.out;
  const std::size_t E = std::size_t(links_->sim_envs()), od = std::size_t(spec_.obs_dim);
  for (int k = q.lo / int(E); k < q.hi / int(E); ++k) {
    const std::vector<const std::byte*> p = links_->outputs(k);
    const std::size_t r0 = std::size_t(k) * E;
    up(space, out.next_obs + r0 * od, p[0], E * od);
    up(space, out.final_obs + r0 * od, p[1], E * od);
    up(space, out.reward + r0, p[2], E);
    up(space, out.terminated + r0, p[3], E);
    up(space, out.truncated + r0, p[4], E);
  }
  space.fence();  // before the next step hands the received buffers back
}

envs::EpisodeStats RemoteVecEnv::take_episode_stats(const ExecSpace&) {
  links_->command(SimulatorLinks::kStats, 0);
  envs::EpisodeStats s;
  for (int sim : links_->simulators()) {
    const std::vector<std::byte> b = links_->receive_blob(sim, "the episode statistics of simulator GMI " + std::to_string(sim));
    std::vector<double> v(b.size() / sizeof(double));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(double));
    GMI_REQUIRE(v.size() >= 3, "episode statistics from a simulator GMI are truncated");
    s.return_sum += v[0];
    s.length_sum += v[1];
    s.count += v[2];
    s.term_sums.resize(std::max(s.term_sums.size(), v.size() - 3), 0.0);
    for (std::size_t t = 3; t < v.size(); ++t) s.term_sums[t - 3] += v[t];
  }
  return s;
}

std::vector<envs::StateArray> RemoteVecEnv::save_state(const ExecSpace&) const {
  links_->command(SimulatorLinks::kSave, 0);
  std::vector<envs::StateArray> all;
  for (int sim : links_->simulators()) {
    const std::vector<envs::StateArray> part =
        from_bytes(links_->receive_blob(sim, "the environment state of simulator GMI " + std::to_string(sim)));
    if (all.empty()) {
      all = part;
      continue;
    }
    GMI_REQUIRE(part.size() == all.size(), "simulator GMIs hold different environment state arrays");
    for (std::size_t i = 0; i < part.size(); ++i) append(all[i], part[i]);
  }
  return all;
}

void RemoteVecEnv::load_state(const ExecSpace&, const std::vector<envs::StateArray>& state) {
  const std::size_t S = links_->simulators().size();
  for (const envs::StateArray& a : state)
    GMI_REQUIRE(values_of(a) % S == 0, fmt::format("environment state '{}' has {} values, not a multiple of the {} "
                                                   "simulator GMIs",
                                                   a.name, values_of(a), S));
  links_->command(SimulatorLinks::kLoad, 0);
  for (std::size_t k = 0; k < S; ++k) {
    std::vector<envs::StateArray> part;
    for (const envs::StateArray& a : state) {
      const std::size_t n = values_of(a) / S;
      part.push_back(slice(a, k * n, (k + 1) * n));
    }
    const int sim = links_->simulators()[k];
    links_->send_blob(sim, to_bytes(part), "the environment state for simulator GMI " + std::to_string(sim));
  }
}

// ---- SimulatorServer ----

SimulatorServer::SimulatorServer(std::shared_ptr<SimulatorLinks> links, const config::Config& cfg,
                                 std::uint64_t env_offset)
    : links_(std::move(links)) {
  GMI_REQUIRE(links_->is_simulator(), "SimulatorServer on a GMI without a trainer");
  E_ = links_->sim_envs();
  env_ = envs::make_vec_env(cfg.env.name, E_, std::uint64_t(cfg.train.seed), env_offset, config::env_overrides(cfg));
  od_ = env_->spec().obs_dim;
  ad_ = env_->spec().act_dim;
  const std::size_t E = std::size_t(E_);
  actions_ = View1<float>("gmi::simulator::actions", E * ad_);
  next_obs_ = View1<float>("gmi::simulator::next_obs", E * od_);
  final_obs_ = View1<float>("gmi::simulator::final_obs", E * od_);
  reward_ = View1<float>("gmi::simulator::reward", E);
  terminated_ = View1<std::uint8_t>("gmi::simulator::terminated", E);
  truncated_ = View1<std::uint8_t>("gmi::simulator::truncated", E);
  h_next_.resize(E * od_);
  h_final_.resize(E * od_);
  h_reward_.resize(E);
  h_term_.resize(E);
  h_trunc_.resize(E);
}

void SimulatorServer::step(const float* actions) {
  const std::size_t E = std::size_t(E_);
  up(space_, actions_.data(), reinterpret_cast<const std::byte*>(actions), E * ad_);
  env_->step(space_, actions_.data(),
             envs::StepOutputs{next_obs_.data(), final_obs_.data(), reward_.data(), terminated_.data(), truncated_.data()});
  down(space_, h_next_.data(), next_obs_.data(), E * od_);
  down(space_, h_final_.data(), final_obs_.data(), E * od_);
  down(space_, h_reward_.data(), reward_.data(), E);
  down(space_, h_term_.data(), terminated_.data(), E);
  down(space_, h_trunc_.data(), truncated_.data(), E);
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
        env_->reset_all(space_, next_obs_.data(), std::uint64_t(c.arg));
        down(space_, h_next_.data(), next_obs_.data(), h_next_.size());
        space_.fence();
        break;
      case SimulatorLinks::kStats: {
        const envs::EpisodeStats s = env_->take_episode_stats(space_);
        std::vector<double> v = {s.return_sum, s.length_sum, s.count};
        v.insert(v.end(), s.term_sums.begin(), s.term_sums.end());
        std::vector<std::byte> b(v.size() * sizeof(double));
        std::memcpy(b.data(), v.data(), b.size());
        links_->send_blob(links_->trainer(), b, "the episode statistics of a " + mine);
        continue;
      }
      case SimulatorLinks::kSave:
        links_->send_blob(links_->trainer(), to_bytes(env_->save_state(space_)), "the environment state of a " + mine);
        continue;
      case SimulatorLinks::kLoad:
        env_->load_state(space_, from_bytes(links_->receive_blob(links_->trainer(), "the environment state for a " + mine)));
        space_.fence();
        continue;
      case SimulatorLinks::kRelease:
        return c.arg;
      default:
        throw Error(fmt::format("simulator GMI: unknown command {} from trainer GMI {}", c.op, links_->trainer()));
    }
    links_->send_outputs({h_next_.data(), h_final_.data(), h_reward_.data(), h_term_.data(), h_trunc_.data()});
  }
}

}  // namespace gmi::instances
