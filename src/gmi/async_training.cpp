#include "src/gmi/async_training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "kernels/core/error.hpp"
#include "kernels/core/row_copy.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/channels.hpp"
#include "mpi/deadline.hpp"
#include "mpi/environment.hpp"
#include "mpi/mailbox.hpp"
#include "mpi/progress.hpp"
#include "mpi/shared_slots.hpp"
#include "mpi/topology.hpp"
#include "src/algos/registry.hpp"
#include "src/algos/replay_section.hpp"
#include "src/gmi/session.hpp"
#include "src/gmi/state_bytes.hpp"

namespace gmi::instances {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// A serving GMI's answers to its trainer (send_bytes), and the trainer's letters to it (a
/// mailbox: sent without waiting, picked up between rollouts).
constexpr int kReplyTag = 7420;
constexpr int kLetterTag = 7421;
constexpr int kCreditTag = 7422;  ///< the trainer took one of its rollouts: it may make another
enum Op : std::int32_t { kWeights = 1, kSave = 2, kLoad = 3, kStop = 4, kAbort = 5 };

using algos::HostRollout;

/// Adds `blocks` (a rollout's episode statistics: one block, or one per role of a game) to r's.
void add_episodes(HostRollout& r, const std::vector<envs::EpisodeStats>& blocks) {
  std::vector<envs::EpisodeStats*> to;
  if (r.role_episodes.empty()) to.push_back(&r.episodes);
  for (envs::EpisodeStats& e : r.role_episodes) to.push_back(&e);
  for (std::size_t b = 0; b < to.size() && b < blocks.size(); ++b) {
    to[b]->return_sum += blocks[b].return_sum, to[b]->length_sum += blocks[b].length_sum;
    to[b]->count += blocks[b].count;
    for (std::size_t i = 0; i < blocks[b].term_sums.size() && i < to[b]->term_sums.size(); ++i)
      to[b]->term_sums[i] += blocks[b].term_sums[i];
  }
}

/// What a serving GMI says with each rollout (the first values of its last record), cumulative
/// since it started.
struct Report {
  double version = 0;   ///< the trainer iteration whose weights made the rollout
  double rollouts = 0;  ///< rollouts made
  double busy_s = 0;    ///< seconds rolling out
  double wait_s = 0;    ///< seconds waiting for room in the trainer's queue (and, under ea-t, for weights)
  double peak_rss_mib = 0;
  double last = 0;      ///< 1: no rollout, the last message after a stop
};
constexpr std::size_t kReportValues = 6;

std::string server_name(int rank) { return "serving GMI " + std::to_string(rank); }
std::string trainer_name(int rank) { return "trainer GMI " + std::to_string(rank); }
std::vector<std::byte> bytes_of(const std::string& s) {
  const auto* b = reinterpret_cast<const std::byte*>(s.data());
  return {b, b + s.size()};
}
std::string text_of(const std::vector<std::byte>& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

/// The channels of an async job (every GMI builds them), the letters and the replies.  Host
/// transport: a rollout is one message, num_steps + 1 records of its serving GMI's E envs, each
/// env's values as wide as algos::rollout_shape says (record T: the last observation, the report
/// and the episodes that ended, a block per role of a game).  Device transport (async.transport):
/// the serving GMI packs its rollout into one of its async.rollouts_in_flight buffers
/// (mpi::SharedSlots), round robin, and the message is record T's report alone; the trainer
/// copies the buffer into its rollout storage, then sends the credit that frees it.
class AsyncLinks {
 public:
  AsyncLinks(const RolePlan& plan, int me, const config::Config& cfg, int E) : E_(E) {
    const std::map<int, std::vector<int>> served = mpi::producers_by_consumer(plan.routes);  // trainer -> servers
    for (const auto& [t, v] : served) {
      if (t == me) servers_ = v;
      for (int s : v)
        if (s == me) trainer_ = t;
    }
    shape_ = algos::rollout_shape(cfg);
    od_ = shape_.obs, ad_ = shape_.actions, rows_ = shape_.rows;
    T_ = cfg.num_steps;
    routes_ = plan.routes;
    in_flight_ = cfg.async.rollouts_in_flight;
    transport_ = cfg.async.transport;
    algo_ = cfg.algo;
    for (std::size_t k = 0; k < servers_.size(); ++k) letters_.push_back(std::make_unique<mpi::Mailbox>(true));
    if (trainer_ >= 0) letters_.push_back(std::make_unique<mpi::Mailbox>(true));  // a serving GMI's, to poll
    credits_left_ = in_flight_;
    credits_posted_.assign(servers_.size(), 0);
    taken_.assign(servers_.size(), 0);
  }

  /// The transport, once this GMI's algorithm exists (`rollout`: its rollout storage in place,
  /// or nullopt): device buffers where async.transport and every GMI allow, else host messages.
  /// Collective over MPI_COMM_WORLD.
  void open(std::optional<algos::DeviceRollout> rollout) {
    double host_only[1] = {rollout ? 0.0 : 1.0};
    mpi::allreduce_max(host_only, 1);
    std::string why;
    if (host_only[0] > 0)
      why = "algo " + algo_ + " keeps no rollout in place (PPO, APPO and multi-agent PPO do)";
    else if (transport_ != "host")
      why = mpi::why_not_shared(MPI_COMM_WORLD, routes_);
    if (transport_ == "device" && !why.empty())
      throw InputError("async.transport: device, but " + why + " (expected auto or host here)");
    device_ = transport_ != "host" && why.empty();
    const int E = E_, tail = int(tail_values());
    if (device_)
      types_ = {{"report", 1, 8 * tail, 8}};
    else
      types_ = {{"obs", E, 4 * od_, 4},      {"final_obs", E, 4 * od_, 4}, {"action", E, 4 * ad_, 4},
                {"logp", E, 4 * rows_, 4},   {"value", E, 4 * rows_, 4},   {"reward", E, 4 * rows_, 4},
                {"terminated", E, rows_, 1}, {"truncated", E, rows_, 1},   {"report", 1, 8 * tail, 8}};
    std::size_t record = 0;
    for (const mpi::PackageType& t : types_) zeros_.emplace_back(t.bytes(), std::byte{0}), record += t.block_bytes();
    const int steps = device_ ? 1 : T_ + 1;
    const double bytes = double(record) * steps;
    if (bytes > double(1 << 30))
      throw InputError(fmt::format("env.num_envs: {} envs x {} steps make a rollout of {:.0f} MiB, one message under "
                                   "mapping.template async (expected at most 1024 MiB: fewer envs per serving GMI or "
                                   "fewer steps per iteration, the algorithm's num_steps)",
                                   E, T_, bytes / (1 << 20)));
    rollouts_ = std::make_unique<mpi::ExperienceChannels>(
        MPI_COMM_WORLD, routes_, types_, mpi::make_plan("single", types_, steps, steps, mpi::TransferCost{}),
        mpi::ChannelOptions{in_flight_});
    if (!device_) return;
    // A serving GMI's arrays as it fills its buffers: a trainer's with each row's share of one
    // serving GMI.  Both ends compute the layout; SharedSlots checks that they agree.
    local_ = std::move(rollout);
    const std::size_t S = servers_.size();
    std::uint64_t key = 1469598103934665603ull;  // FNV-1a over (steps, row bytes) of every array
    std::size_t total = 0;
    for (const algos::DeviceRollout::Array& a : local_->arrays) {
      GMI_REQUIRE(S == 0 || a.row_bytes % S == 0, "async: a trainer's rollout rows do not split among its serving GMIs");
      const std::size_t row = S ? a.row_bytes / S : a.row_bytes;
      packed_.push_back({total, a.steps, row});
      total += (a.steps * row + 255) / 256 * 256;
      for (std::uint64_t v : {std::uint64_t(a.steps), std::uint64_t(row)}) key = (key ^ v) * 1099511628211ull;
    }
    slots_ = std::make_unique<mpi::SharedSlots>(MPI_COMM_WORLD, routes_, total, in_flight_, key);
  }
  /// Whether rollouts go through device buffers (open()).
  bool device() const { return device_; }
  /// "device buffers" or "host messages", for the trainer's description.
  std::string transport_text() const {
    return device_ ? "rollouts through device buffers its trainer copies from (async.transport)"
                   : "rollouts through host messages (async.transport)";
  }

  const std::vector<int>& servers() const { return servers_; }
  int trainer() const { return trainer_; }
  int E() const { return E_; }
  int T() const { return T_; }

  // ---- serving GMI ----
  /// Whether it may make a rollout: fewer than async.rollouts_in_flight of its rollouts are
  /// made and not yet taken by its trainer (credits), and send() would return at once.
  bool room() {
    take_credits();
    return credits_left_ > 0 && rollouts_->room();
  }
  /// Credits that have arrived, counted; returns how many have arrived in all.
  std::int64_t take_credits() {
    while (credits_.poll(trainer_, kCreditTag)) ++credits_left_, ++credits_taken_;
    return credits_taken_;
  }
  /// Whether send() would return at once.
  bool channel_room() { return rollouts_->room(); }
  /// Device transport: enqueues the copies of its rollout (open()'s arrays, as it made it) into
  /// the buffer of its next rollout, on the rollout's space.
  void pack() {
    std::byte* to = slots_->own(int(sent_ % std::uint64_t(slots_->slots())));
    for (std::size_t i = 0; i < packed_.size(); ++i) {
      const Packed& p = packed_[i];
      copy_rows(local_->space, to + p.offset, p.row, local_->arrays[i].data, p.row, p.row, p.steps);
    }
    slots_->sync();
  }
  /// Its rollout (device transport: packed; `last`: the last message after a stop, which needs
  /// no credit) to its trainer; returns once sent.
  void send_packed(const HostRollout& r, const Report& rep, bool last) {
    if (!last) --credits_left_, ++sent_;
    rollouts_->push({report_values(r, rep).data()});
  }
  /// Its rollout (`r` empty: the last message after a stop, which needs no credit) to its
  /// trainer; returns once copied (device transport: send_packed).
  void send(const HostRollout& r, const Report& rep) {
    if (device_) return send_packed(r, rep, rep.last > 0);
    if (!r.obs.empty()) --credits_left_;
    const std::size_t E = std::size_t(E_), od = std::size_t(od_), ad = std::size_t(ad_), rows = std::size_t(rows_);
    const std::vector<double> tail = report_values(r, rep);
    const bool empty = r.obs.empty();
    for (int t = 0; t <= T_; ++t) {
      const std::size_t row = std::size_t(t) * E;
      const auto at = [&](const auto& v, std::size_t i, std::size_t width) -> const void* {
        return empty ? zeros_[i].data() : static_cast<const void*>(v.data() + row * width);
      };
      if (t == T_) {
        rollouts_->push({at(r.obs, 0, od), zeros_[1].data(), zeros_[2].data(), zeros_[3].data(), zeros_[4].data(),
                         zeros_[5].data(), zeros_[6].data(), zeros_[7].data(), tail.data()});
        break;
      }
      rollouts_->push({at(r.obs, 0, od), at(r.final_obs, 1, od), at(r.actions, 2, ad), at(r.logp, 3, rows),
                       at(r.values, 4, rows), at(r.rewards, 5, rows), at(r.terminated, 6, rows),
                       at(r.truncated, 7, rows), zeros_[8].data()});
    }
  }
  /// A letter from its trainer, or nothing.
  std::optional<std::vector<std::byte>> letter() {
    std::optional<mpi::Letter> l = letters_.back()->poll(trainer_, kLetterTag);
    if (!l) return std::nullopt;
    return bytes_of(l->text);
  }
  void reply(const std::vector<std::byte>& m, const std::string& what) {
    mpi::send_bytes(MPI_COMM_WORLD, trainer_, kReplyTag, m, what);
  }

  // ---- trainer ----
  /// Whether serving GMI k's next rollout has arrived.
  bool ready(std::size_t k) { return rollouts_->ready(k); }
  /// Serving GMI k's next rollout into `slot` of `r` (slots of E envs, `slots` of them; nullptr:
  /// read and dropped); returns its report, and its episodes in `episodes` (a block per role of a
  /// game).  Waits, bounded, for what has not arrived.
  Report take(std::size_t k, HostRollout* r, std::size_t slot, std::size_t slots,
              std::vector<envs::EpisodeStats>& episodes) {
    const std::size_t E = std::size_t(E_), N = slots * E, T = std::size_t(T_);
    const std::size_t od = std::size_t(od_), ad = std::size_t(ad_), rows = std::size_t(rows_);
    Report rep;
    if (device_) {
      rep = read_report(rollouts_->next(k).front(), episodes);
      if (rep.last == 0) unpack(k, r ? std::optional<std::size_t>(slot) : std::nullopt);
    }
    for (std::size_t t = 0; t <= T && !device_; ++t) {
      const std::vector<const std::byte*> p = rollouts_->next(k);
      const std::size_t row = t * N + slot * E;  // this slot's envs' rows at step t
      if (r) std::memcpy(r->obs.data() + row * od, p[0], E * od * 4);
      if (t == T) {
        rep = read_report(p[8], episodes);
        break;
      }
      if (!r) continue;
      std::memcpy(r->final_obs.data() + row * od, p[1], E * od * 4);
      std::memcpy(r->actions.data() + row * ad, p[2], E * ad * 4);
      std::memcpy(r->logp.data() + row * rows, p[3], E * rows * 4);
      std::memcpy(r->values.data() + row * rows, p[4], E * rows * 4);
      std::memcpy(r->rewards.data() + row * rows, p[5], E * rows * 4);
      std::memcpy(r->terminated.data() + row * rows, p[6], E * rows);
      std::memcpy(r->truncated.data() + row * rows, p[7], E * rows);
    }
    rollouts_->ready(k);  // post the receive for the next one now
    if (r) credits_.post(servers_[k], kCreditTag, {}), ++credits_posted_[k];  // it may make another
    mpi::progress().beat();
    return rep;
  }
  /// `r` sized for `slots` rollouts of E envs, its episodes cleared.
  void size(HostRollout& r, std::size_t slots) const {
    const std::size_t N = device_ ? 0 : slots * std::size_t(E_), T = std::size_t(T_);
    r.obs.resize((T + 1) * N * std::size_t(od_)), r.final_obs.resize(T * N * std::size_t(od_));
    r.actions.resize(T * N * std::size_t(ad_));
    const std::size_t TNR = T * N * std::size_t(rows_);
    r.logp.resize(TNR), r.values.resize(TNR), r.rewards.resize(TNR);
    r.terminated.resize(TNR), r.truncated.resize(TNR);
    envs::EpisodeStats none;
    none.term_sums.assign(std::size_t(shape_.terms), 0.0);
    r.episodes = none;
    r.role_episodes.assign(shape_.game ? std::size_t(shape_.roles) : 0, none);
  }
  /// A letter to serving GMI k (returns at once); letters it has not picked up yet.
  void post(std::size_t k, const std::vector<std::byte>& m) { letters_[k]->post(servers_[k], kLetterTag, text_of(m)); }
  std::size_t unread(std::size_t k) { return letters_[k]->in_flight(); }
  /// Credits posted to serving GMI k so far.
  std::int64_t credits_posted(std::size_t k) const { return credits_posted_[k]; }
  std::vector<std::byte> receive(std::size_t k, const std::string& what) {
    return mpi::receive_bytes(MPI_COMM_WORLD, servers_[k], kReplyTag, what);
  }

 private:
  /// Values of one block of episode statistics (return, length, count, the statistics) and of a
  /// record T's report with every block.
  std::size_t block_values() const { return 3 + std::size_t(shape_.terms); }
  std::size_t tail_values() const { return kReportValues + std::size_t(shape_.roles) * block_values(); }
  /// Record T's values: the report, then the episodes' blocks.
  std::vector<double> report_values(const HostRollout& r, const Report& rep) const {
    std::vector<double> tail = {rep.version, rep.rollouts, rep.busy_s, rep.wait_s, rep.peak_rss_mib, rep.last};
    tail.resize(tail_values(), 0.0);
    const std::vector<envs::EpisodeStats> blocks = algos::episode_blocks(r);
    for (std::size_t b = 0; b < blocks.size() && b < std::size_t(shape_.roles); ++b) {
      double* v = tail.data() + kReportValues + b * block_values();
      v[0] = blocks[b].return_sum, v[1] = blocks[b].length_sum, v[2] = blocks[b].count;
      for (std::size_t i = 0; i < blocks[b].term_sums.size() && i < std::size_t(shape_.terms); ++i)
        v[3 + i] = blocks[b].term_sums[i];
    }
    return tail;
  }
  Report read_report(const std::byte* p, std::vector<envs::EpisodeStats>& episodes) const {
    std::vector<double> v(tail_values());
    std::memcpy(v.data(), p, v.size() * 8);
    episodes.clear();
    for (std::size_t b = 0; b < std::size_t(shape_.roles); ++b) {
      const auto at = v.begin() + std::ptrdiff_t(kReportValues + b * block_values());
      episodes.push_back(
          envs::EpisodeStats{at[0], at[1], at[2], std::vector<double>(at + 3, at + std::ptrdiff_t(block_values()))});
    }
    return {v[0], v[1], v[2], v[3], v[4], v[5]};
  }
  /// Device transport: serving GMI k's next buffer into `slot` of the trainer's rollout storage
  /// (nullopt: skipped), complete before it returns (the credit then frees the buffer).
  void unpack(std::size_t k, std::optional<std::size_t> slot) {
    const std::byte* from = slots_->producer(k, int(taken_[k]++ % std::uint64_t(slots_->slots())));
    if (!slot) return;
    slots_->sync();
    for (std::size_t i = 0; i < packed_.size(); ++i) {
      const Packed& p = packed_[i];
      const algos::DeviceRollout::Array& to = local_->arrays[i];
      copy_rows(local_->space, to.data + *slot * p.row, to.row_bytes, from + p.offset, p.row, p.row, p.steps);
    }
    local_->space.fence();
  }

  /// Where array i of a serving GMI's rollout lies in its buffers: `steps` rows of `row` bytes.
  struct Packed {
    std::size_t offset = 0, steps = 0, row = 0;
  };

  algos::RolloutShape shape_;
  std::vector<mpi::Route> routes_;
  int in_flight_ = 1;
  std::string transport_, algo_;
  bool device_ = false;
  std::optional<algos::DeviceRollout> local_;  // device transport: this GMI's rollout storage
  std::vector<Packed> packed_;
  std::unique_ptr<mpi::SharedSlots> slots_;
  std::uint64_t sent_ = 0;           // serving GMI: rollouts sent (its next buffer: sent_ % slots)
  std::vector<std::uint64_t> taken_;  // trainer: per serving GMI, rollouts taken
  int E_ = 0, T_ = 0, od_ = 0, ad_ = 0, rows_ = 1, trainer_ = -1;
  std::vector<int> servers_;
  std::vector<mpi::PackageType> types_;
  std::vector<std::vector<std::byte>> zeros_;
  std::unique_ptr<mpi::ExperienceChannels> rollouts_;
  std::vector<std::unique_ptr<mpi::Mailbox>> letters_;  // trainer: one per serving GMI; serving GMI: one
  mpi::Mailbox credits_;                                 // trainer: sends them; serving GMI: polls them
  std::vector<std::int64_t> credits_posted_;             // trainer: per serving GMI
  int credits_left_ = 0;                                 // serving GMI: rollouts it may still make
  std::int64_t credits_taken_ = 0;                       // serving GMI: credits received in all
};

/// The trainer's envs are its serving GMIs': they step there.  Their state passes through here at
/// checkpoints (AsyncLearner fetches it before a save and sends it after a load).
class ServedEnvs final : public envs::VecEnvBase {
 public:
  ServedEnvs(const envs::EnvSpec& spec, int n) {
    spec_ = spec;
    num_envs_ = n;
  }
  void reset_all(const ExecSpace& space, float* obs, std::uint64_t) override {
    // The serving GMIs start their own episodes; the rows here are overwritten by each rollout.
    Kokkos::deep_copy(space, Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                 obs, std::size_t(num_envs_) * std::size_t(spec_.obs_dim)),
                      0.0f);
  }
  void step(const ExecSpace&, const float*, const envs::StepOutputs&) override {
    throw Error("mapping.template async: a trainer GMI's envs step on its serving GMIs");
  }
  envs::EpisodeStats take_episode_stats(const ExecSpace&) override { return {}; }
  std::vector<envs::StateArray> save_state(const ExecSpace&) const override { return state_; }
  void load_state(const ExecSpace&, const std::vector<envs::StateArray>& state) override { state_ = state; }
  std::vector<envs::StateArray> state_;  ///< the serving GMIs' env state, theirs one after another
};

/// The same for a multi-agent game.
class ServedGame final : public envs::MultiAgentVecEnvBase {
 public:
  ServedGame(const envs::MultiAgentSpec& spec, int n) {
    spec_ = spec;
    num_envs_ = n;
  }
  void reset_all(const ExecSpace& space, float* const* obs, std::uint64_t) override {
    for (std::size_t r = 0; r < spec_.roles.size(); ++r)
      Kokkos::deep_copy(space, Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                   obs[r], std::size_t(num_envs_) * std::size_t(spec_.roles[r].agents) *
                                               std::size_t(spec_.roles[r].obs_dim)),
                        0.0f);
  }
  void step(const ExecSpace&, const float* const*, const envs::StepOutputs*) override {
    throw Error("mapping.template async: a trainer GMI's game steps on its serving GMIs");
  }
  std::vector<envs::EpisodeStats> take_episode_stats(const ExecSpace&) override {
    return std::vector<envs::EpisodeStats>(spec_.roles.size());
  }
  std::vector<envs::StateArray> save_state(const ExecSpace&) const override { return state_; }
  void load_state(const ExecSpace&, const std::vector<envs::StateArray>& state) override { state_ = state; }
  std::vector<envs::StateArray> full_state(const ExecSpace&) const override {
    throw Error("mapping.template async: a trainer GMI's game steps on its serving GMIs (no trajectories here)");
  }
  std::vector<envs::StateArray> state_;  ///< the serving GMIs' game state, theirs one after another
};

/// What a trainer saw of its serving GMIs in one iteration.
struct Intake {
  double lag_sum = 0, lag_max = 0;  ///< over the rollouts kept
  double kept = 0, dropped = 0;     ///< rollouts
  double busy_s = 0, wait_s = 0;    ///< the serving GMIs' (their reports' increase)
  double peak_rss_mib = 0;
};

/// A trainer GMI: takes the first rollouts that arrive from its serving GMIs (one update's worth:
/// as many as it has serving GMIs), drops those made with weights more than async.max_policy_lag
/// updates old, learns, and posts its weights to every serving GMI that has picked up the last.
class AsyncLearner final : public algos::Trainer {
 public:
  AsyncLearner(std::shared_ptr<AsyncLinks> links, const config::Config& cfg, std::uint64_t env_offset,
               mpi::GradientReducer* reducer, MPI_Comm trainers, bool lockstep)
      : links_(std::move(links)),
        trainers_(trainers),
        max_lag_(cfg.async.max_policy_lag),
        lockstep_(lockstep) {
    algos::GivenEnvs given;
    if (envs::is_multi_agent(cfg.env.name)) {
      auto game = std::make_unique<ServedGame>(envs::multi_agent_spec(cfg.env.name, config::env_overrides(cfg)),
                                               cfg.env.num_envs);
      served_ = &game->state_;
      given.game = std::move(game);
    } else {
      auto envs = std::make_unique<ServedEnvs>(envs::env_spec(cfg.env.name, config::env_overrides(cfg)), cfg.env.num_envs);
      served_ = &envs->state_;
      given.env = std::move(envs);
    }
    learner_ = algos::make_trainer(cfg, env_offset, reducer, std::move(given));
    learning_ = learner_->served_learning();
    GMI_REQUIRE(learning_, "mapping.template async: " + cfg.algo + " has no served learning");
    links_->open(learning_->device_rollout());
    const std::size_t S = links_->servers().size();
    last_.assign(S, Report{});
    silent_since_.assign(S, std::nullopt);
    links_->size(rollout_, S);
  }
  ~AsyncLearner() override {
    // Unwinding from an error (this trainer's, or every trainer's): the serving GMIs end too.
    if (std::uncaught_exceptions() == 0 || stopped_) return;
    try {
      for (std::size_t k = 0; k < links_->servers().size(); ++k) links_->post(k, op_only(kAbort));
    } catch (const std::exception&) {  // a destructor does not throw: the job ends anyway
    }
  }
  algos::IterationMetrics iterate() override {
    const auto t0 = Clock::now();
    // Rates over the cycle since the last iteration ended (the loop's statistics and checkpoints
    // in between included).
    const Clock::time_point since = last_end_.value_or(t0);
    if (weights_due_) publish(kWeights), weights_due_ = false;  // ea-t: the last update's, after its checkpoint
    // The device transport copies each rollout as it arrives: the iteration begins before (its
    // first timing of the kernels not counted as waiting).
    if (links_->device()) learning_->begin_device_rollout();
    const auto t_wait = Clock::now();
    mpi::progress().phase("waiting for the serving GMIs' rollouts");
    const Intake in = gather();
    const double waited = seconds_since(t_wait);
    algos::IterationMetrics m = links_->device() ? learning_->learn_device_rollout(rollout_, waited)
                                                 : learning_->learn_rollout(rollout_, waited);
    // ea-t holds the weights back until the next iteration starts: a checkpoint written in between
    // asks the serving GMIs for their envs' state before they roll out with them (an exact resume).
    if (lockstep_)
      weights_due_ = true;
    else
      publish(kWeights);
    last_end_ = Clock::now();
    const double took = std::chrono::duration<double>(*last_end_ - since).count();
    // Sums over the trainers (samples per second, drops) and maxima; means are the loop's.
    const double samples = double(links_->E()) * links_->T();
    double sums[3] = {in.dropped * samples, (in.kept + in.dropped) * samples / took, in.kept * samples / took};
    double maxima[2] = {in.lag_max, in.peak_rss_mib};
    mpi::allreduce_sum(sums, 3, trainers_);
    mpi::allreduce_max(maxima, 2, trainers_);
    const double served = in.busy_s + in.wait_s;
    for (double v : {in.lag_sum / std::max(in.kept, 1.0), maxima[0], sums[0], sums[1], sums[2],
                     served > 0 ? in.busy_s / served : std::nan(""), 1.0 - waited / took, maxima[1]})
      m.losses.push_back(v);
    return m;
  }
  void end_run() override {
    // Stop every serving GMI, then take what each still sends up to its last message.
    stopped_ = true;
    for (std::size_t k = 0; k < links_->servers().size(); ++k) {
      Writer w;  // with the credits sent, which the serving GMI receives before it ends
      w.put<std::int32_t>(kStop);
      w.put<std::int64_t>(links_->credits_posted(k));
      links_->post(k, w.out);
    }
    std::vector<envs::EpisodeStats> ignored;
    for (std::size_t k = 0; k < links_->servers().size(); ++k)
      while (links_->take(k, nullptr, 0, 1, ignored).last == 0) {
      }
  }
  std::int64_t iteration() const override { return learner_->iteration(); }
  std::int64_t updates() const override { return learner_->updates(); }
  const envs::EnvSpec& env_spec() const override { return learner_->env_spec(); }
  /// The learner's, then: policy_lag (updates between the weights that made a rollout learnt from
  /// and the weights it updates, mean) and policy_lag_max; dropped_samples (env steps older than
  /// async.max_policy_lag); pps (env steps the serving GMIs delivered per second: predictions),
  /// ttp (env steps learnt from per second); serving_busy (the serving GMIs' share of time rolling
  /// out rather than waiting for room), trainer_busy (the trainers' share of time not waiting for
  /// rollouts); serving_peak_rss_mib.  Sums and maxima over the trainers, the rest means.
  std::vector<std::string> loss_columns() const override {
    std::vector<std::string> c = learner_->loss_columns();
    for (const char* name : {"policy_lag", "policy_lag_max", "dropped_samples", "pps", "ttp", "serving_busy",
                             "trainer_busy", "serving_peak_rss_mib"})
      c.push_back(name);
    return c;
  }
  std::string kernels() const override { return learner_->kernels(); }
  std::string kernel_trials() const override { return learner_->kernel_trials(); }
  std::string describe() const override {
    if (lockstep_)
      return fmt::format("ea-t: {} serving GMI(s) x {} envs per trainer GMI, each rollout made with the newest "
                         "update's weights, {}; {}",
                         links_->servers().size(), links_->E(), links_->transport_text(), learner_->describe());
    return fmt::format("async: {} serving GMI(s) x {} envs per trainer GMI roll out without waiting, {}; each "
                       "update learns from the first {} rollouts to arrive (at most {} updates old); {}",
                       links_->servers().size(), links_->E(), links_->transport_text(), links_->servers().size(),
                       max_lag_, learner_->describe());
  }
  std::vector<float> params_host() const override { return learner_->params_host(); }
  algos::TrainerState save_state() const override {
    // The serving GMIs' envs and the observations their next rollouts start from, then the state
    // of one GMI with their envs.
    std::vector<envs::StateArray> all;
    std::vector<float> obs;
    for (std::size_t k = 0; k < links_->servers().size(); ++k) links_->post(k, op_only(kSave));
    for (std::size_t k = 0; k < links_->servers().size(); ++k) {
      const std::vector<std::byte> b = links_->receive(k, "the environment state of " + server_name(links_->servers()[k]));
      Reader r{b};
      join_part(all, read_arrays(r));
      const std::vector<float> start = r.values<float>();
      obs.insert(obs.end(), start.begin(), start.end());
    }
    *served_ = all;
    learning_->set_start_obs(obs);
    return learner_->save_state();
  }
  void load_state(const algos::TrainerState& s) override {
    learner_->load_state(s);
    publish(kLoad);
    weights_due_ = false;
  }
  void load_shared_state(const algos::TrainerState& s, std::uint64_t first_episode) override {
    // Another layout: the serving GMIs load the shared state themselves and start new episodes.
    learner_->load_shared_state(s, first_episode);
  }
  void inject_nonfinite_gradient() override { learner_->inject_nonfinite_gradient(); }
  bool profile_phases(algos::PhaseClock* clock) override { return learner_->profile_phases(clock); }

 private:
  static std::vector<std::byte> op_only(Op op) {
    Writer w;
    w.put<std::int32_t>(op);
    return w.out;
  }

  /// One update's rollouts into rollout_: the first to arrive, every serving GMI's in turn (each
  /// pass looks at every one, so one with a rollout waiting is never passed over), without those
  /// too old.  Serving GMI k's rollout fills slot k, or, when it sends a second one before another
  /// sends any, the first free slot.  A serving GMI that has sent nothing for reduce.timeout_s
  /// while the trainer waited ends the job (the census names it).
  Intake gather() {
    const std::size_t S = links_->servers().size();
    const std::int64_t now_version = learner_->iteration();
    links_->size(rollout_, S);
    std::vector<bool> filled(S, false);
    Intake in;
    std::size_t got = 0;
    while (got < S) {
      bool any = false;
      for (std::size_t k = 0; k < S && got < S; ++k) {
        if (lockstep_ && filled[k]) continue;  // ea-t: it waits for this update's weights, silent by design
        if (!links_->ready(k)) {
          if (!silent_since_[k]) silent_since_[k] = Clock::now();
          continue;
        }
        any = true;
        silent_since_[k].reset();
        const std::size_t slot =
            filled[k] ? std::size_t(std::find(filled.begin(), filled.end(), false) - filled.begin()) : k;
        std::vector<envs::EpisodeStats> e;
        const Report rep = links_->take(k, &rollout_, slot, S, e);
        in.busy_s += rep.busy_s - last_[k].busy_s, in.wait_s += rep.wait_s - last_[k].wait_s;
        in.peak_rss_mib = std::max(in.peak_rss_mib, rep.peak_rss_mib);
        last_[k] = rep;
        add_episodes(rollout_, e);  // its episodes count either way (they were played); its samples only if recent enough
        const double lag = double(now_version) - rep.version;
        if (lag > max_lag_) {
          ++in.dropped;
          continue;  // its slot takes the next one
        }
        filled[slot] = true;
        ++in.kept, ++got;
        in.lag_sum += lag, in.lag_max = std::max(in.lag_max, lag);
      }
      // One that stays silent is noticed even while the others keep the trainer busy.
      for (std::size_t k = 0; k < S; ++k)
        if (silent_since_[k] && (seconds_since(*silent_since_[k]) > mpi::timeout() || mpi::interrupted()))
          mpi::give_up(fmt::format("a rollout from {} (the others' were taken meanwhile)",
                                   server_name(links_->servers()[k])),
                       {links_->servers()[k]}, seconds_since(*silent_since_[k]));
      if (any) continue;
      mpi::check();
      mpi::progress().beat();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return in;
  }

  /// The weights and observation statistics to the serving GMIs: after an update (kWeights; to
  /// those that have picked up the one before), or with their env state after a restore (kLoad).
  void publish(Op op) {
    const std::size_t S = links_->servers().size();
    std::vector<std::size_t> to;
    for (std::size_t k = 0; k < S; ++k)
      if (op == kLoad || lockstep_ || links_->unread(k) == 0) to.push_back(k);  // ea-t: each waits for every update's
    if (to.empty()) return;
    const std::vector<float> params = learner_->params_host();
    const std::vector<double> rms = learning_->acting_state_host();
    const std::vector<float> obs = op == kLoad ? learning_->start_obs_host() : std::vector<float>{};
    const std::size_t per = obs.size() / std::max<std::size_t>(S, 1);
    if (op == kLoad)
      for (std::size_t k = 0; k < S; ++k) part_of(*served_, k, S);  // every array splits, before any is sent
    for (std::size_t k : to) {
      Writer w;
      w.put<std::int32_t>(op);
      w.put<std::int64_t>(learner_->iteration());
      w.values(params);
      w.values(rms);
      if (op == kLoad) {
        write_arrays(w, part_of(*served_, k, S));
        w.values(std::vector<float>(obs.begin() + std::ptrdiff_t(k * per), obs.begin() + std::ptrdiff_t((k + 1) * per)));
      }
      links_->post(k, w.out);
    }
  }

  std::shared_ptr<AsyncLinks> links_;
  MPI_Comm trainers_;
  double max_lag_ = 0;
  bool lockstep_ = false;     ///< ea-t: the serving GMIs wait for each update's weights
  bool weights_due_ = false;  ///< ea-t: the last update's weights are posted when the next iteration starts
  std::vector<envs::StateArray>* served_ = nullptr;  // the ServedEnvs' or ServedGame's state, owned by learner_
  std::unique_ptr<algos::Trainer> learner_;
  algos::ServedLearning* learning_ = nullptr;  // learner_'s
  HostRollout rollout_;
  std::vector<Report> last_;                                  // per serving GMI: its last report
  std::vector<std::optional<Clock::time_point>> silent_since_;  // per serving GMI: found without a rollout since
  std::optional<Clock::time_point> last_end_;                 // of the last iteration
  bool stopped_ = false;
};

/// A serving GMI: rolls out with the newest weights it holds and sends each rollout to its trainer
/// as soon as the trainer's queue has room, never waiting for an update; picks up its trainer's
/// letters (weights, checkpoint requests, stop) between rollouts and while it waits for room.
class ServingGmi final : public algos::Trainer {
 public:
  /// `trainer_envs`: the envs of its trainer's iterations (its serving GMIs').
  ServingGmi(std::shared_ptr<AsyncLinks> links, const config::Config& cfg, std::uint64_t env_offset, bool lockstep,
             int trainer_envs)
      : links_(std::move(links)), lockstep_(lockstep) {
    owner_ = algos::make_trainer(cfg, env_offset, nullptr, {});
    actor_ = owner_->served_learning();
    GMI_REQUIRE(actor_, "mapping.template async: " + cfg.algo + " has no served learning");
    actor_->prepare_serving(trainer_envs);  // it acts; its trainer learns
    links_->open(actor_->device_rollout());
  }
  algos::IterationMetrics iterate() override {
    throw Error("mapping.template async: a serving GMI runs its own loop (serve), not the trainers' iterations");
  }
  bool serve(const std::function<void(std::int64_t)>& before_rollout) override {
    // Room first, then the rollout: it is made with the newest weights and sent at once.
    for (;;) {
      if (!answer_letters() || !wait_for_room() || !answer_letters()) return true;
      if (lockstep_ && !wait_for_weights()) return true;
      if (mpi::interrupted())  // another GMI's wait ran out: answer its census
        mpi::give_up("its next rollout (" + trainer_name(links_->trainer()) + "'s census)", {links_->trainer()}, 0);
      before_rollout(std::int64_t(report_.rollouts) + 1);
      mpi::progress().phase("serving a rollout");
      const auto t0 = Clock::now();
      if (links_->device())
        actor_->serve_device_rollout(next_index_++, rollout_, [this] { links_->pack(); });
      else
        actor_->serve_rollout(next_index_++, rollout_);
      report_.busy_s += seconds_since(t0);
      ++report_.rollouts;
      report_.version = version_;
      report_.peak_rss_mib = peak_resident_bytes() / (1 << 20);
      links_->send(rollout_, report_);
      sent_version_ = version_;
    }
  }
  std::int64_t iteration() const override { return std::int64_t(version_); }
  std::int64_t updates() const override { return 0; }
  const envs::EnvSpec& env_spec() const override { return owner_->env_spec(); }
  std::vector<std::string> loss_columns() const override { return {}; }
  std::string kernels() const override { return "serving"; }
  std::string describe() const override {
    return fmt::format("serving GMI: {} envs for {}", links_->E(), trainer_name(links_->trainer()));
  }
  std::vector<float> params_host() const override { return owner_->params_host(); }
  algos::TrainerState save_state() const override {
    throw Error("mapping.template async: a serving GMI sends its env state when its trainer asks (serve)");
  }
  void load_state(const algos::TrainerState&) override {
    // The trainer restores first and posts the weights and this GMI's env state.
    std::optional<std::vector<std::byte>> b;
    wait_for_trainer([&] { return bool(b = links_->letter()); }, "the restored state from");
    Reader r{*b};
    const std::int32_t op = r.get<std::int32_t>();
    if (op == kAbort) throw_trainer_error();
    GMI_REQUIRE(op == kLoad, "a serving GMI expected its restored state first");
    take_weights(r);
    actor_->set_env_state(read_arrays(r));
    actor_->set_start_obs(r.values<float>());
    next_index_ = std::int64_t(version_);
    sent_version_ = -1;
  }
  void load_shared_state(const algos::TrainerState& s, std::uint64_t first_episode) override {
    owner_->load_shared_state(s, first_episode);
    version_ = double(s.iteration);
    next_index_ = s.iteration;
    sent_version_ = -1;
  }
  void inject_nonfinite_gradient() override {}

 private:
  static int me() { return mpi::comm_rank(MPI_COMM_WORLD); }
  /// Waits until `done()`; reduce.timeout_s without it (or another GMI's census) ends the job
  /// with a line naming `what` and the trainer ("the restored state from" trainer GMI 0).
  void wait_for_trainer(const std::function<bool()>& done, const std::string& what) const {
    const mpi::Deadline clock;
    while (!done()) {
      if (clock.expired() || mpi::interrupted())
        mpi::give_up(what + " " + trainer_name(links_->trainer()), {links_->trainer()}, clock.elapsed());
      mpi::progress().beat();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  /// The trainer's error is the job's line (rank 0, a trainer, prints it): end quietly.
  [[noreturn]] void throw_trainer_error() const {
    throw InputError(fmt::format("{}: {} ended with an error", server_name(me()), trainer_name(links_->trainer())));
  }
  void take_weights(Reader& r) {
    version_ = double(r.get<std::int64_t>());
    const std::vector<float> params = r.values<float>();
    const std::vector<double> rms = r.values<double>();
    actor_->set_policy(params, rms);
  }
  /// The trainer's letters so far, in order (of several weights, the newest is taken).  Returns
  /// false after a stop, once the last message is sent.
  bool answer_letters() {
    std::optional<std::vector<std::byte>> weights;
    while (std::optional<std::vector<std::byte>> b = links_->letter()) {
      ++letters_seen_;
      Reader r{*b};
      const std::int32_t op = r.get<std::int32_t>();
      if (op == kWeights) {
        weights = std::move(b);
      } else if (op == kSave) {
        Writer w;
        write_arrays(w, actor_->env_state());
        w.values(actor_->start_obs_host());
        links_->reply(w.out, "the environment state for " + trainer_name(links_->trainer()));
      } else if (op == kStop) {
        stop(r.get<std::int64_t>());
        return false;
      } else if (op == kAbort) {
        throw_trainer_error();
      } else {
        throw Error(fmt::format("{}: letter {} from {} (expected weights, a checkpoint request or a stop)",
                                server_name(me()), op, trainer_name(links_->trainer())));
      }
    }
    if (weights) {
      Reader r{*weights};
      r.get<std::int32_t>();
      take_weights(r);
    }
    return true;
  }
  /// Waits, answering letters, until it may make a rollout; false after a stop.
  bool wait_for_room() {
    return wait_answering([&] { return links_->room(); }, "waiting for room in the trainer's queue",
                          "a credit or letter from " + trainer_name(links_->trainer()) + " (it takes no rollout)");
  }
  /// ea-t (lockstep): waits, answering letters, until it holds weights newer than those its last
  /// rollout was made with, the update that rollout fed; false after a stop.
  bool wait_for_weights() {
    return wait_answering([&] { return version_ > sent_version_; }, "waiting for its trainer's next weights",
                          "the weights of the next update from " + trainer_name(links_->trainer()));
  }
  /// Waits until `ready()`, answering letters; false after a stop.  A trainer that sends nothing
  /// (no credit, no letter) for reduce.timeout_s ends the job (the census names `what`).
  bool wait_answering(const std::function<bool()>& ready, const char* phase, const std::string& what) {
    if (ready()) return true;
    mpi::progress().phase(phase);
    const auto t0 = Clock::now();
    auto heard = t0;  // the trainer's last sign of life
    while (!ready()) {
      const std::int64_t letters = letters_seen_;
      if (!answer_letters()) return false;
      if (letters_seen_ != letters) heard = Clock::now();
      if (seconds_since(heard) > mpi::timeout() || mpi::interrupted())
        mpi::give_up(what, {links_->trainer()}, seconds_since(heard));
      mpi::check();
      mpi::progress().beat();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    report_.wait_s += seconds_since(t0);
    return true;
  }
  /// After the trainer's stop: every credit it sent taken (none left unreceived), then the last
  /// message, which the trainer takes with what is in flight.
  void stop(std::int64_t credits) {
    wait_for_trainer([&] { return links_->take_credits() >= credits && links_->channel_room(); },
                     "room for the last message to");
    Report last = report_;
    last.last = 1;
    links_->send(HostRollout{}, last);
  }

  std::shared_ptr<AsyncLinks> links_;
  std::unique_ptr<algos::Trainer> owner_;
  algos::ServedLearning* actor_ = nullptr;  // owner_'s
  HostRollout rollout_;
  Report report_;
  double version_ = 0;           ///< the trainer iteration whose weights it holds
  std::int64_t letters_seen_ = 0;  ///< letters from its trainer so far
  std::int64_t next_index_ = 0;  ///< the number of the next rollout (its action noise)
  bool lockstep_ = false;        ///< ea-t: a rollout only with weights newer than the last one's
  double sent_version_ = -1;     ///< the weights its last rollout was made with (-1: none since a start)
};

}  // namespace

config::Config serving_config(const SplitTraining& split, const config::Config& cfg) {
  config::Config c = cfg;
  c.env.num_envs = split.sim_envs;
  // It acts and does not learn: its update buffers only as large as its own share of a minibatch.
  c.batch_size = std::int64_t(split.sim_envs) * cfg.num_steps;
  c.minibatch_size = std::max<std::int64_t>(1, cfg.minibatch_size / std::max(1, split.sims_per_trainer));
  // Off-policy: its trainer's replay takes the transitions; its own holds one vector step.
  if (algos::algorithm(cfg.algo).replay) c.section<algos::ReplayConfig>().capacity = c.env.num_envs;
  return c;
}

algos::MemoryNeeds async_memory_needs(const SplitTraining& split, const config::Config& cfg) {
  const algos::RolloutShape r = algos::rollout_shape(cfg);
  const double T = double(cfg.num_steps), E = double(split.sim_envs), flight = double(cfg.async.rollouts_in_flight);
  // One rollout of E envs: observations (T + 1 steps), the rest T steps.
  const double rollout = E * ((T + 1) * r.obs * 4 + T * (r.obs * 4 + r.actions * 4 + r.rows * (3 * 4 + 2)));
  algos::MemoryNeeds m;
  m.drivers = {"async.rollouts_in_flight"};
  // The transport auto will take, where serving GMIs share their trainers' GPUs (the layouts of
  // the async templates); the open() at start-up checks it.
  const bool device = cfg.async.transport != "host" && algos::algorithm(cfg.algo).device_rollouts;
  if (device) {
    if (!split.trainer) m.device_bytes += flight * rollout;  // its buffers
    return m;
  }
  // Host messages: a trainer's rollout of its S serving GMIs and the receives posted for each; a
  // serving GMI's rollout, its sends in flight and the batch being filled.
  const double copies = split.trainer ? (1 + flight) * rollout * split.sims_per_trainer : (2 + flight) * rollout;
  (device_is_host() ? m.device_bytes : m.host_bytes) += copies;
  return m;
}

std::unique_ptr<algos::Trainer> make_async_trainer(const SplitTraining& split, const config::Config& cfg,
                                                   mpi::GradientReducer* reducer, MPI_Comm trainers) {
  auto links = std::make_shared<AsyncLinks>(split.plan, split.me, cfg, split.sim_envs);
  if (split.trainer)
    return std::make_unique<AsyncLearner>(std::move(links), cfg, split.env_offset(), reducer, trainers, split.lockstep);
  return std::make_unique<ServingGmi>(std::move(links), serving_config(split, cfg), split.env_offset(), split.lockstep,
                                      split.sims_per_trainer * split.sim_envs);
}

}  // namespace gmi::instances
