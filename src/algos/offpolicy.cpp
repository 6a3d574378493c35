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
  c.num_steps = num_steps > 0 ? num_steps : (1000 + c.env.num_envs - 1) / c.env.num_envs;
  c.batch_size = std::int64_t(c.env.num_envs) * c.num_steps;
  c.minibatch_size = batch_size;
  if (c.section<ReplayConfig>().capacity < c.env.num_envs)
    config::fail(c, "replay.capacity", fmt::format("{} transitions cannot take one step of env.num_envs = {} envs",
                                                   c.section<ReplayConfig>().capacity, c.env.num_envs));
}

double replay_bytes(const config::Config& cfg, int obs_dim, int act_dim) {
  rl::ReplaySpec s;
  s.obs_dim = obs_dim;
  s.act_dim = act_dim;
  s.capacity = cfg.section<ReplayConfig>().capacity;
  return rl::ReplayBuffer::bytes(s);
}

OffPolicyTrainer::OffPolicyTrainer(const config::Config& cfg, std::uint64_t env_offset,
                                   mpi::GradientReducer* reducer, std::size_t num_params,
                                   const UpdateSchedule& schedule)
    : cfg_(cfg), reducer_(reducer), env_offset_(env_offset), P_(num_params), schedule_(schedule) {
  env_ = envs::make_vec_env(cfg.env.name, cfg.env.num_envs, std::uint64_t(cfg.train.seed), env_offset,
                            config::env_overrides(cfg));
  const envs::EnvSpec& spec = env_->spec();
  N_ = cfg.env.num_envs;
  T_ = cfg.num_steps;
  od_ = spec.obs_dim;
  ad_ = spec.act_dim;
  stored_ad_ = spec.act_dim;
  gmi_ = env_offset / std::uint64_t(N_);
  blas::set_matmul_precision(blas::parse_matmul_precision(cfg.device.matmul));

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
  stats_ = View1<rl::Sums4>("gmi::offpolicy::stats", 1024);
  norms_ = View1<float>("gmi::offpolicy::norms", 1024);
  env_->reset_all(space_, obs_.data());
  space_.fence();
}

OffPolicyTrainer::Record OffPolicyTrainer::record(int kind) {
  GMI_REQUIRE(kind >= 0 && kind < kMaxRecordKinds, "off-policy record kind out of range");
  const std::size_t i = kinds_.size();
  if (i >= stats_.extent(0)) {
    Kokkos::resize(stats_, 2 * stats_.extent(0));
    Kokkos::resize(norms_, 2 * norms_.extent(0));
  }
  kinds_.push_back(kind);
  return {stats_.data() + i, norms_.data() + i};
}

void OffPolicyTrainer::optimizer_step(std::size_t offset, std::size_t n, const optim::AdamArgs& a, const Record& r) {
  mpi::progress().beat();
  const rl::Sums4* st = r.stats;
  algos::optimizer_step(
      space_, {params_.data() + offset, grads_.data() + offset, adam_m_.data() + offset, adam_v_.data() + offset, n},
      inject_nonfinite_, KOKKOS_LAMBDA() { return st->v[0] + st->v[1] + st->v[2] + st->v[3]; },
      reducer_ && reducer_->size() > 1 ? reducer_ : nullptr, r.norm, a);
}

void OffPolicyTrainer::sample(std::int64_t u) {
  // Each GMI draws its own indices: draw = (update << 20) | GMI.
  replay_.sample(space_, std::uint64_t(cfg_.train.seed), (std::uint64_t(u) << 20) | gmi_, batch_);
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
    for (int i = 0; i < s.updates_per_step; ++i, ++updates_) {
      sample(updates_);
      update(updates_, -1);
    }
    const std::int64_t t = multiples(first, g1, s.target_frequency);
    if (t > 0) update_target(int(t));
    target_updates_ += t;
    return;
  }
  // In order of g: an update at every multiple of update_frequency, a target update at every
  // multiple of target_frequency (the update first where both fall on one g, as CleanRL).
  std::int64_t g = first;
  while (true) {
    const std::int64_t nu = next_multiple(g, s.update_frequency), nt = next_multiple(g, s.target_frequency);
    const std::int64_t at = std::min(nu, nt);
    if (at >= g1) break;
    if (at == nu) {
      sample(updates_);
      update(updates_, at);
      ++updates_;
    }
    if (at == nt) {
      update_target(1);
      ++target_updates_;
    }
    g = at + 1;
  }
}

IterationMetrics OffPolicyTrainer::iterate() {
  IterationMetrics m;
  kinds_.clear();
  envs::StepOutputs out;
  double t_act = 0, t_learn = 0;
  mpi::progress().phase("rollout and update");
  for (int t = 0; t < T_; ++t) {
    const std::int64_t k = iteration_ * T_ + t;
    const auto t0 = Clock::now();
    const float* env_actions = act(k);
    out.next_obs = next_obs_.data();
    out.final_obs = final_obs_.data();
    out.reward = rewards_.data();
    out.terminated = terminated_.data();
    out.truncated = truncated_.data();
    env_->step(space_, env_actions, out);
    store_transitions();
    const auto t1 = Clock::now();
    t_act += std::chrono::duration<double>(t1 - t0).count();
    learn(k);
    t_learn += seconds_since(t1);
    mpi::progress().beat();
  }
  const auto t2 = Clock::now();
  const envs::EpisodeStats es = env_->take_episode_stats(space_);
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

void OffPolicyTrainer::finish_iteration(IterationMetrics& m) {
  const std::size_t R = kinds_.size();
  std::vector<rl::Sums4> stats(R);
  std::vector<float> norms(R);
  if (R > 0) {
    Kokkos::deep_copy(Kokkos::View<rl::Sums4*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(stats.data(), R),
                      Kokkos::subview(stats_, std::make_pair(std::size_t(0), R)));
    Kokkos::deep_copy(Kokkos::View<float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(norms.data(), R),
                      Kokkos::subview(norms_, std::make_pair(std::size_t(0), R)));
  }
  space_.fence();
  const int kinds = R > 0 ? *std::max_element(kinds_.begin(), kinds_.end()) + 1 : 1;
  std::vector<rl::Sums4> sums(std::max(kinds, kMaxRecordKinds));
  std::vector<double> counts(sums.size(), 0.0);
  double gn = 0;
  for (std::size_t r = 0; r < R; ++r) {
    const int kind = kinds_[r];
    if (kind == 0) ++m.updates;
    if (!std::isfinite(norms[r])) {
      if (kind == 0) ++m.skipped_updates;
      ++nonfinite_streaks_[std::size_t(kind)];
      skipped(kind);
      continue;
    }
    nonfinite_streaks_[std::size_t(kind)] = 0;
    sums[kind] += stats[r];
    counts[kind] += 1;
    if (kind == 0) gn += norms[r];
  }
  m.nonfinite_streak = *std::max_element(nonfinite_streaks_.begin(), nonfinite_streaks_.end());
  m.grad_norm = counts[0] > 0 ? gn / counts[0] : std::nan("");
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
  for (std::size_t kind = 0; kind < nonfinite_streaks_.size(); ++kind)
    nonfinite_streaks_[kind] = int(s.counter(fmt::format("nonfinite_streak_{}", kind)));
  updates_ = s.counter("updates");
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
  kinds_.clear();
  for (int i = 0; i < n; ++i, ++updates_) {
    sample(updates_);
    update(updates_, -1);
    if (kinds_.size() > 4096) kinds_.clear();  // the statistics are not read here
  }
  space_.fence();
}

}  // namespace gmi::algos
