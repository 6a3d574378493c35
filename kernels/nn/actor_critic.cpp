#include "kernels/nn/actor_critic.hpp"

#include <cmath>

#include "kernels/nn/init.hpp"

namespace gmi::nn {

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
  actor = MlpLayout(s.obs_dim, s.actor_hidden, out, s.activation, 0);
  std::size_t next = actor.num_params;
  if (continuous()) {
    log_std = next;
    next += s.act_dim;
  }
  critic = MlpLayout(s.obs_dim, s.critic_hidden, 1, s.activation, next);
  num_params = next + critic.num_params;
}

template <class Scalar>
std::vector<Scalar> init_actor_critic(const ActorCriticLayout& l, const ActorCriticSpec& s,
                                      std::uint64_t seed) {
  std::vector<Scalar> p(l.num_params, Scalar(0));
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
