#include "src/tools/eval.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <cstring>
#include <optional>
#include <map>

#include "gmi_version.hpp"
#include "kernels/core/host_copy.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/channels.hpp"
#include "mpi/deadline.hpp"
#include "mpi/environment.hpp"
#include "src/algos/actor.hpp"
#include "src/algos/trainer.hpp"
#include "src/checkpoint/checkpoint.hpp"
#include "src/gmi/roles.hpp"
#include "src/gmi/session.hpp"
#include "src/io/h5.hpp"
#include "src/runtime/mpi_command.hpp"
#include "src/algos/replay_section.hpp"

namespace gmi::tools {
namespace {

using Clock = std::chrono::steady_clock;

/// Appends a device buffer's first `n` values to a host vector (trajectory recording).
template <class T>
void append(std::vector<T>& to, const View1<T>& from, std::size_t n) {
  const std::size_t at = to.size();
  to.resize(at + n);
  Kokkos::deep_copy(Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(to.data() + at, n),
                    Kokkos::subview(from, std::make_pair(std::size_t(0), n)));
}

struct Summary {
  double mean = 0, std = 0, min = 0, max = 0;
};

Summary summarize(const std::vector<double>& v) {
  Summary s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / double(v.size()));  // population std, as numpy's default
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

/// Per-env episode bookkeeping on the device: only the first `target` episodes of an env count;
/// the return and length of counted episode k of env i go to slot base(i) + k.
struct EpisodeCounter {
  View1<double> ep_ret, returns;
  View1<int> ep_len, done, target, base, lengths;
  /// After a step: accumulate, record finished episodes; returns the episodes still to come.
  int count(const ExecSpace& space, const View1<float>& reward, const View1<std::uint8_t>& term,
            const View1<std::uint8_t>& trunc) const;
};

int EpisodeCounter::count(const ExecSpace& space, const View1<float>& reward, const View1<std::uint8_t>& term,
                          const View1<std::uint8_t>& trunc) const {
  const auto r = reward;
  const auto te = term;
  const auto tr = trunc;
  const auto ret = ep_ret;
  const auto len = ep_len;
  const auto dn = done;
  const auto tg = target;
  const auto bs = base;
  const auto R = returns;
  const auto L = lengths;
  int left = 0;
  Kokkos::parallel_reduce(
      "gmi::eval::count_episodes", Range(space, 0, int(r.extent(0))),
      KOKKOS_LAMBDA(const int i, int& remaining) {
        ret(i) += double(r(i));
        len(i) += 1;
        if (te(i) || tr(i)) {
          if (dn(i) < tg(i)) {
            R(bs(i) + dn(i)) = ret(i);
            L(bs(i) + dn(i)) = len(i);
            dn(i) += 1;
          }
          ret(i) = 0;
          len(i) = 0;
        }
        remaining += tg(i) - dn(i);
      },
      left);
  return left;
}

/// `path` with ".gmi<r>" before its extension (one trajectory file per GMI).
std::string per_gmi_path(const std::string& path, int rank) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return fmt::format("{}.gmi{}", path, rank);
  return fmt::format("{}.gmi{}{}", path.substr(0, dot), rank, path.substr(dot));
}
/// What evaluation runs: the training config with what evaluation changes, and its sizes.
struct EvalPlan {
  config::Config cfg;
  int envs = 0;              ///< per GMI
  int per_gmi_episodes = 0;  ///< this GMI's share of --episodes
  int trained_envs = 0;      ///< the checkpoint's env.num_envs
};

/// This GMI's share of --episodes when `W` GMIs run episodes and this is the `index`-th (-1: none).
int episodes_of(const EvalOptions& o, int W, int index) {
  return index < 0 ? 0 : o.episodes / W + (index < o.episodes % W ? 1 : 0);
}
/// Envs per GMI: --num-envs, else the checkpoint's count, at most the episodes per GMI.
int envs_for(const EvalOptions& o, int W, int trained_envs) {
  return o.num_envs > 0 ? o.num_envs : std::max(1, std::min(trained_envs, (o.episodes + W - 1) / W));
}

/// Checks the options and the checkpoint (rank 0 checks the whole file, every checksum; every
/// rank gets its answer or its error), then builds the evaluation's config.
EvalPlan plan_eval(const EvalOptions& o, int W, int rank) {
  if (o.episodes < 1) throw InputError("--episodes: expected an integer >= 1");
  config::Overrides ov = config::parse_overrides(o.sets);
  for (const auto& kv : ov)
    if ((kv.first.rfind("env.", 0) != 0 && kv.first.rfind("mapping.", 0) != 0 &&
         kv.first.rfind("channels.", 0) != 0) ||
        kv.first == "env.name")
      throw InputError("--set " + kv.first +
                       ": gmi_drl eval takes env.*, mapping.* and channels.* settings only (not env.name)");
  std::string error, saved;
  checkpoint::Meta meta;
  if (rank == 0) {
    try {
      meta = checkpoint::verify(o.checkpoint);
      saved = meta.config;
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  error = mpi::broadcast_string(error);
  if (!error.empty()) throw InputError(error);
  saved = mpi::broadcast_string(saved);

  // The training config, with what evaluation changes: the envs per GMI, env.* settings.  The
  // rollout and minibatch sizes play no part here; they are set so that any env count is valid.
  EvalPlan p;
  p.per_gmi_episodes = episodes_of(o, W, rank);
  const config::Config trained = config::parse(saved, o.checkpoint, {}, 1);
  p.trained_envs = trained.env.num_envs;
  const int E = envs_for(o, W, p.trained_envs);
  ov.emplace_back("env.num_envs", std::to_string(E));
  ov.emplace_back("ppo.num_steps", "1");
  ov.emplace_back("ppo.num_minibatches", "1");
  ov.emplace_back("replay.capacity", std::to_string(std::max<std::int64_t>(E, trained.section<algos::ReplayConfig>().capacity)));
  // Serving is dp unless --set says otherwise, whatever template the policy trained under.
  if (std::none_of(ov.begin(), ov.end(), [](const auto& kv) { return kv.first == "mapping.template"; }))
    ov.insert(ov.begin(), {"mapping.template", "dp"});
  p.cfg = config::parse(saved, o.checkpoint, ov, W);
  p.envs = E;
  return p;
}

/// Every GMI's trajectory file must be creatable before hours of rollouts: one error, named.
void check_out_dir(const EvalOptions& o, int W, int rank) {
  if (o.out.empty()) return;
  const std::string path = W > 1 ? per_gmi_path(o.out, rank) : o.out;
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  std::string err;
  if (!std::filesystem::is_directory(dir) || access(dir.c_str(), W_OK) != 0)
    err = "--out " + path + ": the directory " + dir.string() + " does not exist or is not writable";
  double failed = err.empty() ? -1 : rank;
  mpi::allreduce_max(&failed, 1);
  if (failed >= 0) throw InputError(mpi::broadcast_string(err, MPI_COMM_WORLD, int(failed)));
}

/// The rollout's device buffers, the episode counter and, with --out, the trajectories: what the
/// agent saw and did at every step, and the simulator state.
struct Rollout {
  Rollout(const envs::VecEnvBase& env, int envs, int episodes, bool record);
  /// Steps every env until this GMI's episodes are done (all GMIs stop together); returns the
  /// steps per env, and in `secs` the time they took (after the reset).
  std::int64_t run(double& secs, const EvalOptions& o, envs::VecEnvBase& env, algos::Policy& actor, int gmi);
  /// Where a step of the envs leaves its results (this rollout's buffers).
  envs::StepOutputs outputs();
  /// Writes the trajectories of this GMI's `steps` steps to `path`.
  void write(const std::string& path, const EvalOptions& o, int gmi, std::int64_t steps,
             const std::vector<double>& my_r, const std::vector<int>& my_l) const;

  const envs::EnvSpec& spec;
  const int E, per_gmi_episodes;
  const std::size_t od, ad, n;
  const bool continuous, record;
  ExecSpace space;
  View1<float> obs, final_obs, actions, env_actions, reward;
  View1<std::uint8_t> term, trunc;
  EpisodeCounter counter;
  float* env_act = nullptr;
  std::vector<float> rec_obs, rec_act, rec_env_act, rec_reward;
  std::vector<std::uint8_t> rec_term, rec_trunc;
  std::vector<envs::StateArray> rec_sim;

 private:
  void step(envs::VecEnvBase& env, algos::Policy& actor, const EvalOptions& o, int gmi, std::int64_t steps,
            const envs::StepOutputs& out);
};

Rollout::Rollout(const envs::VecEnvBase& env, int envs, int episodes, bool rec)
    : spec(env.spec()),
      E(envs),
      per_gmi_episodes(episodes),
      od(spec.obs_dim),
      ad(spec.act_dim),
      n(std::size_t(envs)),
      continuous(!spec.discrete()),
      record(rec) {
  // Episodes per env: as even as possible, and only the first `target` episodes of an env
  // count, so short episodes are not over-represented (finishing first is no advantage).
  std::vector<int> target(E), base(E);
  for (int i = 0, b = 0; i < E; ++i) {
    target[i] = per_gmi_episodes / E + (i < per_gmi_episodes % E ? 1 : 0);
    base[i] = b;
    b += target[i];
  }
  obs = View1<float>("gmi::eval::obs", n * od);
  final_obs = View1<float>("gmi::eval::final_obs", n * od);
  actions = View1<float>("gmi::eval::actions", n * ad);
  env_actions = View1<float>("gmi::eval::env_actions", n * ad);
  reward = View1<float>("gmi::eval::reward", n);
  term = View1<std::uint8_t>("gmi::eval::terminated", n);
  trunc = View1<std::uint8_t>("gmi::eval::truncated", n);
  counter.ep_ret = View1<double>("gmi::eval::ep_return", n);
  counter.ep_len = View1<int>("gmi::eval::ep_length", n);
  counter.done = View1<int>("gmi::eval::done", n);
  counter.target = View1<int>("gmi::eval::target", n);
  counter.base = View1<int>("gmi::eval::base", n);
  counter.returns = View1<double>("gmi::eval::returns", std::max(1, per_gmi_episodes));
  counter.lengths = View1<int>("gmi::eval::lengths", std::max(1, per_gmi_episodes));
  {
    auto ht = Kokkos::create_mirror_view(counter.target);
    auto hb = Kokkos::create_mirror_view(counter.base);
    for (int i = 0; i < E; ++i) ht(i) = target[i], hb(i) = base[i];
    Kokkos::deep_copy(counter.target, ht);
    Kokkos::deep_copy(counter.base, hb);
  }
  env_act = continuous ? env_actions.data() : actions.data();
  if (record) rec_sim = env.simulator_state();
  for (auto& a : rec_sim) std::get<std::vector<double>>(a.values).clear();
}

void Rollout::step(envs::VecEnvBase& env, algos::Policy& actor, const EvalOptions& o, int gmi, std::int64_t steps,
                   const envs::StepOutputs& out) {
  actor.act(space, obs.data(), E, o.deterministic, std::uint64_t(o.seed), std::uint64_t(steps),
            std::uint64_t(gmi) * E, actions.data(), env_act);
  if (record) {
    append(rec_obs, obs, n * od);
    append(rec_act, actions, n * ad);
    if (continuous) append(rec_env_act, env_actions, n * ad);
  }
  env.step(space, env_act, out);
}

envs::StepOutputs Rollout::outputs() {
  envs::StepOutputs out;
  out.next_obs = obs.data();
  out.final_obs = final_obs.data();
  out.reward = reward.data();
  out.terminated = term.data();
  out.truncated = trunc.data();
  return out;
}

std::int64_t Rollout::run(double& secs, const EvalOptions& o, envs::VecEnvBase& env, algos::Policy& actor, int gmi) {
  env.reset_all(space, obs.data(), 0);
  const envs::StepOutputs out = outputs();
  const auto t0 = Clock::now();
  auto last_log = t0;
  std::int64_t steps = 0;
  // A bound no evaluation can need: every counted episode at its time limit, one after another.
  const std::int64_t max_steps =
      std::int64_t(spec.max_episode_steps) * (per_gmi_episodes / E + 2) + 1;
  int remaining = per_gmi_episodes;
  while (true) {
    // Every GMI takes part in the check (a bounded all-reduce), so all stop together.
    double left = remaining;
    mpi::allreduce_sum(&left, 1);
    if (left == 0) break;
    if (Clock::now() - last_log > std::chrono::seconds(10)) {
      spdlog::info("eval: {} of {} episodes done ({} env steps per GMI so far)", o.episodes - std::int64_t(left),
                   o.episodes, steps * E);
      last_log = Clock::now();
    }
    const int chunk = record ? 1 : 8;  // steps between checks
    for (int k = 0; k < chunk && remaining > 0; ++k) {
      if (steps >= max_steps)
        throw Error(fmt::format("eval: {} episodes not done after {} steps per env (the time limit is {})",
                                remaining, steps, spec.max_episode_steps));
      step(env, actor, o, gmi, steps, out);
      ++steps;
      const int left_here = counter.count(space, reward, term, trunc);
      remaining = left_here;
      if (!record) continue;
      append(rec_reward, reward, n);
      append(rec_term, term, n);
      append(rec_trunc, trunc, n);
      if (rec_sim.empty()) continue;
      space.fence();
      const auto now = env.simulator_state();
      for (std::size_t a = 0; a < rec_sim.size(); ++a) {
        auto& to = std::get<std::vector<double>>(rec_sim[a].values);
        const auto& from = std::get<std::vector<double>>(now[a].values);
        to.insert(to.end(), from.begin(), from.end());
      }
    }
  }
  space.fence();
  secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return steps;
}

void Rollout::write(const std::string& path, const EvalOptions& o, int gmi, std::int64_t steps,
                    const std::vector<double>& my_r, const std::vector<int>& my_l) const {
  const hsize_t T = hsize_t(steps);
  // A file this GMI cannot create is its own failure (the others may write theirs): it ends
  // the job with the message, rather than an input error only rank 0 would print.
  io::H5Handle f = [&] {
    try {
      return io::create_file(path);
    } catch (const InputError& e) {
      throw Error(std::string("--out: ") + e.what());
    }
  }();
  io::write(f, "obs", rec_obs.data(), {T, n, od});
  io::write(f, "action", rec_act.data(), {T, n, ad});
  if (continuous) io::write(f, "env_action", rec_env_act.data(), {T, n, ad});
  io::write(f, "reward", rec_reward.data(), {T, n});
  io::write(f, "terminated", rec_term.data(), {T, n});
  io::write(f, "truncated", rec_trunc.data(), {T, n});
  for (const envs::StateArray& a : rec_sim)
    io::write(f, a.name, std::get<std::vector<double>>(a.values).data(), {T, n, hsize_t(a.width)});
  std::vector<double> mine_r(my_r.begin(), my_r.begin() + per_gmi_episodes);
  std::vector<std::int64_t> mine_l(my_l.begin(), my_l.begin() + per_gmi_episodes);
  io::write(f, "episode_return", mine_r.data(), {hsize_t(per_gmi_episodes)});
  io::write(f, "episode_length", mine_l.data(), {hsize_t(per_gmi_episodes)});
  io::write_attribute(f, "env", spec.name);
  io::write_attribute(f, "checkpoint", o.checkpoint);
  io::write_attribute(f, "deterministic", std::int64_t(o.deterministic));
  io::write_attribute(f, "seed", std::int64_t(o.seed));
  io::write_attribute(f, "first_env", std::int64_t(gmi) * E);
  spdlog::info("wrote {} ({} steps x {} envs; simulator state after each step: {})", path, steps, E,
               rec_sim.empty() ? "none for this environment" : "yes");
}

/// Every GMI's episodes, merged on every rank (each GMI fills its own slice of the global list),
/// and the time and env steps of the slowest GMI / all GMIs.
struct Results {
  std::vector<double> my_r, all_r, all_l;
  std::vector<int> my_l;
  Summary R, L;
  double secs = 0, total_steps = 0, rate = 0;
};

/// Every GMI's episodes into one list on every GMI: the `index`-th of the W GMIs that run episodes
/// (-1: this one runs none) contributes its `my_episodes` at its place.
Results merge_results(const EvalOptions& o, std::vector<double> my_r, std::vector<int> my_l, int my_episodes, int W,
                      int index, double secs, double env_steps) {
  Results res;
  mpi::allreduce_max(&secs, 1);
  double total_steps = env_steps;
  mpi::allreduce_sum(&total_steps, 1);
  res.my_r = std::move(my_r);
  res.my_l = std::move(my_l);
  int first = 0;
  for (int r = 0; r < index; ++r) first += episodes_of(o, W, r);
  res.all_r.assign(o.episodes, 0.0);
  res.all_l.assign(o.episodes, 0.0);
  for (int k = 0; k < my_episodes; ++k)
    res.all_r[first + k] = res.my_r[k], res.all_l[first + k] = res.my_l[k];
  mpi::allreduce_sum(res.all_r.data(), o.episodes);
  mpi::allreduce_sum(res.all_l.data(), o.episodes);
  res.R = summarize(res.all_r);
  res.L = summarize(res.all_l);
  res.secs = secs;
  res.total_steps = total_steps;
  res.rate = total_steps / std::max(secs, 1e-9);
  return res;
}

/// The serving templates (paper 003 Fig. 5: dp-mp, mp-dp).  Simulator GMIs step their envs and
/// send each step's observations to their agent GMI through the channels; the agent acts for all
/// its simulators in one batch and sends each its actions back (one channel set per position
/// among an agent's simulators, as every producer has one consumer).  The simulators keep the
/// episode books as under dp, and own the envs dp would give the same number of GMIs, so a
/// deterministic policy serves the same episodes (and sampled actions too while each agent's
/// simulators are consecutive GMIs, as with one agent per GPU).
class SplitServe {
 public:
  SplitServe(const EvalOptions& o, config::Config& cfg, const EvalPlan& plan, const instances::RolePlan& roles,
             const checkpoint::Contents& c, int me)
      : o_(o), cfg_(cfg), c_(c) {
    for (int r = 0; r < int(roles.roles.size()); ++r)
      if (roles.roles[std::size_t(r)] & instances::kSimulator) sims_.push_back(r);
    const auto at = std::find(sims_.begin(), sims_.end(), me);
    index_ = at == sims_.end() ? -1 : int(at - sims_.begin());
    E_ = envs_for(o, S(), plan.trained_envs);
    cfg_.env.num_envs = E_;
    episodes_ = episodes_of(o, S(), index_);
    const std::map<int, std::vector<int>> served = mpi::producers_by_consumer(roles.routes);  // agent -> simulators
    if (served.count(me)) mine_ = served.at(me);
    spec_ = envs::env_spec(cfg_.env.name, config::env_overrides(cfg_));
    // On every GMI (simulators only check it), so that a checkpoint that does not fit is one line.
    policy_ = make_policy(mine_.empty() ? 1 : int(mine_.size()) * E_);
    const mpi::ChannelOptions flow{cfg_.channels.max_in_flight};
    const mpi::PackageType obs{"obs", E_, 4 * spec_.obs_dim, 4}, act{"env_action", E_, 4 * spec_.act_dim, 4};
    states_ = std::make_unique<mpi::ExperienceChannels>(MPI_COMM_WORLD, roles.routes, std::vector{obs},
                                                        mpi::make_plan("single", {obs}, 1, 1, {}), flow);
    for (const std::vector<mpi::Route>& back : mpi::reverse_routes(roles.routes)) {
      for (const mpi::Route& r : back)
        if (r.consumer == me) reply_ = int(replies_.size());
      replies_.push_back(std::make_unique<mpi::ExperienceChannels>(
          MPI_COMM_WORLD, back, std::vector{act}, mpi::make_plan("single", {act}, 1, 1, {}), flow));
    }
    if (!mine_.empty())
      first_sim_ = int(std::find(sims_.begin(), sims_.end(), mine_.front()) - sims_.begin());
  }

  int S() const { return int(sims_.size()); }
  int E() const { return E_; }
  const envs::EnvSpec& spec() const { return spec_; }

  /// Serves until every simulator's episodes are done; the merged results.
  Results run() {
    if (index_ >= 0) {
      env_ = envs::make_vec_env(cfg_.env.name, E_, std::uint64_t(o_.seed), std::uint64_t(index_) * E_,
                                config::env_overrides(cfg_));
      ro_.emplace(*env_, E_, episodes_, false);
    } else {
      start_agent();
    }
    const auto t0 = Clock::now();
    std::int64_t steps = 0, counted = 0;  // counted: the steps taken while this GMI had episodes to go
    int remaining = episodes_;
    if (ro_) env_->reset_all(ro_->space, ro_->obs.data(), 0);
    const std::int64_t max_steps = std::int64_t(spec_.max_episode_steps) * (episodes_ / E_ + 2) + 1;
    while (true) {
      double left = remaining;
      mpi::allreduce_sum(&left, 1);
      if (left == 0) break;
      for (int k = 0; k < 8; ++k, ++steps) {  // every GMI steps alike between checks
        if (!ro_) {
          agent_step(steps);
          continue;
        }
        if (steps >= max_steps)
          throw Error(fmt::format("eval: {} episodes not done after {} steps per env (the time limit is {})",
                                  remaining, steps, spec_.max_episode_steps));
        counted += remaining > 0;
        remaining = simulator_step();
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!ro_) return merge_results(o_, {}, {}, 0, S(), -1, secs, 0.0);
    return merge_results(o_, to_host(ro_->counter.returns), to_host(ro_->counter.lengths), episodes_, S(), index_,
                         secs, double(counted) * E_);
  }

 private:
  std::unique_ptr<algos::Policy> make_policy(int capacity) const {
    try {
      return algos::make_policy(cfg_, spec_, c_.state.params, c_.state.obs_rms, capacity);
    } catch (const InputError& e) {
      throw InputError(o_.checkpoint + ": " + e.what());
    }
  }

  void start_agent() {
    const int n = int(mine_.size()) * E_;
    obs_ = View1<float>("gmi::eval::agent_obs", std::size_t(n) * spec_.obs_dim);
    act_ = View1<float>("gmi::eval::agent_actions", std::size_t(n) * spec_.act_dim);
    env_act_ = View1<float>("gmi::eval::agent_env_actions", std::size_t(n) * spec_.act_dim);
    obs_h_ = Kokkos::create_mirror_view(obs_);
    act_h_ = Kokkos::create_mirror_view(act_);
  }

  /// One step of every simulator this agent serves, in one batch.
  void agent_step(std::int64_t step) {
    const std::size_t od = std::size_t(E_) * spec_.obs_dim, ad = std::size_t(E_) * spec_.act_dim;
    for (std::size_t k = 0; k < mine_.size(); ++k)
      std::memcpy(obs_h_.data() + k * od, states_->next(k)[0], od * sizeof(float));
    Kokkos::deep_copy(space_, obs_, obs_h_);
    const bool continuous = !spec_.discrete();
    policy_->act(space_, obs_.data(), int(mine_.size()) * E_, o_.deterministic, std::uint64_t(o_.seed),
                 std::uint64_t(step), std::uint64_t(first_sim_) * E_, act_.data(),
                 continuous ? env_act_.data() : act_.data());
    Kokkos::deep_copy(space_, act_h_, continuous ? env_act_ : act_);
    space_.fence();
    for (std::size_t k = 0; k < mine_.size(); ++k) replies_[k]->push({act_h_.data() + k * ad});
  }

  /// One step of this simulator's envs with the actions its agent sends; the episodes still to come.
  int simulator_step() {
    Rollout& ro = *ro_;
    if (obs_h_.size() == 0) {
      obs_h_ = Kokkos::create_mirror_view(ro.obs);
      act_h_ = Kokkos::create_mirror_view(ro.continuous ? ro.env_actions : ro.actions);
    }
    Kokkos::deep_copy(ro.space, obs_h_, ro.obs);
    ro.space.fence();
    states_->push({obs_h_.data()});
    std::memcpy(act_h_.data(), replies_[std::size_t(reply_)]->next(0)[0], act_h_.size() * sizeof(float));
    Kokkos::deep_copy(ro.space, ro.continuous ? ro.env_actions : ro.actions, act_h_);
    env_->step(ro.space, ro.env_act, ro.outputs());
    return ro.counter.count(ro.space, ro.reward, ro.term, ro.trunc);
  }

  const EvalOptions& o_;
  config::Config& cfg_;
  const checkpoint::Contents& c_;
  std::vector<int> sims_, mine_;
  int index_ = -1, E_ = 0, episodes_ = 0, reply_ = -1, first_sim_ = 0;
  envs::EnvSpec spec_;
  std::unique_ptr<mpi::ExperienceChannels> states_;
  std::vector<std::unique_ptr<mpi::ExperienceChannels>> replies_;
  std::unique_ptr<envs::VecEnvBase> env_;
  std::optional<Rollout> ro_;
  std::unique_ptr<algos::Policy> policy_;
  ExecSpace space_;
  View1<float> obs_, act_, env_act_;
  View1<float>::HostMirror obs_h_, act_h_;
};

void write_json(const EvalOptions& o, const std::string& env, int W, int E, const Results& res,
                const std::string& mapping, int simulators) {
  const Summary& R = res.R;
  const Summary& L = res.L;
  nlohmann::json j = {{"tool", "eval"},
                      {"gmi_drl_version", GMI_DRL_VERSION},
                      {"checkpoint", o.checkpoint},
                      {"env", env},
                      {"device", instances::device_description()},
                      {"gmis", W},
                      {"mapping_template", mapping},
                      {"simulator_gmis", simulators},
                      {"envs_per_gmi", E},
                      {"deterministic", o.deterministic},
                      {"seed", o.seed},
                      {"episodes", o.episodes},
                      {"return_mean", R.mean},
                      {"return_std", R.std},
                      {"return_min", R.min},
                      {"return_max", R.max},
                      {"length_mean", L.mean},
                      {"length_std", L.std},
                      {"env_steps", res.total_steps},
                      {"seconds", res.secs},
                      {"env_steps_per_s", res.rate},
                      {"returns", res.all_r},
                      {"lengths", res.all_l}};
  std::ofstream f(o.json);
  if (!f) throw InputError(o.json + ": cannot write");
  f << j.dump(2) << "\n";
  spdlog::info("wrote {}", o.json);
}

void log_results(const EvalOptions& o, const Results& res, const std::string& layout) {
  const Summary& R = res.R;
  const Summary& L = res.L;
  spdlog::info("eval: {} episodes: return {:.2f} +- {:.2f} (min {:.2f}, max {:.2f}), length {:.1f} +- {:.1f}; "
               "{:.0f} env steps in {:.2f} s = {:.0f} env steps/s ({})",
               o.episodes, R.mean, R.std, R.min, R.max, L.mean, L.std, res.total_steps, res.secs, res.rate, layout);
}

/// gmi_drl eval under a serving template (SplitServe).
int serve_split(const EvalOptions& o, config::Config& cfg, const EvalPlan& plan, const instances::Session& session,
                const checkpoint::Contents& c, int rank) {
  const instances::RolePlan roles = instances::plan_roles(session.layout(), instances::mapping_request(cfg.mapping));
  if (!roles.serving)
    throw InputError(fmt::format("mapping.template: {} is a training template (gmi_drl eval serves under dp, dp-mp "
                                 "and mp-dp)",
                                 cfg.mapping.template_));
  if (!o.out.empty())
    throw InputError(fmt::format("--out: trajectories are written under mapping.template dp only (not {})",
                                 cfg.mapping.template_));
  spdlog::info("{}", roles.table(session.layout()));
  SplitServe serve(o, cfg, plan, roles, c, rank);
  spdlog::info("eval {} | {} | {} episode(s) over {} simulator GMI(s) x {} envs, mapping.template {} | {} | seed {}",
               o.checkpoint, serve.spec().name, o.episodes, serve.S(), serve.E(), cfg.mapping.template_,
               o.deterministic ? "deterministic (mode)" : "sampled actions", o.seed);
  const Results res = serve.run();
  log_results(o, res, fmt::format("{} simulator GMI(s) x {} envs, {} GMI(s) in all, {}", serve.S(), serve.E(),
                                  roles.roles.size(), cfg.mapping.template_));
  if (!o.json.empty() && rank == 0)
    write_json(o, serve.spec().name, int(roles.roles.size()), serve.E(), res, cfg.mapping.template_, serve.S());
  return 0;
}

}  // namespace

int run_eval(const EvalOptions& o, int* argc, char*** argv) {
  return runtime::run_mpi_command(argc, argv, o.log_level, [&](mpi::Environment& mpi) {
    const int W = mpi.size(), rank = mpi.rank();
    EvalPlan plan = plan_eval(o, W, rank);
    config::Config& cfg = plan.cfg;
    const int E = plan.envs;
    mpi::set_timeout(cfg.reduce.timeout_s);
    check_out_dir(o, W, rank);
    instances::Session session(cfg, mpi);
    cfg.env.threads = session.env_threads(cfg.env.threads);
    const int gmi = session.me().gmi_rank;
    const checkpoint::Contents c = checkpoint::read(o.checkpoint, -1);
    if (cfg.mapping.template_ != "dp") return serve_split(o, cfg, plan, session, c, rank);
    auto env = envs::make_vec_env(cfg.env.name, E, std::uint64_t(o.seed), std::uint64_t(gmi) * E,
                                  config::env_overrides(cfg));
    const envs::EnvSpec& spec = env->spec();
    std::unique_ptr<algos::Policy> policy;
    try {
      policy = algos::make_policy(cfg, spec, c.state.params, c.state.obs_rms, E);
    } catch (const InputError& e) {
      throw InputError(o.checkpoint + ": " + e.what());
    }
    Rollout ro(*env, E, plan.per_gmi_episodes, !o.out.empty());
    spdlog::info("eval {} | {} | {} episode(s) over {} GMI(s) x {} envs | {} | seed {}", o.checkpoint, spec.name,
                 o.episodes, W, E, o.deterministic ? "deterministic (mode)" : "sampled actions", o.seed);
    double secs = 0;
    const std::int64_t steps = ro.run(secs, o, *env, *policy, gmi);
    const Results res = merge_results(o, to_host(ro.counter.returns), to_host(ro.counter.lengths), ro.per_gmi_episodes,
                                      W, rank, secs, double(steps) * E);
    log_results(o, res, fmt::format("{} GMI(s) x {} envs", W, E));
    if (ro.record) ro.write(W > 1 ? per_gmi_path(o.out, rank) : o.out, o, gmi, steps, res.my_r, res.my_l);
    if (!o.json.empty() && rank == 0) write_json(o, spec.name, W, E, res, "dp", W);
    return 0;
  });
}

}  // namespace gmi::tools
