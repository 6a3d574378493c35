#include "src/algos/dqn/dqn.hpp"
#include "src/algos/replay_section.hpp"
#include "src/algos/dqn/section.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "kernels/core/host_copy.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/init.hpp"
#include "kernels/optim/polyak.hpp"
#include "kernels/rl/q_learning.hpp"
#include "src/algos/trainer_state.hpp"

namespace gmi::algos {
namespace {


}  // namespace

nn::MlpLayout DqnTrainer::network(const config::Config& cfg) {
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  return nn::MlpLayout(spec.obs_dim, cfg.policy.q_hidden, rl::q_outputs(spec.num_actions, cfg.section<DqnConfig>().dueling),
                       nn::parse_activation(cfg.policy.activation), 0);
}

MemoryNeeds DqnTrainer::memory_needs(const config::Config& cfg) {
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  const nn::MlpLayout q = network(cfg);
  const double P = double(q.num_params), N = cfg.env.num_envs, B = cfg.section<DqnConfig>().batch_size, od = spec.obs_dim;
  double floats = 5 * P;                                   // params, gradients, Adam moments, target
  floats += N * (5 * od + 4);                              // one vector step's buffers
  floats += B * (2 * od + 3) + B * q.out();                // the sampled batch, the loss gradient
  floats += nn::MlpWorkspace<float>::size(q, N) + 3 * nn::MlpWorkspace<float>::size(q, B);
  return replay_trainer_memory(cfg, spec, P, floats, 1,
                               {"replay.capacity", "env.num_envs", "dqn.batch_size", "policy.q_hidden"});
}

DqnTrainer::DqnTrainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer, EnvPtr env)
    : OffPolicyTrainer(cfg, env_offset, reducer, network(cfg).num_params,
                       UpdateSchedule{cfg.section<DqnConfig>().updates_per_step, cfg.section<DqnConfig>().learning_starts, cfg.section<DqnConfig>().train_frequency,
                                      cfg.section<DqnConfig>().target_network_frequency}, std::move(env)),
      q_(network(cfg)),
      n_(env_->spec().num_actions),
      decay_env_steps_(cfg.section<DqnConfig>().exploration_fraction * double(cfg.train.total_env_steps)) {
  std::vector<float> init(P_, 0.0f);
  nn::init_mlp_uniform(init, q_, std::uint64_t(cfg.train.seed), 0);
  to_device(params_, init, "DQN initial parameters");
  target_ = View1<float>("gmi::dqn::target", P_);
  Kokkos::deep_copy(target_, params_);  // CleanRL: target_network.load_state_dict(q_network.state_dict())
  const int B = batch_size();
  d_out_ = View1<float>("gmi::dqn::d_out", std::size_t(B) * q_.out());
  ws_act_ = nn::MlpWorkspace<float>(q_, N_);
  ws_q_ = nn::MlpWorkspace<float>(q_, B);
  ws_next_target_ = nn::MlpWorkspace<float>(q_, B);
  if (cfg.section<DqnConfig>().double_) ws_next_online_ = nn::MlpWorkspace<float>(q_, B);
  space_.fence();
}

std::string DqnTrainer::describe() const {
  const DqnConfig& d = cfg_.section<DqnConfig>();
  std::string hidden;
  for (int w : cfg_.policy.q_hidden) hidden += (hidden.empty() ? "" : "x") + std::to_string(w);
  return fmt::format(
      "dqn{}{}: Q network {} params ({} {}) | {} envs x {} steps per iteration per GMI | replay {} transitions per GMI "
      "({}, {:.1f} MiB) | batch {}, {} | target every {} env steps (tau {}) | epsilon {} -> {} over {:.0f} env steps",
      d.double_ ? " (double)" : "", d.dueling ? " (dueling)" : "", P_, hidden, cfg_.policy.activation, N_, T_,
      cfg_.section<ReplayConfig>().capacity, cfg_.section<ReplayConfig>().storage, rl::ReplayBuffer::bytes(replay_.spec()) / (1 << 20), d.batch_size,
      d.updates_per_step > 0 ? fmt::format("{} updates per vector step", d.updates_per_step)
                             : fmt::format("an update every {} env steps", d.train_frequency),
      d.target_network_frequency, d.tau, d.start_e, d.end_e, decay_env_steps_);
}

double DqnTrainer::epsilon(std::int64_t k) const {
  // CleanRL: linear_schedule(start_e, end_e, exploration_fraction * total_timesteps, global_step),
  // global_step counting the env steps of all GMIs.
  const DqnConfig& d = cfg_.section<DqnConfig>();
  const double t = double(env_steps_before(k)) * cfg_.world_size;
  const double slope = (d.end_e - d.start_e) / decay_env_steps_;
  return std::max(slope * t + d.start_e, d.end_e);
}

const float* DqnTrainer::act(std::int64_t k) {
  nn::mlp_forward(space_, q_, params_.data(), obs_.data(), N_, ws_act_);
  rl::EpsilonGreedyArgs a;
  a.N = N_;
  a.num_actions = n_;
  a.dueling = cfg_.section<DqnConfig>().dueling;
  a.epsilon = float(epsilon(k));
  a.seed = std::uint64_t(cfg_.train.seed);
  a.step = std::uint64_t(k);
  a.env_offset = env_offset_;
  a.q_out = ws_act_.output(q_);
  a.actions = actions_.data();
  rl::epsilon_greedy(space_, a);
  return actions_.data();
}

void DqnTrainer::update(std::int64_t, std::int64_t) {
  const int B = batch_size();
  nn::mlp_forward(space_, q_, target_.data(), batch_.next_obs.data(), B, ws_next_target_);
  if (cfg_.section<DqnConfig>().double_) nn::mlp_forward(space_, q_, params_.data(), batch_.next_obs.data(), B, ws_next_online_);
  nn::mlp_forward(space_, q_, params_.data(), batch_.obs.data(), B, ws_q_);
  const Record r = record(0);
  rl::DqnLossArgs l;
  l.B = B;
  l.num_actions = n_;
  l.dueling = cfg_.section<DqnConfig>().dueling;
  l.double_q = cfg_.section<DqnConfig>().double_;
  l.gamma = float(cfg_.section<DqnConfig>().gamma);
  l.q_out = ws_q_.output(q_);
  l.next_target = ws_next_target_.output(q_);
  l.next_online = cfg_.section<DqnConfig>().double_ ? ws_next_online_.output(q_) : nullptr;
  l.actions = batch_.actions.data();
  l.rewards = batch_.rewards.data();
  l.terminated = batch_.terminated.data();
  l.d_out = d_out_.data();
  rl::dqn_loss(space_, l, r.stats);
  nn::mlp_backward(space_, q_, params_.data(), batch_.obs.data(), B, ws_q_, d_out_.data(), grads());
  optim::AdamArgs a;
  a.lr = cfg_.section<DqnConfig>().learning_rate;
  a.eps = cfg_.section<DqnConfig>().adam_eps;
  a.max_grad_norm = cfg_.section<DqnConfig>().max_grad_norm;
  optimizer_step(0, P_, a, r);
}

void DqnTrainer::update_target(int times) {
  optim::polyak(space_, P_, target_.data(), params_.data(), 1.0 - std::pow(1.0 - cfg_.section<DqnConfig>().tau, times));
}

void DqnTrainer::losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums, const std::vector<double>& counts) const {
  const double n = counts[0] * batch_size();
  m.losses = {n > 0 ? sums[0].v[0] / n : std::nan(""), n > 0 ? sums[0].v[1] / n : std::nan(""),
              epsilon((iteration_ + 1) * T_ - 1)};  // the iteration's last vector step's (its envs may have acted elsewhere)
  m.learning_rate = cfg_.section<DqnConfig>().learning_rate;
}

void DqnTrainer::save_extra(TrainerState& s) const {
  s.adam_step = adam_count(0);
  s.tensors.emplace_back("target_params", to_host(target_));
  s.tensors64.emplace_back("epsilon_decay_env_steps", std::vector<double>{decay_env_steps_});
}

void DqnTrainer::set_acting_state(const std::vector<double>& state) {
  GMI_REQUIRE(state.size() == 1, "DQN: the published acting state holds the epsilon schedule's length alone");
  decay_env_steps_ = state[0];
}

void DqnTrainer::load_extra(const TrainerState& s) {
  set_adam_count(0, s.adam_step);
  to_device(target_, required_tensor(s, "target_params", P_, "DQN"), "DQN target_params");
  const double decay = required_tensor64(s, "epsilon_decay_env_steps", 1, "DQN")[0];
  if (decay != decay_env_steps_)
    spdlog::info("epsilon decays over {:.0f} env steps, as in the run this resumes (this config's "
                 "dqn.exploration_fraction * train.total_env_steps = {:.0f})",
                 decay, decay_env_steps_);
  decay_env_steps_ = decay;
}

DqnPolicy::DqnPolicy(const config::Config& cfg, const std::vector<float>& params, int capacity)
    : q_(DqnTrainer::network(cfg)), dueling_(cfg.section<DqnConfig>().dueling), epsilon_(float(cfg.section<DqnConfig>().end_e)) {
  n_ = dueling_ ? q_.out() - 1 : q_.out();
  GMI_REQUIRE(params.size() == q_.num_params, "DQN policy: parameter count does not match the Q network");
  params_ = device_copy("gmi::dqn::policy_params", params);
  ws_ = nn::MlpWorkspace<float>(q_, capacity);
}

void DqnPolicy::act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
                    std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) {
  nn::mlp_forward(space, q_, params_.data(), obs, n, ws_);
  rl::EpsilonGreedyArgs a;
  a.N = n;
  a.num_actions = n_;
  a.dueling = dueling_;
  a.epsilon = deterministic ? 0.0f : epsilon_;
  a.seed = seed;
  a.step = step;
  a.env_offset = env_offset;
  a.q_out = ws_.output(q_);
  a.actions = actions;
  rl::epsilon_greedy(space, a);
  copy_env_actions(space, actions, env_actions, std::size_t(n));
}

}  // namespace gmi::algos
