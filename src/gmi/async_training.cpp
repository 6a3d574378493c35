#include "src/gmi/async_training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/channels.hpp"
#include "mpi/progress.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/gmi/state_bytes.hpp"

namespace gmi::instances {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Control messages from a trainer to its serving GMIs on MPI_COMM_WORLD.
constexpr int kControlTag = 7420;
enum Op : std::int32_t { kRelease = 1, kSave = 2, kLoad = 3 };

using HostRollout = algos::PpoTrainer::HostRollout;

/// The channels of an async job (every GMI builds them) and the control messages.  A rollout is
/// one message: num_steps + 1 records of its serving GMI's E envs (record T: the last observation
/// and the episodes that ended).
class AsyncLinks {
 public:
  AsyncLinks(const RolePlan& plan, int me, const config::Config& cfg, int E) : E_(E) {
    const std::map<int, std::vector<int>> served = mpi::producers_by_consumer(plan.routes);  // trainer -> servers
    for (const auto& [t, v] : served) {
      if (t == me) servers_ = v;
      for (int s : v)
        if (s == me) trainer_ = t;
    }
    const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
    od_ = spec.obs_dim, ad_ = spec.act_dim, terms_ = int(spec.reward_terms.size());
    T_ = cfg.num_steps;
    types_ = {{"obs", E, 4 * od_, 4},       {"final_obs", E, 4 * od_, 4}, {"action", E, 4 * ad_, 4},
              {"logp", E, 4, 4},            {"value", E, 4, 4},           {"reward", E, 4, 4},
              {"terminated", E, 1, 1},      {"truncated", E, 1, 1},       {"episodes", 1, 8 * (4 + terms_), 8}};
    std::size_t record = 0;
    for (const mpi::PackageType& t : types_) zeros_.emplace_back(t.bytes(), std::byte{0}), record += t.block_bytes();
    const double bytes = double(record) * (T_ + 1);
    if (bytes > double(1 << 30))
      throw InputError(fmt::format("env.num_envs: {} envs x {} steps make a rollout of {:.0f} MiB, one message under "
                                   "mapping.template async (expected at most 1024 MiB: fewer envs per serving GMI or "
                                   "a shorter ppo.num_steps)",
                                   E, T_, bytes / (1 << 20)));
    const mpi::ChannelOptions flow{cfg.channels.max_in_flight};
    rollouts_ = std::make_unique<mpi::ExperienceChannels>(
        MPI_COMM_WORLD, plan.routes, types_, mpi::make_plan("single", types_, T_ + 1, T_ + 1, mpi::TransferCost{}), flow);
  }

  const std::vector<int>& servers() const { return servers_; }
  int trainer() const { return trainer_; }
  int E() const { return E_; }

  /// Serving GMI: its rollout, made with the weights of the trainer's iteration `version`, to its
  /// trainer (returns once copied; waits only while earlier ones are still in flight).
  void send(const HostRollout& r, std::int64_t version) {
    const std::size_t E = std::size_t(E_), od = std::size_t(od_), ad = std::size_t(ad_);
    std::vector<double> episodes = {double(version), r.episodes.return_sum, r.episodes.length_sum, r.episodes.count};
    episodes.resize(4 + std::size_t(terms_), 0.0);
    for (std::size_t i = 0; i < r.episodes.term_sums.size() && i < std::size_t(terms_); ++i)
      episodes[4 + i] = r.episodes.term_sums[i];
    for (int t = 0; t <= T_; ++t) {
      const std::size_t row = std::size_t(t) * E;
      if (t == T_) {
        rollouts_->push({r.obs.data() + row * od, zeros_[1].data(), zeros_[2].data(), zeros_[3].data(), zeros_[4].data(),
                         zeros_[5].data(), zeros_[6].data(), zeros_[7].data(), episodes.data()});
        break;
      }
      rollouts_->push({r.obs.data() + row * od, r.final_obs.data() + row * od, r.actions.data() + row * ad,
                       r.logp.data() + row, r.values.data() + row, r.rewards.data() + row, r.terminated.data() + row,
                       r.truncated.data() + row, zeros_[8].data()});
    }
  }

  /// Trainer: the next rollout of every serving GMI, as one rollout of their envs one server after
  /// another (waits, bounded, for what has not arrived); `versions`: the iteration whose weights
  /// made each.
  void take(HostRollout& r, std::vector<std::int64_t>& versions) {
    versions.assign(servers_.size(), 0);
    const std::size_t S = servers_.size(), E = std::size_t(E_), N = S * E, T = std::size_t(T_);
    const std::size_t od = std::size_t(od_), ad = std::size_t(ad_);
    r.obs.resize((T + 1) * N * od), r.final_obs.resize(T * N * od), r.actions.resize(T * N * ad);
    r.logp.resize(T * N), r.values.resize(T * N), r.rewards.resize(T * N);
    r.terminated.resize(T * N), r.truncated.resize(T * N);
    r.episodes = envs::EpisodeStats{};
    r.episodes.term_sums.assign(std::size_t(terms_), 0.0);
    for (std::size_t k = 0; k < S; ++k) {
      for (std::size_t t = 0; t <= T; ++t) {
        const std::vector<const std::byte*> p = rollouts_->next(k);
        const std::size_t row = t * N + k * E;  // this server's envs' rows at step t
        std::memcpy(r.obs.data() + row * od, p[0], E * od * 4);
        if (t == T) {
          std::vector<double> e(4 + std::size_t(terms_));
          std::memcpy(e.data(), p[8], e.size() * 8);
          versions[k] = std::int64_t(e[0]);
          r.episodes.return_sum += e[1], r.episodes.length_sum += e[2], r.episodes.count += e[3];
          for (std::size_t i = 4; i < e.size(); ++i) r.episodes.term_sums[i - 4] += e[i];
          break;
        }
        std::memcpy(r.final_obs.data() + row * od, p[1], E * od * 4);
        std::memcpy(r.actions.data() + row * ad, p[2], E * ad * 4);
        std::memcpy(r.logp.data() + row, p[3], E * 4);
        std::memcpy(r.values.data() + row, p[4], E * 4);
        std::memcpy(r.rewards.data() + row, p[5], E * 4);
        std::memcpy(r.terminated.data() + row, p[6], E);
        std::memcpy(r.truncated.data() + row, p[7], E);
      }
      // Post the receive for this server's next rollout now: it is sent before the end of the
      // iteration, and with channels.max_in_flight 1 nothing else would match it at a stop.
      rollouts_->ready(k);
      mpi::progress().beat();
    }
  }

  // ---- control: trainer -> serving GMI (and a serving GMI's answers) ----
  void control(int to, const std::vector<std::byte>& m, const std::string& what) {
    mpi::send_bytes(MPI_COMM_WORLD, to, kControlTag, m, what);
  }
  std::vector<std::byte> receive(int from, const std::string& what) {
    return mpi::receive_bytes(MPI_COMM_WORLD, from, kControlTag, what);
  }

 private:
  int E_ = 0, T_ = 0, od_ = 0, ad_ = 0, terms_ = 0, trainer_ = -1;
  std::vector<int> servers_;
  std::vector<mpi::PackageType> types_;
  std::vector<std::vector<std::byte>> zeros_;
  std::unique_ptr<mpi::ExperienceChannels> rollouts_;
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

std::string server_name(int rank) { return "serving GMI " + std::to_string(rank); }

/// A trainer GMI: learns from its serving GMIs' rollouts and publishes its weights to them.
class AsyncLearner final : public algos::Trainer {
 public:
  AsyncLearner(std::shared_ptr<AsyncLinks> links, const config::Config& cfg, std::uint64_t env_offset,
               mpi::GradientReducer* reducer)
      : links_(std::move(links)) {
    auto envs = std::make_unique<ServedEnvs>(envs::env_spec(cfg.env.name, config::env_overrides(cfg)), cfg.env.num_envs);
    served_ = envs.get();
    learner_ = std::make_unique<algos::PpoTrainer>(cfg, env_offset, reducer, std::move(envs));
  }
  algos::IterationMetrics iterate() override {
    const auto t0 = Clock::now();
    mpi::progress().phase("waiting for the serving GMIs' rollouts");
    std::vector<std::int64_t> versions;
    links_->take(rollout_, versions);
    const double waited = seconds_since(t0);
    double lag = 0;
    for (std::int64_t v : versions) lag += double(learner_->iteration() - v);
    learner_->begin_iteration();
    learner_->adopt_rollout(rollout_);
    algos::IterationMetrics m = learner_->learn(rollout_.episodes, waited);
    m.losses.push_back(lag / double(std::max<std::size_t>(versions.size(), 1)));
    publish(kRelease);
    return m;
  }
  std::int64_t iteration() const override { return learner_->iteration(); }
  std::int64_t updates() const override { return learner_->updates(); }
  const envs::EnvSpec& env_spec() const override { return learner_->env_spec(); }
  /// The learner's, and policy_lag: updates between the weights that made the rollout learnt from
  /// and the weights it updates (mean over the serving GMIs).
  std::vector<std::string> loss_columns() const override {
    std::vector<std::string> c = learner_->loss_columns();
    c.push_back("policy_lag");
    return c;
  }
  std::string kernels() const override { return learner_->kernels(); }
  std::string kernel_trials() const override { return learner_->kernel_trials(); }
  std::string describe() const override {
    return fmt::format("async: {} serving GMI(s) x {} envs per trainer GMI, a rollout of policy lag 1 each per "
                       "update; {}",
                       links_->servers().size(), links_->E(), learner_->describe());
  }
  std::vector<float> params_host() const override { return learner_->params_host(); }
  algos::TrainerState save_state() const override {
    // The serving GMIs' envs and the observations their next rollouts start from, then the state
    // of one GMI with their envs.
    std::vector<envs::StateArray> all;
    std::vector<float> obs;
    for (int s : links_->servers()) {
      Writer w;
      w.put<std::int32_t>(kSave);
      w.put<std::int64_t>(learner_->iteration());
      links_->control(s, w.out, "the checkpoint request to " + server_name(s));
      const std::vector<std::byte> b = links_->receive(s, "the environment state of " + server_name(s));
      Reader r{b};
      join_part(all, read_arrays(r));
      const std::vector<float> start = r.values<float>();
      obs.insert(obs.end(), start.begin(), start.end());
    }
    served_->state_ = all;
    learner_->set_start_obs(obs);
    return learner_->save_state();
  }
  void load_state(const algos::TrainerState& s) override {
    learner_->load_state(s);
    publish(kLoad);
  }
  void load_shared_state(const algos::TrainerState& s, std::uint64_t first_episode) override {
    // Another layout: the serving GMIs load the shared state themselves and start new episodes.
    learner_->load_shared_state(s, first_episode);
  }
  void inject_nonfinite_gradient() override { learner_->inject_nonfinite_gradient(); }
  bool profile_phases(algos::PhaseClock* clock) override { return learner_->profile_phases(clock); }

 private:
  /// The weights and observation statistics to every serving GMI: with the end of an iteration
  /// (kRelease), or with their env state after a restore (kLoad).
  void publish(Op op) const {
    const std::vector<float> params = learner_->params_host();
    const std::vector<double> rms = learner_->obs_rms_host();
    const std::size_t S = links_->servers().size();
    const std::vector<float> obs = op == kLoad ? learner_->start_obs_host() : std::vector<float>{};
    const std::size_t per = obs.size() / std::max<std::size_t>(S, 1);
    if (op == kLoad)
      for (std::size_t k = 0; k < S; ++k) part_of(served_->state_, k, S);  // every array splits, before any is sent
    for (std::size_t k = 0; k < S; ++k) {
      const int s = links_->servers()[k];
      Writer w;
      w.put<std::int32_t>(op);
      w.put<std::int64_t>(learner_->iteration());
      w.values(params);
      w.values(rms);
      if (op == kLoad) {
        write_arrays(w, part_of(served_->state_, k, S));
        w.values(std::vector<float>(obs.begin() + std::ptrdiff_t(k * per), obs.begin() + std::ptrdiff_t((k + 1) * per)));
      }
      links_->control(s, w.out, (op == kLoad ? "the restored state for " : "the new weights for ") + server_name(s));
    }
  }

  std::shared_ptr<AsyncLinks> links_;
  ServedEnvs* served_ = nullptr;  // owned by learner_
  std::unique_ptr<algos::PpoTrainer> learner_;
  HostRollout rollout_;
};

/// A serving GMI: rolls out with the newest weights it holds and sends each rollout to its trainer.
class ServingGmi final : public algos::Trainer {
 public:
  ServingGmi(std::shared_ptr<AsyncLinks> links, const config::Config& cfg, std::uint64_t env_offset)
      : links_(std::move(links)), iterations_(cfg.num_iterations) {
    actor_ = std::make_unique<algos::PpoTrainer>(cfg, env_offset, nullptr, nullptr);
    actor_->freeze();  // it acts; its trainer learns
  }
  algos::IterationMetrics iterate() override {
    const auto t0 = Clock::now();
    mpi::progress().phase("serving rollouts");
    // The first iteration's trainer learns from a rollout made before it; every iteration's
    // rollout but the last run's is learnt from in the next iteration.
    if (fresh_) roll_out(), fresh_ = false;
    if (iteration_ + 1 < iterations_) roll_out();
    const double rolling = seconds_since(t0);
    mpi::progress().phase("waiting for the trainer's weights");
    const std::vector<std::byte> b = links_->receive(links_->trainer(), "the new weights from trainer GMI " +
                                                                            std::to_string(links_->trainer()));
    Reader r{b};
    expect(r, kRelease);
    algos::IterationMetrics m;
    m.iteration = iteration_;
    m.time_rollout = rolling;
    return m;
  }
  std::int64_t iteration() const override { return iteration_; }
  std::int64_t updates() const override { return 0; }
  const envs::EnvSpec& env_spec() const override { return actor_->env_spec(); }
  std::vector<std::string> loss_columns() const override { return {}; }
  std::string kernels() const override { return "serving"; }
  std::string describe() const override {
    return fmt::format("serving GMI: {} envs for trainer GMI {}", links_->E(), links_->trainer());
  }
  std::vector<float> params_host() const override { return actor_->params_host(); }
  algos::TrainerState save_state() const override {
    const std::vector<std::byte> b =
        links_->receive(links_->trainer(), "the checkpoint request from trainer GMI " + std::to_string(links_->trainer()));
    Reader r{b};
    GMI_REQUIRE(r.get<std::int32_t>() == kSave, "a serving GMI expected a checkpoint request");
    Writer w;
    write_arrays(w, actor_->env_state());
    w.values(actor_->start_obs_host());
    links_->control(links_->trainer(), w.out, "the environment state for trainer GMI " + std::to_string(links_->trainer()));
    algos::TrainerState s;
    s.iteration = iteration_;
    return s;
  }
  void load_state(const algos::TrainerState&) override {
    const std::vector<std::byte> b =
        links_->receive(links_->trainer(), "the restored state from trainer GMI " + std::to_string(links_->trainer()));
    Reader r{b};
    expect(r, kLoad);
    actor_->set_env_state(read_arrays(r));
    actor_->set_start_obs(r.values<float>());
    fresh_ = true;
  }
  void load_shared_state(const algos::TrainerState& s, std::uint64_t first_episode) override {
    actor_->load_shared_state(s, first_episode);
    iteration_ = s.iteration;
    next_index_ = iteration_;
    fresh_ = true;
  }
  void inject_nonfinite_gradient() override {}

 private:
  void roll_out() {
    actor_->serve_rollout(next_index_++, rollout_);
    links_->send(rollout_, iteration_);  // the weights of the trainer's iteration_
  }
  /// The header of a control message: its op must be `op`; its iteration, weights and statistics
  /// are taken.
  void expect(Reader& r, Op op) {
    const std::int32_t got = r.get<std::int32_t>();
    GMI_REQUIRE(got == op, fmt::format("a serving GMI expected control message {} from its trainer, got {}", int(op), got));
    iteration_ = r.get<std::int64_t>();
    next_index_ = iteration_ + (op == kLoad ? 0 : 1);  // after a restore: the rollout of that iteration anew
    const std::vector<float> params = r.values<float>();
    const std::vector<double> rms = r.values<double>();
    actor_->set_policy(params, rms);
  }

  std::shared_ptr<AsyncLinks> links_;
  std::unique_ptr<algos::PpoTrainer> actor_;
  HostRollout rollout_;
  std::int64_t iterations_ = 0;
  std::int64_t iteration_ = 0;   ///< the trainer's, as its last message said
  std::int64_t next_index_ = 0;  ///< the number of the next rollout (its action noise)
  bool fresh_ = true;            ///< no rollout made since the start or a restore
};

}  // namespace

config::Config serving_config(const SplitTraining& split, const config::Config& cfg) {
  config::Config c = cfg;
  c.env.num_envs = split.sim_envs;
  // It acts and does not learn: its update buffers only as large as its own share of a minibatch.
  c.batch_size = std::int64_t(split.sim_envs) * cfg.num_steps;
  c.minibatch_size = std::max<std::int64_t>(1, cfg.minibatch_size / std::max(1, split.sims_per_trainer));
  return c;
}

std::unique_ptr<algos::Trainer> make_async_trainer(const SplitTraining& split, const config::Config& cfg,
                                                   mpi::GradientReducer* reducer) {
  auto links = std::make_shared<AsyncLinks>(split.plan, split.me, cfg, split.sim_envs);
  if (split.trainer) return std::make_unique<AsyncLearner>(std::move(links), cfg, split.env_offset(), reducer);
  return std::make_unique<ServingGmi>(std::move(links), serving_config(split, cfg), split.env_offset());
}

}  // namespace gmi::instances
