#include "src/algos/sac/sac.hpp"
#include "src/algos/replay_section.hpp"
#include "src/algos/sac/section.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kernels/core/host_copy.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "kernels/nn/blas.hpp"
#include "kernels/nn/init.hpp"
#include "kernels/optim/polyak.hpp"
#include "kernels/rl/sac_loss.hpp"
#include "src/algos/trainer_state.hpp"

namespace gmi::algos {
namespace {

enum Kind { kCritic = 0, kActor = 1, kAlpha = 2 };
enum Purpose : std::uint64_t { kNextAction = 0, kActorSample = 1, kAlphaSample = 2 };
/// Bits of update_kind(): the event updates the actor (and alpha); it moves the targets.
enum UpdateKindBits : int { kActorKind = 1, kTargetKind = 2 };

}  // namespace

SacNetworks SacTrainer::networks(const config::Config& cfg) {
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  SacNetworks n;
  static_cast<ActorTwinQ&>(n) = actor_twin_q(cfg, 2 * spec.act_dim);
  n.log_alpha = n.q_begin + n.q_size;
  n.num_params = n.log_alpha + 1;
  return n;
}

MemoryNeeds SacTrainer::memory_needs(const config::Config& cfg) {
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  const SacNetworks n = networks(cfg);
  const double P = double(n.num_params), N = cfg.env.num_envs, B = cfg.section<SacConfig>().batch_size, od = spec.obs_dim,
               A = spec.act_dim;
  double floats = 4 * P + double(n.q_size);                  // params, gradients, Adam moments, targets
  floats += N * (5 * od + 2 * A + 2);                        // one vector step's buffers
  floats += B * (2 * od + A + 2);                            // the sampled batch
  floats += B * (4 * (od + A) + 5 * A + 4);                  // Q inputs (online, target) and their gradients, samples
  floats += nn::MlpWorkspace<float>::size(n.actor, N) + nn::MlpWorkspace<float>::size(n.actor, B) + 2 * nn::MlpWorkspace<float>::size(n.q1, 2 * B);
  return replay_trainer_memory(cfg, spec, P, floats, spec.act_dim,
                               {"replay.capacity", "env.num_envs", "sac.batch_size", "policy.q_hidden", "policy.actor_hidden"});
}

SacTrainer::SacTrainer(const config::Config& cfg, std::uint64_t env_offset, mpi::GradientReducer* reducer, EnvPtr env)
    : OffPolicyTrainer(cfg, env_offset, reducer, networks(cfg).num_params,
                       UpdateSchedule{cfg.section<SacConfig>().updates_per_step, cfg.section<SacConfig>().learning_starts, 1,
                                      // with updates_per_step, targets follow the Q updates (update())
                                      cfg.section<SacConfig>().updates_per_step > 0
                                          ? 0
                                          : cfg.section<SacConfig>().target_network_frequency}, std::move(env)),
      nets_(networks(cfg)) {
  const envs::EnvSpec& spec = env_->spec();
  const int A = ad_;
  target_entropy_ = float(cfg.section<SacConfig>().target_entropy ? *cfg.section<SacConfig>().target_entropy : -double(A));
  // Weights as torch.nn.Linear's defaults; log_alpha 0 when tuned (alpha starts at 1, as CleanRL),
  // else log(sac.alpha), never updated.
  std::vector<float> init(P_, 0.0f);
  nn::init_mlp_uniform(init, nets_.actor, std::uint64_t(cfg.train.seed), 0);
  nn::init_mlp_uniform(init, nets_.q1, std::uint64_t(cfg.train.seed), 1);
  nn::init_mlp_uniform(init, nets_.q2, std::uint64_t(cfg.train.seed), 2);
  init[nets_.log_alpha] = cfg.section<SacConfig>().autotune ? 0.0f : float(std::log(cfg.section<SacConfig>().alpha));
  to_device(params_, init, "SAC initial parameters");
  target_ = View1<float>("gmi::sac::target", nets_.q_size);
  Kokkos::deep_copy(target_, Kokkos::subview(params_, std::make_pair(nets_.q_begin, nets_.q_begin + nets_.q_size)));
  const nn::Activation act = nn::parse_activation(cfg.policy.activation);
  q_target_ = nn::MlpLayout(od_ + A, cfg.policy.q_hidden, 1, act, 0);

  scale_ = device_copy("gmi::sac::action_scale", action_scale(spec));
  bias_ = device_copy("gmi::sac::action_bias", action_bias(spec));
  const std::size_t B = std::size_t(batch_size()), in = std::size_t(od_ + A);
  const std::size_t rows = std::max<std::size_t>(B, std::size_t(N_));
  qin_ = View1<float>("gmi::sac::q_input", B * in);
  qin_next_ = View1<float>("gmi::sac::q_next_input", B * in);
  side_ = std::make_unique<SideStream>();
  pi_ = View1<float>("gmi::sac::pi", rows * A);
  logp_ = View1<float>("gmi::sac::logp", rows);
  noise_ = View1<float>("gmi::sac::noise", B * A);
  d_q_ = View1<float>("gmi::sac::d_q", 2 * B);
  d_qin_ = View1<float>("gmi::sac::d_qin", 2 * B * in);
  d_actor_ = View1<float>("gmi::sac::d_actor", B * 2 * A);
  ws_act_ = nn::MlpWorkspace<float>(nets_.actor, N_);
  ws_actor_ = nn::MlpWorkspace<float>(nets_.actor, int(B));
  ws_q_ = nn::MlpWorkspace<float>(nets_.q1, int(2 * B));
  ws_qt_ = nn::MlpWorkspace<float>(nets_.q1, int(2 * B));
  space_.fence();
}

std::string SacTrainer::describe() const {
  const SacConfig& c = cfg_.section<SacConfig>();
  return fmt::format(
      "sac: actor {} + twin Q {} params ({}) | {} envs x {} steps per iteration per GMI | replay {} transitions per "
      "GMI ({}, {:.1f} MiB) | batch {}, {} | actor every {} step(s), target tau {} every {} {} | alpha {}",
      nets_.actor.num_params, nets_.q_size, cfg_.policy.activation, N_, T_, cfg_.section<ReplayConfig>().capacity, cfg_.section<ReplayConfig>().storage,
      rl::ReplayBuffer::bytes(replay_.spec()) / (1 << 20), c.batch_size,
      c.updates_per_step > 0 ? fmt::format("{} updates per vector step", c.updates_per_step)
                             : std::string("an update every env step"),
      c.policy_frequency, c.tau, c.target_network_frequency, c.updates_per_step > 0 ? "Q update(s)" : "env step(s)",
      c.autotune ? fmt::format("tuned towards entropy {}", target_entropy_) : fmt::format("{}", c.alpha));
}

const float* SacTrainer::act(std::int64_t k) {
  const std::uint64_t seed = std::uint64_t(cfg_.train.seed);
  if (env_steps_before(k) < cfg_.section<SacConfig>().learning_starts) {
    rl::uniform_actions(space_, N_, ad_, seed, std::uint64_t(k), env_offset_, act_low_.data(), act_high_.data(),
                        actions_.data());
    return actions_.data();
  }
  nn::mlp_forward(space_, nets_.actor, params_.data(), obs_.data(), N_, ws_act_);
  rl::SquashedGaussianArgs s;
  s.B = N_;
  s.act_dim = ad_;
  s.seed = seed;
  s.counter = std::uint64_t(k) << 8;
  s.stream = rng::kAction;
  s.index = env_offset_;
  s.actor_out = ws_act_.output(nets_.actor);
  s.scale = scale_.data();
  s.bias = bias_.data();
  s.actions = actions_.data();
  rl::squashed_gaussian(space_, s);
  return actions_.data();
}

void SacTrainer::sample_policy(const ExecSpace& sp, const float* obs, std::int64_t u, int purpose) {
  // Reparameterised samples of update u: counter (u << 8 | purpose << 4 | block), index
  // (GMI << 40 | repeat << 24 | row); `purpose` packs the kind and the repeat.
  const int B = batch_size();
  nn::mlp_forward(sp, nets_.actor, params_.data(), obs, B, ws_actor_);
  rl::SquashedGaussianArgs s;
  s.B = B;
  s.act_dim = ad_;
  s.seed = std::uint64_t(cfg_.train.seed);
  // u's bits come from the device's event count (equal to u; what a captured update reads).
  (void)u;
  s.counter = std::uint64_t(purpose & 0xf) << 4;
  s.device_counter = device_updates();
  s.stream = rng::kPolicyNoise;
  s.index = (gmi_ << 40) | (std::uint64_t(purpose >> 4) << 24);
  s.actor_out = ws_actor_.output(nets_.actor);
  s.scale = scale_.data();
  s.bias = bias_.data();
  s.actions = pi_.data();
  s.logp = logp_.data();
  s.noise = noise_.data();
  rl::squashed_gaussian(sp, s);
}

void SacTrainer::update(std::int64_t u, std::int64_t g) {
  const int B = batch_size(), A = ad_;
  const float* log_alpha = params_.data() + nets_.log_alpha;
  // Q target: a' ~ pi(s'), min of the target Qs, the entropy bonus (on the side stream, beside
  // the online Qs' forward pass: the two branches share no buffer).
  const std::size_t qs = nets_.q_stride;
  SideStream* side = side_ && blas::side_streams_safe() ? side_.get() : nullptr;  // (bf16: one stream)
  if (side) side->fork(space_);
  const ExecSpace& tsp = side ? side->space() : space_;
  sample_policy(tsp, batch_.next_obs.data(), u, kNextAction);
  rl::concat_rows(tsp, B, batch_.next_obs.data(), od_, pi_.data(), A, qin_next_.data());
  nn::mlp_forward_batched(tsp, q_target_, target_.data(), qs, 2, qin_next_.data(), B, ws_qt_);
  rl::concat_rows(space_, B, batch_.obs.data(), od_, batch_.actions.data(), A, qin_.data());
  nn::mlp_forward_batched(space_, nets_.q1, params_.data(), qs, 2, qin_.data(), B, ws_q_);
  if (side) side->join(space_);
  {
    const Record r = record(kCritic);
    rl::SacCriticArgs c;
    c.B = B;
    c.gamma = float(cfg_.section<SacConfig>().gamma);
    c.log_alpha = log_alpha;
    c.q1 = ws_q_.output(nets_.q1);
    c.q2 = c.q1 + B;
    c.q1_next = ws_qt_.output(q_target_);
    c.q2_next = c.q1_next + B;
    c.logp_next = logp_.data();
    c.rewards = batch_.rewards.data();
    c.terminated = batch_.terminated.data();
    c.d_q1 = d_q_.data();
    c.d_q2 = d_q_.data() + B;
    rl::sac_critic_loss(space_, c, r.stats);
    nn::mlp_backward_batched(space_, nets_.q1, params_.data(), qs, 2, qin_.data(), B, ws_q_, d_q_.data(), grads());
    optim::AdamArgs a;
    a.lr = cfg_.section<SacConfig>().q_lr;
    a.eps = cfg_.section<SacConfig>().adam_eps;
    a.max_grad_norm = cfg_.section<SacConfig>().max_grad_norm;
    optimizer_step(nets_.q_begin, nets_.q_size, a, r);
  }
  // Delayed actor (and alpha) updates: at every policy_frequency-th step, that many of them
  // (CleanRL: global_step % policy_frequency == 0; with updates_per_step, the update count).
  const int kind = update_kind(u, g);
  if (kind & kActorKind) {
    for (int rep = 0; rep < int(cfg_.section<SacConfig>().policy_frequency); ++rep) {
      actor_update(u, rep);
      if (cfg_.section<SacConfig>().autotune) alpha_update(u, rep);
    }
  }
  // The targets move at the end of the event (after the actor, as CleanRL's loop orders them
  // within a step): every target_network_frequency-th Q update with updates_per_step, else where
  // the event's step index is a multiple of it.
  if (kind & kTargetKind) optim::polyak(space_, nets_.q_size, target_.data(), params_.data() + nets_.q_begin, cfg_.section<SacConfig>().tau);
}

void SacTrainer::actor_update(std::int64_t u, int rep) {
  const int B = batch_size(), A = ad_;
  const float* log_alpha = params_.data() + nets_.log_alpha;
  sample_policy(space_, batch_.obs.data(), u, kActorSample | (rep << 4));
  rl::concat_rows(space_, B, batch_.obs.data(), od_, pi_.data(), A, qin_.data());
  nn::mlp_forward_batched(space_, nets_.q1, params_.data(), nets_.q_stride, 2, qin_.data(), B, ws_q_);
  const Record r = record(kActor);
  rl::SacActorArgs s;
  s.B = B;
  s.act_dim = A;
  s.obs_dim = od_;
  s.log_alpha = log_alpha;
  s.actor_out = ws_actor_.output(nets_.actor);
  s.noise = noise_.data();
  s.scale = scale_.data();
  s.q1 = ws_q_.output(nets_.q1);
  s.q2 = s.q1 + B;
  s.logp = logp_.data();
  s.d_q1 = d_q_.data();
  s.d_q2 = d_q_.data() + B;
  s.d_qin1 = d_qin_.data();
  s.d_qin2 = d_qin_.data() + std::size_t(B) * (od_ + A);
  s.d_actor_out = d_actor_.data();
  rl::sac_actor_q_grad(space_, s, r.stats);
  // dL/da through the Q networks (their parameter gradients are not needed).
  nn::mlp_backward_batched<float>(space_, nets_.q1, params_.data(), nets_.q_stride, 2, qin_.data(), B, ws_q_,
                                  d_q_.data(), nullptr, d_qin_.data());
  rl::sac_actor_out_grad(space_, s);
  nn::mlp_backward(space_, nets_.actor, params_.data(), batch_.obs.data(), B, ws_actor_, d_actor_.data(), grads());
  optim::AdamArgs a;
  a.lr = cfg_.section<SacConfig>().policy_lr;
  a.eps = cfg_.section<SacConfig>().adam_eps;
  a.max_grad_norm = cfg_.section<SacConfig>().max_grad_norm;
  optimizer_step(0, nets_.actor.num_params, a, r);
}

void SacTrainer::alpha_update(std::int64_t u, int rep) {
  const int B = batch_size();
  // A fresh sample from the updated actor (CleanRL), no gradient to the actor.
  sample_policy(space_, batch_.obs.data(), u, kAlphaSample | (rep << 4));
  const Record r = record(kAlpha);
  rl::sac_alpha_grad(space_, B, logp_.data(), target_entropy_, params_.data() + nets_.log_alpha,
                     grads() + nets_.log_alpha, r.stats);
  optim::AdamArgs a;
  a.lr = cfg_.section<SacConfig>().q_lr;
  a.eps = cfg_.section<SacConfig>().adam_eps;
  optimizer_step(nets_.log_alpha, 1, a, r);
}

void SacTrainer::update_target(int times) {
  optim::polyak(space_, nets_.q_size, target_.data(), params_.data() + nets_.q_begin, 1.0 - std::pow(1.0 - cfg_.section<SacConfig>().tau, times));
}

void SacTrainer::losses(IterationMetrics& m, const std::vector<rl::Sums4>& sums, const std::vector<double>& counts) const {
  const double B = batch_size();
  auto mean = [&](int kind, int k) { return counts[kind] > 0 ? sums[kind].v[k] / (counts[kind] * B) : std::nan(""); };
  // alpha now (a host read at the iteration's end)
  float log_alpha = 0;
  Kokkos::deep_copy(Kokkos::View<float, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&log_alpha),
                    Kokkos::subview(params_, nets_.log_alpha));
  const double alpha_loss = counts[kAlpha] > 0 ? sums[kAlpha].v[0] / counts[kAlpha] : std::nan("");
  m.losses = {mean(kCritic, 0), mean(kCritic, 1), mean(kCritic, 2), mean(kCritic, 3),
              mean(kActor, 0),  -mean(kActor, 1), std::exp(double(log_alpha)), alpha_loss};
  m.learning_rate = cfg_.section<SacConfig>().q_lr;
}

int SacTrainer::update_kind(std::int64_t u, std::int64_t g) const {
  // With or without the delayed actor and alpha updates; with updates_per_step, with or without a
  // target update (update() above).
  const SacConfig& c = cfg_.section<SacConfig>();
  int kind = (g >= 0 ? g : u) % c.policy_frequency == 0 ? kActorKind : 0;
  // (`gmi_drl bench --mode update`'s events have no step index: no targets there)
  if (c.updates_per_step > 0 ? u % c.target_network_frequency == 0 : g >= 0 && g % c.target_network_frequency == 0)
    kind |= kTargetKind;
  return kind;
}

int SacTrainer::targets_within(std::int64_t u, std::int64_t g) const { return (update_kind(u, g) & kTargetKind) ? 1 : 0; }

bool SacTrainer::update_changes_actor(std::int64_t u, std::int64_t g) const { return (update_kind(u, g) & kActorKind) != 0; }

void SacTrainer::save_extra(TrainerState& s) const {
  s.adam_step = adam_count(kCritic);
  s.counters.emplace_back("adam_step_actor", adam_count(kActor));
  s.counters.emplace_back("adam_step_alpha", adam_count(kAlpha));
  s.tensors.emplace_back("target_q", to_host(target_));
}

void SacTrainer::load_extra(const TrainerState& s) {
  set_adam_count(kCritic, s.adam_step);
  set_adam_count(kActor, s.counter("adam_step_actor"));
  set_adam_count(kAlpha, s.counter("adam_step_alpha"));
  to_device(target_, required_tensor(s, "target_q", nets_.q_size, "SAC"), "SAC target_q");
}

SacPolicy::SacPolicy(const config::Config& cfg, const envs::EnvSpec& spec, const std::vector<float>& params,
                     int capacity)
    : nets_(SacTrainer::networks(cfg)) {
  GMI_REQUIRE(params.size() == nets_.num_params, "SAC policy: parameter count does not match the networks");
  params_ = device_copy("gmi::sac::policy_params", params);
  scale_ = device_copy("gmi::sac::policy_scale", action_scale(spec));
  bias_ = device_copy("gmi::sac::policy_bias", action_bias(spec));
  ws_ = nn::MlpWorkspace<float>(nets_.actor, capacity);
}

void SacPolicy::act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
                    std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) {
  nn::mlp_forward(space, nets_.actor, params_.data(), obs, n, ws_);
  rl::SquashedGaussianArgs s;
  s.B = n;
  s.act_dim = nets_.act_dim;
  s.deterministic = deterministic;
  s.seed = seed;
  s.counter = step << 8;
  s.stream = rng::kAction;
  s.index = env_offset;
  s.actor_out = ws_.output(nets_.actor);
  s.scale = scale_.data();
  s.bias = bias_.data();
  s.actions = actions;
  rl::squashed_gaussian(space, s);
  copy_env_actions(space, actions, env_actions, std::size_t(n) * nets_.act_dim);
}

}  // namespace gmi::algos
