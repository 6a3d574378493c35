#include "src/gmi/split_training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "mpi/environment.hpp"
#include "src/algos/registry.hpp"

namespace gmi::instances {
namespace {

/// A trainer GMI: the algorithm's trainer on its simulators' envs; each call the training loop
/// makes ends by releasing the simulators.
class AgentTrainer final : public algos::Trainer {
 public:
  AgentTrainer(std::unique_ptr<algos::Trainer> inner, std::shared_ptr<SimulatorLinks> links)
      : inner_(std::move(inner)), links_(std::move(links)) {
    links_->release(inner_->iteration());
  }
  algos::IterationMetrics iterate() override {
    algos::IterationMetrics m = inner_->iterate();
    links_->release(inner_->iteration());
    return m;
  }
  std::int64_t iteration() const override { return inner_->iteration(); }
  std::int64_t updates() const override { return inner_->updates(); }
  const envs::EnvSpec& env_spec() const override { return inner_->env_spec(); }
  std::vector<std::string> loss_columns() const override { return inner_->loss_columns(); }
  std::string kernels() const override { return inner_->kernels(); }
  std::string kernel_trials() const override { return inner_->kernel_trials(); }
  std::string describe() const override {
    return fmt::format("e-at: {} simulator GMI(s) x {} envs per trainer GMI; {}", links_->simulators().size(),
                       links_->sim_envs(), inner_->describe());
  }
  std::vector<float> params_host() const override { return inner_->params_host(); }
  algos::TrainerState save_state() const override {
    algos::TrainerState s = inner_->save_state();
    links_->release(inner_->iteration());
    return s;
  }
  void load_state(const algos::TrainerState& s) override {
    inner_->load_state(s);
    links_->release(inner_->iteration());
  }
  void load_shared_state(const algos::TrainerState& s, std::uint64_t first_episode) override {
    inner_->load_shared_state(s, first_episode);
    links_->release(inner_->iteration());
  }
  void inject_nonfinite_gradient() override { inner_->inject_nonfinite_gradient(); }
  bool profile_phases(algos::PhaseClock* clock) override { return inner_->profile_phases(clock); }

 private:
  std::unique_ptr<algos::Trainer> inner_;
  std::shared_ptr<SimulatorLinks> links_;
};

/// A simulator GMI: serves its trainer's env calls within each call the training loop makes.  Its
/// episodes are counted by its trainer; it reports the iteration its trainer is at and the
/// seconds it spent stepping (time_rollout).
class SimulatorTrainer final : public algos::Trainer {
 public:
  SimulatorTrainer(std::shared_ptr<SimulatorLinks> links, const config::Config& cfg, std::uint64_t env_offset)
      : server_(links, cfg, env_offset), trainer_(links->trainer()), envs_(links->sim_envs()) {
    iteration_ = server_.serve();
  }
  algos::IterationMetrics iterate() override {
    iteration_ = server_.serve();
    algos::IterationMetrics m;
    m.iteration = iteration_;
    m.time_rollout = server_.step_seconds();
    return m;
  }
  std::int64_t iteration() const override { return iteration_; }
  std::int64_t updates() const override { return 0; }
  const envs::EnvSpec& env_spec() const override { return server_.spec(); }
  std::vector<std::string> loss_columns() const override { return {}; }
  std::string kernels() const override { return "simulator"; }
  std::string describe() const override {
    return fmt::format("simulator GMI: {} envs for trainer GMI {}", envs_, trainer_);
  }
  std::vector<float> params_host() const override { return {}; }
  algos::TrainerState save_state() const override {
    iteration_ = server_.serve();
    algos::TrainerState s;
    s.iteration = iteration_;
    return s;
  }
  void load_state(const algos::TrainerState&) override { iteration_ = server_.serve(); }
  void load_shared_state(const algos::TrainerState&, std::uint64_t) override { iteration_ = server_.serve(); }
  void inject_nonfinite_gradient() override {}

 private:
  mutable SimulatorServer server_;
  int trainer_ = 0, envs_ = 0;
  mutable std::int64_t iteration_ = 0;
};

}  // namespace

std::uint64_t SplitTraining::env_offset() const {
  const std::uint64_t per_trainer = std::uint64_t(sims_per_trainer) * std::uint64_t(sim_envs);
  return std::uint64_t(trainer_index) * per_trainer + (trainer ? 0 : std::uint64_t(position) * std::uint64_t(sim_envs));
}

std::vector<int> SplitTraining::simulators() const {
  std::vector<int> out;
  for (std::size_t w = 0; w < plan.roles.size(); ++w)
    if (plan.roles[w] & kSimulator) out.push_back(int(w));
  return out;
}

config::Config trainer_config_of(const config::Config& cfg, int sims_per_trainer, int trainers) {
  config::Config t = cfg;
  t.env.num_envs = sims_per_trainer * cfg.env.num_envs;
  try {
    config::derive(t, trainers);
    config::derive_sizes(t);  // derive() lets e-at's size checks wait for this config
  } catch (const InputError& e) {
    const bool async = cfg.mapping.template_ != "e-at";  // async and ea-t: serving GMIs send rollouts
    throw InputError(fmt::format("under mapping.template {} each trainer GMI {} its {} {} GMIs' envs, {} x env.num_envs "
                                 "= {}: {}",
                                 cfg.mapping.template_, async ? "learns from" : "steps", sims_per_trainer,
                                 async ? "serving" : "simulator", sims_per_trainer, t.env.num_envs, e.what()));
  }
  return t;
}

std::optional<SplitTraining> plan_split_training(const config::Config& cfg, const mpi::Layout& layout, int me) {
  std::optional<SplitTraining> s = plan_split_roles(cfg, layout, me);
  if (s) s->trainer_config = trainer_config_of(cfg, s->sims_per_trainer, int(s->trainers.size()));
  return s;
}

std::optional<SplitTraining> plan_split_roles(const config::Config& cfg, const mpi::Layout& layout, int me) {
  const std::string& name = cfg.mapping.template_;
  if (name == "dp") return std::nullopt;
  SplitTraining s;
  s.plan = plan_roles(layout, mapping_request(cfg.mapping));
  if (s.plan.serving)
    throw InputError(fmt::format("mapping.template: {} is a serving template (gmi_drl eval); training runs under dp, "
                                 "e-at, ea-t or async",
                                 name));
  // ea-t runs on async's machinery in lockstep: each serving GMI waits for the weights of the
  // update its last rollout fed before it makes the next (src/gmi/async_training.hpp).
  s.async = config::served_rollouts(cfg.mapping);
  s.lockstep = name == "ea-t";
  if (s.async && !algos::algorithm(cfg.algo).async_rollouts)
    throw InputError(fmt::format("mapping.template: {} trains {} (serving GMIs send whole rollouts); algo is {}", name,
                                 algos::algorithm_names([](const algos::Algorithm& a) { return a.async_rollouts; }),
                                 cfg.algo));
  if (!s.async && cfg.device.graphs == "on" && !algos::algorithm(cfg.algo).rules.captured_update)
    throw InputError(fmt::format("device.graphs: on captures the rollout of {}, whose envs step on simulator GMIs "
                                 "under mapping.template e-at (use auto or off)",
                                 cfg.algo));
  const std::map<int, std::vector<int>> served = mpi::producers_by_consumer(s.plan.routes);  // trainer -> simulators
  for (const auto& [t, sims] : served) s.trainers.push_back(t);
  // Trainers in GMI-rank order: the order of their communicator (checkpoint rows, env offsets).
  std::sort(s.trainers.begin(), s.trainers.end(), [&](int a, int b) {
    return layout.places[std::size_t(a)].gmi_rank < layout.places[std::size_t(b)].gmi_rank;
  });
  s.sims_per_trainer = int(served.begin()->second.size());
  if (!s.async && cfg.env.batch_size > 0)
    throw InputError(fmt::format("env.batch_size: {}: under mapping.template e-at a trainer steps its simulator GMIs "
                                 "in groups of whole simulators: env.async_halves (the trainer acts for one half of "
                                 "them while the other half steps), with env.batch_size 0",
                                 cfg.env.batch_size));
  if (!s.async && cfg.env.async_halves && s.sims_per_trainer % 2)
    throw InputError(fmt::format("env.async_halves: under mapping.template e-at the halves are of a trainer's "
                                 "simulator GMIs, and each trainer has {} (expected an even number)",
                                 s.sims_per_trainer));
  for (const auto& [t, sims] : served)
    if (int(sims.size()) != s.sims_per_trainer)
      throw InputError(fmt::format(
          "mapping.trainers_per_gpu: {}: trainer GMI {} has {} simulator GMI(s) but trainer GMI {} has {}; under "
          "{} every trainer needs as many (every GPU needs mapping.trainers_per_gpu x (S + 1) GMIs, with the "
          "same S simulators per trainer on every GPU)",
          cfg.mapping.trainers_per_gpu, served.begin()->first, s.sims_per_trainer, t, sims.size(), name));
  s.sim_envs = cfg.env.num_envs;
  s.me = me;
  s.trainer = served.count(me) > 0;
  int mine = me;
  for (const auto& [t, v] : served) {
    const auto at = std::find(v.begin(), v.end(), me);
    if (at != v.end()) mine = t, s.position = int(at - v.begin());
  }
  s.trainer_index = int(std::find(s.trainers.begin(), s.trainers.end(), mine) - s.trainers.begin());
  return s;
}

void agreed(const std::function<void()>& work, MPI_Comm comm) {
  std::string error;
  double input = 0;
  try {
    work();
  } catch (const InputError& e) {
    error = e.what(), input = 1;
  } catch (const Error& e) {
    error = e.what();
  }
  mpi::allreduce_max(&input, 1, comm);
  error = mpi::agree_on_error(error, comm);
  if (error.empty()) return;
  if (input > 0) throw InputError(error);
  throw Error(error);
}

std::unique_ptr<algos::Trainer> make_split_trainer(const SplitTraining& split, const config::Config& cfg,
                                                   mpi::GradientReducer* reducer) {
  auto links = std::make_shared<SimulatorLinks>(split.plan, split.me, cfg, row_groups(cfg, split.sim_envs),
                                                split.sim_envs);
  if (split.trainer) {
    algos::GivenEnvs given;
    if (envs::is_multi_agent(cfg.env.name))
      given.game = std::make_unique<RemoteMultiAgentVecEnv>(links, envs::multi_agent_spec(cfg.env.name, config::env_overrides(cfg)));
    else
      given.env = std::make_unique<RemoteVecEnv>(links, envs::env_spec(cfg.env.name, config::env_overrides(cfg)));
    auto inner = algos::make_trainer(cfg, split.env_offset(), reducer, std::move(given));
    return std::make_unique<AgentTrainer>(std::move(inner), std::move(links));
  }
  config::Config sim = cfg;
  sim.env.num_envs = split.sim_envs;
  return std::make_unique<SimulatorTrainer>(std::move(links), sim, split.env_offset());
}

}  // namespace gmi::instances
