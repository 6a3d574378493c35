#include "src/algos/offpolicy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "kernels/core/host_copy.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/blas.hpp"
#include "mpi/deadline.hpp"
#include "mpi/progress.hpp"
#include "src/algos/optimizer_step.hpp"
#include "src/algos/replay_section.hpp"
#include "src/algos/trainer_state.hpp"

namespace gmi::algos {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T>
View1<T> alloc(const char* label, std::size_t n) {
  return View1<T>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
}

/// The smallest multiple of m that is >= x (x >= 0).
std::int64_t next_multiple(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

/// Multiples of m in [lo, hi).
std::int64_t multiples(std::int64_t lo, std::int64_t hi, std::int64_t m) {
  if (hi <= lo) return 0;
  return (hi - 1) / m - (lo + m - 1) / m + 1;
}

}  // namespace

void derive_offpolicy(config::Config& c, int num_steps, int batch_size) {
  if (c.policy.shared_hidden)
    config::fail(c, "policy.shared_hidden", "true is for actor-critic policies (ppo, appo); " + c.algo +
                                                " trains separate networks (policy.q_hidden)");
  c.num_steps = num_steps > 0 ? num_steps : (1000 + c.env.num_envs - 1) / c.env.num_envs;
  c.batch_size = std::int64_t(c.env.num_envs) * c.num_steps;
  c.minibatch_size = batch_size;
  if (c.device.graphs == "on" && c.section<ReplayConfig>().storage != "device")
    config::fail(c, "device.graphs", "on: captured updates sample a device replay; replay.storage is " +
                                         c.section<ReplayConfig>().storage + " (use auto or off)");
  if (c.section<ReplayConfig>().capacity < c.env.num_envs)
    config::fail(c, "replay.capacity", fmt::format("{} transitions cannot take one step of env.num_envs = {} envs",
                                                   c.section<ReplayConfig>().capacity, c.env.num_envs));
}

std::vector<float> action_scale(const envs::EnvSpec& s) {
  std::vector<float> v(s.act_dim);
  for (int j = 0; j < s.act_dim; ++j) v[j] = (s.act_high[j] - s.act_low[j]) / 2.0f;
  return v;
}

std::vector<float> action_bias(const envs::EnvSpec& s) {
  std::vector<float> v(s.act_dim);
  for (int j = 0; j < s.act_dim; ++j) v[j] = (s.act_high[j] + s.act_low[j]) / 2.0f;
  return v;
}

double replay_bytes(const config::Config& cfg, int obs_dim, int act_dim) {
  rl::ReplaySpec s;
  s.obs_dim = obs_dim;
  s.act_dim = act_dim;
  s.capacity = cfg.section<ReplayConfig>().capacity;
  return rl::ReplayBuffer::bytes(s);
}

MemoryNeeds replay_trainer_memory(const config::Config& cfg, const envs::EnvSpec& spec, double P, double floats,
                                  int replay_act_dim, std::vector<std::string> drivers) {
  const double N = cfg.env.num_envs, od = spec.obs_dim;
  const double replay = replay_bytes(cfg, spec.obs_dim, replay_act_dim);
  MemoryNeeds m;
  m.drivers = std::move(drivers);
  const bool on_device = cfg.section<ReplayConfig>().storage == "device";
  m.device_bytes = 4 * floats + N * ((od + 16) * 8 + spec.device_bytes_per_env) + (on_device ? replay : 0);
  if (!device_is_host()) m.host_bytes = 4 * 4 * P + N * (od + 16) * 8 + N * od * 4;
  if (!on_device) m.host_bytes += replay;
  if (cfg.checkpoint.replay) m.host_bytes += replay;  // the checkpoint's copy
  m.host_bytes += N * spec.host_bytes_per_env;
  // mapping.template async and ea-t: a rollout of num_steps vector steps passes through (RolloutRows
  // on the device, HostRollout on the host) on a trainer and on a serving GMI.
  if (config::served_rollouts(cfg.mapping)) {
    const double T = cfg.num_steps;
    const double rollout = 4 * ((T + 1) * N * od + T * N * (od + replay_act_dim + 3)) + 2 * T * N;
    m.device_bytes += rollout;
    m.host_bytes += rollout;
  }
  return m;
}

ActorTwinQ actor_twin_q(const config::Config& cfg, int actor_outputs) {
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  const nn::Activation act = nn::parse_activation(cfg.policy.activation);
  ActorTwinQ n;
  n.obs_dim = spec.obs_dim;
  n.act_dim = spec.act_dim;
  n.actor = nn::MlpLayout(spec.obs_dim, cfg.policy.actor_hidden, actor_outputs, act, 0);
  n.q_begin = (n.actor.num_params + 3) / 4 * 4;
  n.q1 = nn::MlpLayout(spec.obs_dim + spec.act_dim, cfg.policy.q_hidden, 1, act, n.q_begin);
  n.q_stride = (n.q1.num_params + 3) / 4 * 4;
  n.q2 = nn::MlpLayout(spec.obs_dim + spec.act_dim, cfg.policy.q_hidden, 1, act, n.q_begin + n.q_stride);
  n.q_size = n.q_stride + n.q2.num_params;
  n.num_params = n.q_begin + n.q_size;
  return n;
}

OffPolicyTrainer::OffPolicyTrainer(const config::Config& cfg, std::uint64_t env_offset,
                                   mpi::GradientReducer* reducer, std::size_t num_params,
                                   const UpdateSchedule& schedule, EnvPtr env)
    : cfg_(cfg), reducer_(reducer), env_offset_(env_offset), P_(num_params), schedule_(schedule) {
  env_ = own_env(std::move(env), cfg, env_offset);
  const envs::EnvSpec& spec = env_->spec();
  N_ = cfg.env.num_envs;
  acting_envs_ = N_;
  T_ = cfg.num_steps;
  od_ = spec.obs_dim;
  ad_ = spec.act_dim;
  stored_ad_ = spec.act_dim;
  gmi_ = env_offset / std::uint64_t(N_);
  set_device_math(cfg);

  params_ = alloc<float>("gmi::offpolicy::params", P_);
  grads_ = View1<float>("gmi::offpolicy::grads", P_);
  adam_m_ = View1<float>("gmi::offpolicy::adam_m", P_);
  adam_v_ = View1<float>("gmi::offpolicy::adam_v", P_);
  const std::size_t n = std::size_t(N_);
  obs_ = alloc<float>("gmi::offpolicy::obs", n * od_);
  next_obs_ = alloc<float>("gmi::offpolicy::next_obs", n * od_);
  final_obs_ = View1<float>("gmi::offpolicy::final_obs", n * od_);
  real_next_ = alloc<float>("gmi::offpolicy::real_next_obs", n * od_);
  rewards_ = alloc<float>("gmi::offpolicy::rewards", n);
  actions_ = View1<float>("gmi::offpolicy::actions", n * ad_);
  env_actions_ = View1<float>("gmi::offpolicy::env_actions", n * ad_);
  terminated_ = alloc<std::uint8_t>("gmi::offpolicy::terminated", n);
  truncated_ = alloc<std::uint8_t>("gmi::offpolicy::truncated", n);
  act_low_ = View1<float>("gmi::offpolicy::act_low", ad_);
  act_high_ = View1<float>("gmi::offpolicy::act_high", ad_);
  if (!spec.discrete()) to_device(act_low_, spec.act_low, "act_low"), to_device(act_high_, spec.act_high, "act_high");
  rl::ReplaySpec rs;
  rs.obs_dim = od_;
  rs.act_dim = stored_ad_;
  rs.capacity = cfg.section<ReplayConfig>().capacity;
  replay_ = rl::ReplayBuffer(rs, rl::parse_replay_storage(cfg.section<ReplayConfig>().storage, "replay.storage"));
  batch_ = rl::ReplayBatch(rs, int(cfg.minibatch_size));
  counters_ = View1<std::int64_t>("gmi::offpolicy::counters", 1 + 2 * kMaxRecordKinds);
  adam_coeffs_ = View1<double>("gmi::offpolicy::adam_coeffs", 2 * kMaxRecordKinds);
  stat_slots_ = View1<rl::Sums4>("gmi::offpolicy::stat_slots", kMaxRecordKinds);
  norm_slots_ = View1<float>("gmi::offpolicy::norm_slots", kMaxRecordKinds);
  norm_sum_ = View1<double>("gmi::offpolicy::norm_sum", 1);
  record_sums_ = View1<RecordSums>("gmi::offpolicy::record_sums", kMaxRecordKinds);
  // device.graphs: the update events of device replays (a host replay gathers on the host).
  graphs_ = cfg.device.graphs != "off" && graphs_available() && replay_.storage() == rl::ReplayStorage::device;
  env_->reset_all(space_, obs_.data());
  space_.fence();
}

OffPolicyTrainer::Record OffPolicyTrainer::record(int kind) {
  GMI_REQUIRE(kind >= 0 && kind < kMaxRecordKinds, "off-policy record kind out of range");
  return {stat_slots_.data() + kind, norm_slots_.data() + kind, kind};
}

void OffPolicyTrainer::set_counter(int slot, std::int64_t value) {
  Kokkos::deep_copy(space_, Kokkos::subview(counters_, slot), value);
  space_.fence();
}

std::int64_t OffPolicyTrainer::adam_count(int kind) const {
  std::int64_t v = 0;
  Kokkos::deep_copy(Kokkos::View<std::int64_t, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&v),
                    Kokkos::subview(counters_, kAdam + kind));
  return v;
}

void OffPolicyTrainer::set_adam_count(int kind, std::int64_t count) { set_counter(kAdam + kind, count); }

void OffPolicyTrainer::optimizer_step(std::size_t offset, std::size_t n, const optim::AdamArgs& a, const Record& r) {
  mpi::progress().beat();
  const rl::Sums4* st = r.stats;
  const optim::AdamCounter counter{counters_.data() + kAdam + r.kind, adam_coeffs_.data() + 2 * r.kind};
  // The step's statistics join its kind's sums in the norm's kernel (device side: captured
  // updates replay this too).
  const int kind = r.kind;
  auto sums = record_sums_;
  auto counters = counters_;
  auto record = KOKKOS_LAMBDA(const float nv) {
    RecordSums& s = sums(kind);
    s.records += 1;
    if (math::isfinite(nv)) {
      s.stats += *st;
      s.norm_sum += double(nv);
      s.taken += 1;
      counters(kStreak + kind) = 0;
    } else {
      counters(kStreak + kind) += 1;
    }
  };
  algos::optimizer_step(
      space_,
      {params_.data() + offset, grads_.data() + offset, adam_m_.data() + offset, adam_v_.data() + offset, n,
       norm_sum_.data()},
      inject_nonfinite_, KOKKOS_LAMBDA() { return st->v[0] + st->v[1] + st->v[2] + st->v[3]; },
      reducer_ && reducer_->size() > 1 ? reducer_ : nullptr, r.norm, a, nullptr, &counter, capturing_, record);
}

void OffPolicyTrainer::sample(std::int64_t u) {
  // Each GMI draws its own indices: draw = (update << 20) | GMI.
  if (replay_.storage() == rl::ReplayStorage::device)
    replay_.sample(space_, std::uint64_t(cfg_.train.seed), rl::DeviceDraw{counters_.data() + kUpdates, 20, gmi_}, batch_);
  else
    replay_.sample(space_, std::uint64_t(cfg_.train.seed), (std::uint64_t(u) << 20) | gmi_, batch_);
}

void OffPolicyTrainer::count_update() {
  auto counters = counters_;
  Kokkos::parallel_for(
      "gmi::offpolicy::count_update", Range(space_, 0, 1), KOKKOS_LAMBDA(const int) { counters(kUpdates) += 1; });
}

int OffPolicyTrainer::update_event(std::int64_t g) {
  const std::int64_t u = updates_;
  auto body = [&] {
    sample(u);
    update(u, g);
    count_update();
  };
  mpi::progress().beat();
  ++updates_;
  const int targets = targets_within(u, g);
  target_updates_ += targets;
  if (!graphs_ || inject_nonfinite_ || Kokkos::Tools::profileLibraryLoaded()) {
    body();
    return targets;
  }
  const int kind = update_kind(u, g);
  if (std::size_t(kind) >= update_graphs_.size()) update_graphs_.resize(std::size_t(kind) + 1);
  UpdateGraph& G = update_graphs_[std::size_t(kind)];
  if (!G.warm) {
    body();
    G.warm = true;
    return targets;
  }
  if (!G.seq) G.seq = std::make_unique<CapturedSequence>(fmt::format("device.graphs ({} update events)", cfg_.algo), true);
  capturing_ = G.seq.get();
  try {
    G.seq->run(space_, body);
  } catch (...) {
    capturing_ = nullptr;
    throw;
  }
  capturing_ = nullptr;
  return targets;
}

void OffPolicyTrainer::store_transitions() {
  const int od = od_;
  auto next = next_obs_;
  auto fin = final_obs_;
  auto real = real_next_;
  auto term = terminated_;
  auto trunc = truncated_;
  // CleanRL's real_next_obs: where an episode ended, the observation it ended in (next_obs
  // already holds the next episode's first one).
  Kokkos::parallel_for(
      "gmi::offpolicy::real_next_obs", Range64(space_, 0, std::int64_t(N_) * od), KOKKOS_LAMBDA(const std::int64_t k) {
        const std::int64_t i = k / od;
        real(k) = term(i) || trunc(i) ? fin(k) : next(k);
      });
  replay_.add(space_, N_, obs_.data(), actions_.data(), rewards_.data(), real_next_.data(), terminated_.data());
  std::swap(obs_, next_obs_);
}

void OffPolicyTrainer::learn(std::int64_t k) {
  if (k < refill_until_) return;
  const UpdateSchedule& s = schedule_;
  const std::int64_t g0 = k * N_, g1 = g0 + N_, first = std::max(g0, s.learning_starts + 1);
  if (first >= g1) return;
  if (s.updates_per_step > 0) {
    for (int i = 0; i < s.updates_per_step; ++i) update_event(-1);
    const std::int64_t t = s.target_frequency > 0 ? multiples(first, g1, s.target_frequency) : 0;
    if (t > 0) update_target(int(t));
    target_updates_ += t;
    return;
  }
  // In order of g: an update at every multiple of update_frequency, a target update at every
  // multiple of target_frequency (the update first where both fall on one g, as CleanRL).
  std::int64_t g = first;
  while (true) {
    const std::int64_t nu = next_multiple(g, s.update_frequency);
    const std::int64_t nt = s.target_frequency > 0 ? next_multiple(g, s.target_frequency) : g1;
    const std::int64_t at = std::min(nu, nt);
    if (at >= g1) break;
    const bool moved = at == nu && update_event(at) > 0;  // the event moved the targets itself
    if (at == nt && !moved) {
      update_target(1);
      ++target_updates_;
    }
    g = at + 1;
  }
}

envs::StepOutputs OffPolicyTrainer::step_outputs() {
  envs::StepOutputs out;
  out.next_obs = next_obs_.data();
  out.final_obs = final_obs_.data();
  out.reward = rewards_.data();
  out.terminated = terminated_.data();
  out.truncated = truncated_.data();
  return out;
}

bool OffPolicyTrainer::learn_changes_actor(std::int64_t k) const {
  // The same walk as learn(), asking each update event instead of running it.
  if (k < refill_until_) return false;
  const UpdateSchedule& s = schedule_;
  const std::int64_t g0 = k * N_, g1 = g0 + N_, first = std::max(g0, s.learning_starts + 1);
  if (first >= g1) return false;
  std::int64_t u = updates_;
  if (s.updates_per_step > 0) {
    for (int i = 0; i < s.updates_per_step; ++i, ++u)
      if (update_changes_actor(u, -1)) return true;
    return false;
  }
  for (std::int64_t g = next_multiple(first, s.update_frequency); g < g1; g += s.update_frequency, ++u)
    if (update_changes_actor(u, g)) return true;
  return false;
}

IterationMetrics OffPolicyTrainer::iterate() {
  double t_act = 0, t_learn = 0;
  mpi::progress().phase("rollout and update");
  // Host-simulated envs: where vector step k's updates leave the acting network alone, step k + 1's
  // actions are computed and its physics started on the env's threads before they run (the
  // same work in the same stream order: the same results).  With replay.act_ahead, step k + 1
  // acts before step k's updates whatever they change (device envs step then too, so both kinds
  // of env give the same schedule); never across an iteration's end, so resumes stay exact.
  const bool overlap = overlap_ && env_->can_step_async();
  const bool ahead = cfg_.section<ReplayConfig>().act_ahead;
  enum class Next { none, started, done } next = Next::none;  // step k's physics, begun during step k - 1
  for (int t = 0; t < T_; ++t) {
    const std::int64_t k = iteration_ * T_ + t;
    const auto t0 = Clock::now();
    if (next == Next::started) {
      env_->step_wait(space_);
    } else if (next == Next::none) {
      const float* env_actions = act(k);
      env_->step(space_, env_actions, step_outputs());
    }
    store_transitions();
    next = Next::none;
    if (t + 1 < T_ && (ahead || (overlap && !learn_changes_actor(k)))) {
      const float* env_actions = act(k + 1);
      if (overlap) {
        env_->step_async(space_, env_actions, step_outputs(), 0, N_);  // into the buffers store_transitions freed
        next = Next::started;
      } else {
        env_->step(space_, env_actions, step_outputs());
        next = Next::done;
      }
    }
    const auto t1 = Clock::now();
    t_act += std::chrono::duration<double>(t1 - t0).count();
    try {
      learn(k);
    } catch (...) {
      // The env's threads still step into this trainer's buffers: let them finish first.
      if (next == Next::started) {
        try {
          env_->step_wait(space_);
        } catch (...) {
        }
      }
      throw;
    }
    t_learn += seconds_since(t1);
    mpi::progress().beat();
  }
  return end_iteration(env_->take_episode_stats(space_), t_act, t_learn);
}

IterationMetrics OffPolicyTrainer::end_iteration(const envs::EpisodeStats& es, double t_act, double t_learn) {
  const auto t2 = Clock::now();
  IterationMetrics m;
  m.episode_return_sum = es.return_sum;
  m.episode_length_sum = es.length_sum;
  m.episodes = es.count;
  m.episode_term_sums = es.term_sums;
  finish_iteration(m);
  mpi::check();  // a reduction that ran out on the device: end here, not with its garbage
  // Host time issuing each phase; the device's lag is waited for here and counted as learning.
  m.time_rollout = t_act;
  m.time_update = t_learn + seconds_since(t2);
  inject_nonfinite_ = false;
  ++iteration_;
  m.iteration = iteration_;
  return m;
}

OffPolicyTrainer::RolloutRows& OffPolicyTrainer::rollout_rows() {
  if (rows_.obs.extent(0) > 0) return rows_;
  const std::size_t N = std::size_t(N_), T = std::size_t(T_);
  rows_.obs = alloc<float>("gmi::offpolicy::served_obs", (T + 1) * N * od_);
  rows_.final_obs = View1<float>("gmi::offpolicy::served_final_obs", T * N * od_);  // read where episodes ended
  rows_.actions = alloc<float>("gmi::offpolicy::served_actions", T * N * stored_ad_);
  rows_.rewards = alloc<float>("gmi::offpolicy::served_rewards", T * N);
  rows_.terminated = alloc<std::uint8_t>("gmi::offpolicy::served_terminated", T * N);
  rows_.truncated = alloc<std::uint8_t>("gmi::offpolicy::served_truncated", T * N);
  return rows_;
}

namespace {
/// Rows [t w, (t + 1) w) of `v` (w: one vector step's values).
template <class V>
auto step_rows(const V& v, int t, std::size_t w) {
  return Kokkos::subview(v, std::make_pair(std::size_t(t) * w, std::size_t(t + 1) * w));
}
}  // namespace

void OffPolicyTrainer::serve_rollout(std::int64_t index, HostRollout& out) {
  RolloutRows& r = rollout_rows();
  const std::size_t N = std::size_t(N_), on = N * od_, an = N * stored_ad_;
  Kokkos::deep_copy(space_, step_rows(r.obs, 0, on), obs_);
  for (int t = 0; t < T_; ++t) {
    const float* env_actions = act(index * T_ + t);
    env_->step(space_, env_actions, step_outputs());
    Kokkos::deep_copy(space_, step_rows(r.obs, t + 1, on), next_obs_);
    Kokkos::deep_copy(space_, step_rows(r.final_obs, t, on), final_obs_);
    Kokkos::deep_copy(space_, step_rows(r.actions, t, an), actions_);
    Kokkos::deep_copy(space_, step_rows(r.rewards, t, N), rewards_);
    Kokkos::deep_copy(space_, step_rows(r.terminated, t, N), terminated_);
    Kokkos::deep_copy(space_, step_rows(r.truncated, t, N), truncated_);
    std::swap(obs_, next_obs_);
    mpi::progress().beat();
  }
  out.episodes = env_->take_episode_stats(space_);
  space_.fence();
  out.obs = to_host(r.obs);
  out.final_obs = to_host(r.final_obs);
  out.actions = to_host(r.actions);
  out.rewards = to_host(r.rewards);
  out.terminated = to_host(r.terminated);
  out.truncated = to_host(r.truncated);
  out.logp.assign(std::size_t(T_) * N, 0.0f);  // no policy statistics: the replay keeps transitions only
  out.values.assign(std::size_t(T_) * N, 0.0f);
}

IterationMetrics OffPolicyTrainer::learn_rollout(const HostRollout& in, double time_rollout) {
  RolloutRows& r = rollout_rows();
  to_device(r.obs, in.obs, "a served rollout's observations");
  to_device(r.final_obs, in.final_obs, "a served rollout's final observations");
  to_device(r.actions, in.actions, "a served rollout's actions");
  to_device(r.rewards, in.rewards, "a served rollout's rewards");
  to_device(r.terminated, in.terminated, "a served rollout's terminations");
  to_device(r.truncated, in.truncated, "a served rollout's truncations");
  mpi::progress().phase("storing and learning from served transitions");
  const std::size_t N = std::size_t(N_), on = N * od_, an = N * stored_ad_;
  Kokkos::deep_copy(space_, obs_, step_rows(r.obs, 0, on));
  const auto t0 = Clock::now();
  for (int t = 0; t < T_; ++t) {
    // Step t's transitions as an env step of this GMI's would leave them, then that step's updates.
    Kokkos::deep_copy(space_, next_obs_, step_rows(r.obs, t + 1, on));
    Kokkos::deep_copy(space_, final_obs_, step_rows(r.final_obs, t, on));
    Kokkos::deep_copy(space_, actions_, step_rows(r.actions, t, an));
    Kokkos::deep_copy(space_, rewards_, step_rows(r.rewards, t, N));
    Kokkos::deep_copy(space_, terminated_, step_rows(r.terminated, t, N));
    Kokkos::deep_copy(space_, truncated_, step_rows(r.truncated, t, N));
    store_transitions();
    learn(iteration_ * T_ + t);
    mpi::progress().beat();
  }
  return end_iteration(in.episodes, time_rollout, seconds_since(t0));
}

void OffPolicyTrainer::set_policy(const std::vector<float>& params, const std::vector<double>& acting) {
  to_device(params_, params, "the published parameters");
  set_acting_state(acting);
  space_.fence();
}

std::vector<float> OffPolicyTrainer::start_obs_host() const {
  space_.fence();
  return to_host(obs_);
}

void OffPolicyTrainer::set_start_obs(const std::vector<float>& obs) {
  to_device(obs_, obs, "the observations a rollout starts from");
}

std::vector<envs::StateArray> OffPolicyTrainer::env_state() const {
  space_.fence();
  return env_->save_state(space_);
}

void OffPolicyTrainer::set_env_state(const std::vector<envs::StateArray>& state) {
  env_->load_state(space_, state);
  space_.fence();
}

void OffPolicyTrainer::finish_iteration(IterationMetrics& m) {
  std::vector<RecordSums> rs(kMaxRecordKinds);
  std::vector<std::int64_t> counters(counters_.extent(0));
  Kokkos::deep_copy(space_, Kokkos::View<RecordSums*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(rs.data(), rs.size()),
                    record_sums_);
  Kokkos::deep_copy(space_, Kokkos::View<std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(counters.data(), counters.size()),
                    counters_);
  space_.fence();
  Kokkos::deep_copy(space_, record_sums_, RecordSums{});  // the next iteration's sums start at zero
  std::vector<rl::Sums4> sums(kMaxRecordKinds);
  std::vector<double> counts(kMaxRecordKinds, 0.0);
  for (int kind = 0; kind < kMaxRecordKinds; ++kind) {
    sums[std::size_t(kind)] = rs[std::size_t(kind)].stats;
    counts[std::size_t(kind)] = rs[std::size_t(kind)].taken;
    nonfinite_streaks_[std::size_t(kind)] = int(counters[std::size_t(kStreak + kind)]);
  }
  m.updates = std::int64_t(rs[0].records);
  m.skipped_updates = std::int64_t(rs[0].records - rs[0].taken);
  m.nonfinite_streak = *std::max_element(nonfinite_streaks_.begin(), nonfinite_streaks_.end());
  m.grad_norm = rs[0].taken > 0 ? rs[0].norm_sum / rs[0].taken : std::nan("");
  losses(m, sums, counts);
}

std::vector<float> OffPolicyTrainer::params_host() const { return to_host(params_); }

StateBuffers OffPolicyTrainer::state_buffers() const {
  StateBuffers b;
  b.params = params_;
  b.adam_m = adam_m_;
  b.adam_v = adam_v_;
  b.obs = obs_;
  b.env = env_.get();
  return b;
}

TrainerState OffPolicyTrainer::save_state() const {
  TrainerState s = save_buffers(space_, state_buffers());
  s.iteration = iteration_;
  s.nonfinite_streak = *std::max_element(nonfinite_streaks_.begin(), nonfinite_streaks_.end());
  s.counters = {{"updates", updates_}, {"target_updates", target_updates_}, {"refill_until", refill_until_}};
  for (std::size_t kind = 0; kind < nonfinite_streaks_.size(); ++kind)
    s.counters.emplace_back(fmt::format("nonfinite_streak_{}", kind), nonfinite_streaks_[kind]);
  s.rng = {{"next_explore_step", iteration_ * T_}, {"next_replay_draw", updates_}};
  if (cfg_.checkpoint.replay) s.replay = replay_.save_state(space_);
  save_extra(s);
  return s;
}

void OffPolicyTrainer::load_shared_state(const TrainerState& s, std::uint64_t first_episode) {
  const StateBuffers b = state_buffers();
  load_shared_buffers(space_, b, s);
  iteration_ = s.iteration;
  for (std::size_t kind = 0; kind < nonfinite_streaks_.size(); ++kind) {
    nonfinite_streaks_[kind] = int(s.counter(fmt::format("nonfinite_streak_{}", kind)));
    set_counter(kStreak + int(kind), nonfinite_streaks_[kind]);
  }
  updates_ = s.counter("updates");
  set_counter(kUpdates, updates_);
  target_updates_ = s.counter("target_updates");
  load_extra(s);
  restart_episodes(space_, b, first_episode);
  // The replay shard starts empty (a trainer that ran before forgets what it held): no updates
  // until it holds what learning_starts asked for (at least a batch) again.
  replay_.clear();
  const std::int64_t want =
      std::min<std::int64_t>(cfg_.section<ReplayConfig>().capacity, std::max<std::int64_t>(schedule_.learning_starts + 1, batch_.size));
  // Vector step j after the resume stores its transitions before it learns: (j + 1) N ≥ want.
  refill_until_ = iteration_ * T_ + (want + N_ - 1) / N_ - 1;
  space_.fence();
}

void OffPolicyTrainer::load_state(const TrainerState& s) {
  load_shared_state(s, 0);
  load_own_buffers(space_, state_buffers(), s);
  if (s.replay) {
    replay_.load_state(space_, *s.replay);
    refill_until_ = s.counter("refill_until");
  } else {
    spdlog::warn("the checkpoint has no replay buffer (checkpoint.replay: false): refilling it with {} vector steps "
                 "of new experience before learning goes on; this run will not repeat an uninterrupted one",
                 refill_until_ - iteration_ * T_);
  }
  space_.fence();
}

void OffPolicyTrainer::fill_replay_for_benchmark() {
  replay_.fill_synthetic(space_, std::uint64_t(cfg_.train.seed), env_->spec().num_actions);
  space_.fence();
}

void OffPolicyTrainer::run_updates(int n) {
  for (int i = 0; i < n; ++i) update_event(-1);
  space_.fence();
}

}  // namespace gmi::algos
