#include "src/algos/actor.hpp"

#include "kernels/core/error.hpp"
#include "kernels/core/host_copy.hpp"
#include "kernels/rl/fused_act.hpp"
#include "kernels/rl/sample.hpp"

namespace gmi::algos {
Actor::Actor(const nn::ActorCriticLayout& layout, const std::vector<float>& params, const std::vector<double>& obs_rms,
             const ActorOptions& options, int capacity)
    : layout_(layout), options_(options) {
  GMI_REQUIRE(params.size() == layout.num_params, "actor: parameter count does not match the policy layout");
  params_ = device_copy("gmi::actor::params", params);
  policy_in_ = View1<float>("gmi::actor::policy_in", std::size_t(capacity) * layout.obs_dim);
  std::vector<float> low = options.act_low, high = options.act_high;
  low.resize(layout.act_dim, 0.0f);
  high.resize(layout.act_dim, 0.0f);
  act_low_ = device_copy("gmi::actor::act_low", low);
  act_high_ = device_copy("gmi::actor::act_high", high);
  obs_rms_ = rl::RunningMeanStd(layout.obs_dim);
  if (options.normalize_obs) {
    GMI_REQUIRE(obs_rms.size() == obs_rms_.state().extent(0), "actor: observation normaliser has the wrong size");
    Kokkos::deep_copy(obs_rms_.state(), device_copy("gmi::actor::obs_rms", obs_rms));
  }
  ws_ = nn::MlpWorkspace<float>(layout.actor, capacity);
  fused_ = options.fused && rl::fused_act_supported(layout);
  if (fused_) {
    logp_ = View1<float>("gmi::actor::logp", capacity);
    values_ = View1<float>("gmi::actor::values", capacity);
    if (rl::fused_act_fragments_help() && rl::fused_act_fragment_floats(layout) > 0) {
      frag_ = View1<float>("gmi::actor::fragments", rl::fused_act_fragment_floats(layout));
      rl::fused_act_prepare(ExecSpace(), layout, params_.data(), frag_.data());
      ExecSpace().fence();  // act() may run on another instance
    }
  }
}

void Actor::act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
                std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) {
  if (fused_) {
    rl::FusedActArgs f;
    f.N = n;
    f.obs_dim = layout_.obs_dim;
    f.act_dim = layout_.act_dim;
    f.num_actions = layout_.num_actions;
    f.seed = seed;
    f.step = step;
    f.env_offset = env_offset;
    f.clip_actions = options_.clip_actions;
    f.params = params_.data();
    f.log_std = layout_.log_std;
    f.obs = obs;
    f.obs_stats = options_.normalize_obs ? obs_rms_.state().data() : nullptr;
    f.obs_clip = options_.obs_clip;
    f.act_low = act_low_.data();
    f.act_high = act_high_.data();
    f.actions = actions;
    f.env_actions = env_actions;
    f.logp = logp_.data();
    f.values = values_.data();
    f.tf32 = options_.tf32;
    f.deterministic = deterministic;
    f.frag = frag_.size() ? frag_.data() : nullptr;
    rl::fused_act(space, layout_, f);
    return;
  }
  const float* in = obs;
  if (options_.normalize_obs) {
    obs_rms_.normalize(space, obs, policy_in_.data(), n, options_.obs_clip);
    in = policy_in_.data();
  }
  nn::mlp_forward(space, layout_.actor, params_.data(), in, n, ws_);
  rl::SampleArgs s;
  s.N = n;
  s.num_actions = layout_.num_actions;
  s.act_dim = layout_.act_dim;
  s.seed = seed;
  s.step = step;
  s.env_offset = env_offset;
  s.clip_actions = options_.clip_actions;
  s.deterministic = deterministic;
  s.actor_out = ws_.output(layout_.actor);
  s.log_std = layout_.continuous() ? params_.data() + layout_.log_std : nullptr;
  s.act_low = act_low_.data();
  s.act_high = act_high_.data();
  s.actions = actions;
  s.env_actions = env_actions;
  rl::sample_actions(space, s);
}

}  // namespace gmi::algos
