#include "kernels/nn/actor_critic.hpp"

#include <cmath>

#include "kernels/nn/init.hpp"

namespace gmi::nn {
namespace {

/// The trunk's output gradient before its activation: d <- (d + w_v dv^T) .* f'(h) over H x B (d:
/// the policy head's input gradient; w_v dv^T: the value head's, rank one, added here instead of a
/// product and a sum of their own).
template <class A>
void trunk_grad(const ExecSpace& space, float* d, const float* h, const float* wv, const float* dv, int H, int B, A) {
  Kokkos::parallel_for(
      "gmi::nn::ac_trunk_grad", Range64(space, 0, std::int64_t(H) * B), KOKKOS_LAMBDA(const std::int64_t k) {
        const std::int64_t b = k / H;
        d[k] = (d[k] + wv[k - b * H] * dv[b]) * A::df_from_y(h[k]);
      });
}

}  // namespace

ActorCriticLayout::ActorCriticLayout(const ActorCriticSpec& s)
    : obs_dim(s.obs_dim), act_dim(s.act_dim), num_actions(s.num_actions), action_nvec(s.action_nvec) {
  GMI_REQUIRE(s.obs_dim > 0 && s.act_dim > 0, "ActorCriticLayout: empty observation or action");
  if (!s.action_nvec.empty()) {
    int sum = 0;
    for (int n : s.action_nvec) sum += n;
    GMI_REQUIRE(s.num_actions == sum && s.act_dim == int(s.action_nvec.size()),
                "ActorCriticLayout: a MultiDiscrete head needs num_actions = the groups' sum and act_dim = their number");
  } else {
    GMI_REQUIRE(s.num_actions == 0 || s.act_dim == 1, "ActorCriticLayout: a categorical head of one group takes act_dim 1");
  }
  const int out = s.num_actions > 0 ? s.num_actions : s.act_dim;
  std::size_t next = 0;
  int in = s.obs_dim;
  std::vector<int> actor_hidden = s.actor_hidden, critic_hidden = s.critic_hidden;
  if (s.shared_hidden) {
    GMI_REQUIRE(!s.actor_hidden.empty(), "ActorCriticLayout: shared hidden layers need at least one");
    trunk = MlpLayout(s.obs_dim, std::vector<int>(s.actor_hidden.begin(), s.actor_hidden.end() - 1),
                      s.actor_hidden.back(), s.activation, 0);
    trunk.activated_out = true;
    next = trunk.num_params;
    in = s.actor_hidden.back();
    actor_hidden.clear();
    critic_hidden.clear();
  }
  actor = MlpLayout(in, actor_hidden, out, s.activation, next);
  next = actor.offset + actor.num_params;
  if (continuous()) {
    log_std = next;
    next += s.act_dim;
  }
  critic = MlpLayout(in, critic_hidden, 1, s.activation, next);
  num_params = next + critic.num_params;
}

ActorCriticWorkspace::ActorCriticWorkspace(const ActorCriticLayout& l, int capacity, bool a, bool c, bool backward) {
  if (l.shared()) {
    trunk = MlpWorkspace<float>(l.trunk, capacity);
    const std::size_t h = std::size_t(l.trunk.out()) * std::size_t(capacity);
    if (backward)
      d_trunk = View1<float>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("gmi::nn::ac::d_trunk")), h);
  }
  if (a) actor = MlpWorkspace<float>(l.actor, capacity);
  if (c) critic = MlpWorkspace<float>(l.critic, capacity);
}

double ActorCriticWorkspace::size(const ActorCriticLayout& l, double rows, bool backward) {
  double s = MlpWorkspace<float>::size(l.actor, rows) + MlpWorkspace<float>::size(l.critic, rows);
  if (l.shared()) s += MlpWorkspace<float>::size(l.trunk, rows) + (backward ? double(l.trunk.out()) * rows : 0.0);
  return s;
}

void ac_forward(const ExecSpace& space, const ActorCriticLayout& l, const float* params, const float* X, int B,
                ActorCriticWorkspace& ws, bool actor, bool critic) {
  const float* in = X;
  if (l.shared()) {
    mlp_forward(space, l.trunk, params, X, B, ws.trunk);
    in = ws.trunk.output(l.trunk);
  }
  if (actor) mlp_forward(space, l.actor, params, in, B, ws.actor);
  if (critic) mlp_forward(space, l.critic, params, in, B, ws.critic);
}

void ac_backward(const ExecSpace& space, const ActorCriticLayout& l, const float* params, const float* X, int B,
                 ActorCriticWorkspace& ws, float* d_policy, float* d_values, float* grads) {
  if (!l.shared()) {
    mlp_backward(space, l.actor, params, X, B, ws.actor, d_policy, grads);
    mlp_backward(space, l.critic, params, X, B, ws.critic, d_values, grads);
    return;
  }
  // The heads' weight gradients; the trunk's output gradient is the sum of their input gradients
  // (the value head's a rank-one term), times the trunk's activation derivative.
  GMI_REQUIRE(l.critic.layers.size() == 1 && ws.d_trunk.size() >= std::size_t(l.trunk.out()) * std::size_t(B),
              "ac_backward: a workspace made for backward passes, under a trunk with one value layer");
  const float* h = ws.trunk.output(l.trunk);
  float* d = ws.d_trunk.data();
  mlp_backward(space, l.actor, params, h, B, ws.actor, d_policy, grads, d);
  dispatch(l.trunk.act, [&](auto a) {
    trunk_grad(space, d, h, params + l.critic.layers[0].w, d_values, l.trunk.out(), B, a);
  });
  mlp_backward(space, l.critic, params, h, B, ws.critic, d_values, grads);
  MlpLayout pre = l.trunk;  // d is already the gradient before the trunk's last activation
  pre.activated_out = false;
  mlp_backward(space, pre, params, X, B, ws.trunk, d, grads);
}

template <class Scalar>
std::vector<Scalar> init_actor_critic(const ActorCriticLayout& l, const ActorCriticSpec& s,
                                      std::uint64_t seed) {
  std::vector<Scalar> p(l.num_params, Scalar(0));
  if (l.shared()) init_mlp(p, l.trunk, std::sqrt(2.0), std::sqrt(2.0), seed, 2);
  init_mlp(p, l.actor, std::sqrt(2.0), s.actor_output_gain, seed, 0);
  init_mlp(p, l.critic, std::sqrt(2.0), s.critic_output_gain, seed, 1);
  if (l.continuous())
    for (int k = 0; k < l.act_dim; ++k) p[l.log_std + k] = Scalar(s.log_std_init);
  return p;
}

template std::vector<float> init_actor_critic<float>(const ActorCriticLayout&,
                                                     const ActorCriticSpec&, std::uint64_t);
template std::vector<double> init_actor_critic<double>(const ActorCriticLayout&,
                                                       const ActorCriticSpec&, std::uint64_t);

}  // namespace gmi::nn
