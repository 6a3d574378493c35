#include "src/algos/td3/td3.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kernels/core/error.hpp"
#include "kernels/core/host_copy.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/init.hpp"
#include "kernels/optim/polyak.hpp"
#include "kernels/rl/td3_loss.hpp"
#include "src/algos/replay_section.hpp"
#include "src/algos/trainer_state.hpp"

namespace gmi::algos {
namespace {

enum Kind { kCritic = 0, kActor = 1 };
enum Purpose : std::uint64_t { kTargetNoise = 0 };

/// td3_actions' arguments for B rows of actor outputs into `actions`, with no noise (set sigma,
/// clip and the counter for noise).
rl::Td3ActionArgs action_args(int B, int A, const float* actor_out, const View1<float>& scale,
                              const View1<float>& bias, const float* low, const float* high, float* actions) {
  rl::Td3ActionArgs a;
  a.B = B;
  a.act_dim = A;
  a.actor_out = actor_out;
  a.scale = scale.data();
  a.bias = bias.data();
  a.low = low;
  a.high = high;
  a.actions = actions;
  return a;
}

}  // namespace

Td3Networks Td3Trainer::networks(const config::Config& cfg) {
  return actor_twin_q(cfg, envs::env_spec(cfg.env.name, config::env_overrides(cfg)).act_dim);
}

MemoryNeeds Td3Trainer::memory_needs(const config::Config& cfg) {
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  const Td3Networks n = networks(cfg);
  const double P = double(n.num_params), N = cfg.env.num_envs, B = cfg.section<Td3Config>().batch_size,
               od = spec.obs_dim, A = spec.act_dim;
  double floats = 5 * P;                                    // params, gradients, Adam moments, targets
  floats += N * (5 * od + 2 * A + 2);                       // one vector step's buffers
  floats += B * (2 * od + A + 2);                           // the sampled batch
  floats += B * (3 * (od + A) + 2 * A + 2);                 // Q inputs and their gradients, actions
  floats += nn::MlpWorkspace<float>::size(n.actor, N) + nn::MlpWorkspace<float>::size(n.actor, B) +
            2 * nn::MlpWorkspace<float>::size(n.q1, 2 * B) + nn::MlpWorkspace<float>::size(n.q1, B);
  return replay_trainer_memory(cfg, spec, P, floats, spec.act_dim,
                               {"replay.capacity", "env.num_envs", "td3.batch_size", "policy.q_hidden", "policy.actor_hidden"});
}

Td3Trainer::Td3Trainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer, EnvPtr env)
    // Target updates come with the actor's (update()), as CleanRL: none from the schedule.
    : OffPolicyTrainer(cfg, env_offset, reducer, networks(cfg).num_params,
                       UpdateSchedule{cfg.section<Td3Config>().updates_per_step, cfg.section<Td3Config>().learning_starts,
                                      1, 0}, std::move(env)),
      nets_(networks(cfg)) {
  const envs::EnvSpec& spec = env_->spec();
  // Weights as torch.nn.Linear's defaults (CleanRL's networks), targets a copy.
  std::vector<float> init(P_, 0.0f);
  nn::init_mlp_uniform(init, nets_.actor, std::uint64_t(cfg.train.seed), 0);
  nn::init_mlp_uniform(init, nets_.q1, std::uint64_t(cfg.train.seed), 1);
  nn::init_mlp_uniform(init, nets_.q2, std::uint64_t(cfg.train.seed), 2);
  to_device(params_, init, "TD3 initial parameters");
  target_ = View1<float>("gmi::td3::target", P_);
  Kokkos::deep_copy(target_, params_);
  scale_ = device_copy("gmi::td3::action_scale", action_scale(spec));
  bias_ = device_copy("gmi::td3::action_bias", action_bias(spec));
  const int A = ad_;
  const std::size_t B = std::size_t(batch_size()), in = std::size_t(od_ + A);
  qin_ = View1<float>("gmi::td3::q_input", B * in);
  pi_ = View1<float>("gmi::td3::pi", B * A);
  d_q_ = View1<float>("gmi::td3::d_q", 2 * B);
  d_qin_ = View1<float>("gmi::td3::d_qin", 2 * B * in);
  d_actor_ = View1<float>("gmi::td3::d_actor", B * A);
  ws_act_ = nn::MlpWorkspace<float>(nets_.actor, N_);
  ws_actor_ = nn::MlpWorkspace<float>(nets_.actor, int(B));
  ws_q_ = nn::MlpWorkspace<float>(nets_.q1, int(2 * B));
  ws_qt_ = nn::MlpWorkspace<float>(nets_.q1, int(2 * B));
  ws_q1_ = nn::MlpWorkspace<float>(nets_.q1, int(B));
  space_.fence();
}

std::string Td3Trainer::describe() const {
  const Td3Config& c = cfg_.section<Td3Config>();
  return fmt::format(
      "td3: actor {} + twin Q {} params ({}) | {} envs x {} steps per iteration per GMI | replay {} transitions per "
      "GMI ({}, {:.1f} MiB) | batch {}, {} | actor and targets (tau {}) every {} Q update(s) | noise: acting {}, "
      "target {} clipped to {}",
      nets_.actor.num_params, nets_.q_size, cfg_.policy.activation, N_, T_, cfg_.section<ReplayConfig>().capacity,
      cfg_.section<ReplayConfig>().storage, rl::ReplayBuffer::bytes(replay_.spec()) / (1 << 20), c.batch_size,
      c.updates_per_step > 0 ? fmt::format("{} updates per vector step", c.updates_per_step)
                             : std::string("an update every env step"),
      c.tau, c.policy_frequency, c.exploration_noise, c.policy_noise, c.noise_clip);
}

const float* Td3Trainer::act(std::int64_t k) {
  const std::uint64_t seed = std::uint64_t(cfg_.train.seed);
  if (env_steps_before(k) < cfg_.section<Td3Config>().learning_starts) {
    rl::uniform_actions(space_, N_, ad_, seed, std::uint64_t(k), env_offset_, act_low_.data(), act_high_.data(),
                        actions_.data());
    return actions_.data();
  }
  nn::mlp_forward(space_, nets_.actor, params_.data(), obs_.data(), N_, ws_act_);
  rl::Td3ActionArgs a = action_args(N_, ad_, ws_act_.output(nets_.actor), scale_, bias_, act_low_.data(),
                                     act_high_.data(), actions_.data());
  a.sigma = float(cfg_.section<Td3Config>().exploration_noise);
  a.seed = seed;
  a.counter = std::uint64_t(k) << 8;
  a.stream = rng::kAction;
  a.index = env_offset_;
  rl::td3_actions(space_, a);
  return actions_.data();
}

int Td3Trainer::update_kind(std::int64_t u, std::int64_t g) const {
  // With or without the delayed actor and target updates (update() below).
  return (g >= 0 ? g : u) % cfg_.section<Td3Config>().policy_frequency == 0 ? 1 : 0;
}

void Td3Trainer::update(std::int64_t u, std::int64_t g) {
  const Td3Config& c = cfg_.section<Td3Config>();
  const int B = batch_size(), A = ad_;
  const std::size_t qs = nets_.q_stride;
  // Q target: the target actor's action at s' with clipped noise, the smaller target Q.
  nn::mlp_forward(space_, nets_.actor, target_.data(), batch_.next_obs.data(), B, ws_actor_);
  rl::Td3ActionArgs t = action_args(B, A, ws_actor_.output(nets_.actor), scale_, bias_, act_low_.data(),
                                     act_high_.data(), pi_.data());
  t.sigma = float(c.policy_noise);
  t.clip = float(c.noise_clip);
  t.seed = std::uint64_t(cfg_.train.seed);
  t.counter = std::uint64_t(kTargetNoise) << 4;
  t.device_counter = device_updates();  // the update's index u, read on the device
  t.stream = rng::kPolicyNoise;
  t.index = gmi_ << 40;
  rl::td3_actions(space_, t);
  rl::concat_rows(space_, B, batch_.next_obs.data(), od_, pi_.data(), A, qin_.data());
  nn::mlp_forward_batched(space_, nets_.q1, target_.data(), qs, 2, qin_.data(), B, ws_qt_);
  rl::concat_rows(space_, B, batch_.obs.data(), od_, batch_.actions.data(), A, qin_.data());
  nn::mlp_forward_batched(space_, nets_.q1, params_.data(), qs, 2, qin_.data(), B, ws_q_);
  const Record r = record(kCritic);
  rl::SacCriticArgs l;
  l.B = B;
  l.gamma = float(c.gamma);
  l.log_alpha = nullptr;  // no entropy term
  l.q1 = ws_q_.output(nets_.q1);
  l.q2 = l.q1 + B;
  l.q1_next = ws_qt_.output(nets_.q1);
  l.q2_next = l.q1_next + B;
  l.rewards = batch_.rewards.data();
  l.terminated = batch_.terminated.data();
  l.d_q1 = d_q_.data();
  l.d_q2 = d_q_.data() + B;
  rl::sac_critic_loss(space_, l, r.stats);
  nn::mlp_backward_batched(space_, nets_.q1, params_.data(), qs, 2, qin_.data(), B, ws_q_, d_q_.data(), grads());
  optim::AdamArgs a;
  a.lr = c.q_lr;
  a.eps = c.adam_eps;
  a.max_grad_norm = c.max_grad_norm;
  optimizer_step(nets_.q_begin, nets_.q_size, a, r);
  // Delayed: the actor, then every target network (CleanRL: global_step % policy_frequency == 0;
  // with updates_per_step, the update count).
  if (update_kind(u, g) != 1) return;
  actor_update();
  optim::polyak(space_, P_, target_.data(), params_.data(), c.tau);
}

void Td3Trainer::actor_update() {
  const Td3Config& c = cfg_.section<Td3Config>();
  const int B = batch_size(), A = ad_;
  nn::mlp_forward(space_, nets_.actor, params_.data(), batch_.obs.data(), B, ws_actor_);
  // pi(s) = tanh(mu) * scale + bias, no noise
  rl::td3_actions(space_, action_args(B, A, ws_actor_.output(nets_.actor), scale_, bias_, act_low_.data(),
                                      act_high_.data(), pi_.data()));
  rl::concat_rows(space_, B, batch_.obs.data(), od_, pi_.data(), A, qin_.data());
  nn::mlp_forward(space_, nets_.q1, params_.data(), qin_.data(), B, ws_q1_);
  const Record r = record(kActor);
  rl::Td3ActorArgs s;
  s.B = B;
  s.act_dim = A;
  s.obs_dim = od_;
  s.actor_out = ws_actor_.output(nets_.actor);
  s.scale = scale_.data();
  s.q1 = ws_q1_.output(nets_.q1);
  s.d_q1 = d_q_.data();
  s.d_qin = d_qin_.data();
  s.d_actor_out = d_actor_.data();
  rl::td3_actor_q_grad(space_, s, r.stats);
  // dL/da through Q1 (its parameter gradients are not needed), then through tanh into the actor.
  nn::mlp_backward<float>(space_, nets_.q1, params_.data(), qin_.data(), B, ws_q1_, d_q_.data(), nullptr, d_qin_.data());
  rl::td3_actor_out_grad(space_, s);
  nn::mlp_backward(space_, nets_.actor, params_.data(), batch_.obs.data(), B, ws_actor_, d_actor_.data(), grads());
  optim::AdamArgs a;
  a.lr = c.policy_lr;
  a.eps = c.adam_eps;
  a.max_grad_norm = c.max_grad_norm;
  optimizer_step(0, nets_.actor.num_params, a, r);
}

void Td3Trainer::update_target(int) {}  // with the actor's updates (update())

void Td3Trainer::losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums, const std::vector<double>& counts) const {
  const double B = batch_size();
  auto mean = [&](int kind, int k) { return counts[kind] > 0 ? sums[kind].v[k] / (counts[kind] * B) : std::nan(""); };
  m.losses = {mean(kCritic, 0), mean(kCritic, 1), mean(kCritic, 2), mean(kCritic, 3), mean(kActor, 0)};
  m.learning_rate = cfg_.section<Td3Config>().q_lr;
}

void Td3Trainer::save_extra(TrainerState& s) const {
  s.adam_step = adam_count(kCritic);
  s.counters.emplace_back("adam_step_actor", adam_count(kActor));
  s.tensors.emplace_back("target_params", to_host(target_));
}

void Td3Trainer::load_extra(const TrainerState& s) {
  set_adam_count(kCritic, s.adam_step);
  set_adam_count(kActor, s.counter("adam_step_actor"));
  to_device(target_, required_tensor(s, "target_params", P_, "TD3"), "TD3 target_params");
}

Td3Policy::Td3Policy(const config::Config& cfg, const envs::EnvSpec& spec, const std::vector<float>& params,
                     int capacity)
    : nets_(Td3Trainer::networks(cfg)), sigma_(float(cfg.section<Td3Config>().exploration_noise)) {
  GMI_REQUIRE(params.size() == nets_.num_params, "TD3 policy: parameter count does not match the networks");
  params_ = device_copy("gmi::td3::policy_params", params);
  scale_ = device_copy("gmi::td3::policy_scale", action_scale(spec));
  bias_ = device_copy("gmi::td3::policy_bias", action_bias(spec));
  low_ = device_copy("gmi::td3::policy_low", spec.act_low);
  high_ = device_copy("gmi::td3::policy_high", spec.act_high);
  ws_ = nn::MlpWorkspace<float>(nets_.actor, capacity);
}

void Td3Policy::act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
                    std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) {
  nn::mlp_forward(space, nets_.actor, params_.data(), obs, n, ws_);
  rl::Td3ActionArgs a =
      action_args(n, nets_.act_dim, ws_.output(nets_.actor), scale_, bias_, low_.data(), high_.data(), actions);
  a.sigma = deterministic ? 0.0f : sigma_;
  a.seed = seed;
  a.counter = step << 8;
  a.stream = rng::kAction;
  a.index = env_offset;
  rl::td3_actions(space, a);
  copy_env_actions(space, actions, env_actions, std::size_t(n) * nets_.act_dim);
}

}  // namespace gmi::algos
