#include "src/algos/actor.hpp"

#include "kernels/core/error.hpp"
#include "kernels/core/host_copy.hpp"
#include "kernels/rl/fused_act.hpp"
#include "kernels/rl/sample.hpp"

namespace gmi::algos {
Actor::Actor(const nn::ActorCriticLayout& layout, const std::vector<float>& params, const std::vector<double>& obs_rms,
             const ActorOptions& options, int capacity)
    : layout_(layout), options_(options), categories_(rl::categories(layout.action_nvec, "the policy's action space")) {
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
  ws_ = nn::ActorCriticWorkspace(layout, capacity, true, false);
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

void act_step(const ExecSpace& space, const ActStep& s, const ActScratch& w) {
  const nn::ActorCriticLayout& L = *s.layout;
  if (w.fused) {
    rl::FusedActArgs f;
    f.N = s.n;
    f.obs_dim = L.obs_dim;
    f.act_dim = L.act_dim;
    f.num_actions = L.num_actions;
    f.seed = s.seed;
    f.step = s.step;
    f.step_base = s.step_base;
    f.env_offset = s.env_offset;
    f.clip_actions = s.clip_actions;
    f.params = s.params;
    f.log_std = L.log_std;
    f.obs = s.obs;
    f.obs_stats = s.obs_rms ? s.obs_rms->state().data() : nullptr;
    f.obs_clip = s.obs_clip;
    f.act_low = s.act_low;
    f.act_high = s.act_high;
    f.actions = s.actions;
    f.env_actions = s.env_actions;
    f.logp = s.logp;
    f.values = s.values;
    f.tf32 = s.tf32;
    f.deterministic = s.deterministic;
    f.frag = w.frag;
    rl::fused_act(space, L, f);
    return;
  }
  const float* in = s.obs;
  if (s.obs_rms) {
    s.obs_rms->normalize(space, s.obs, w.policy_in, s.n, s.obs_clip);
    in = w.policy_in;
  }
  nn::ac_forward(space, L, s.params, in, s.n, *w.nets, true, w.values);
  rl::SampleArgs a;
  a.N = s.n;
  a.num_actions = L.num_actions;
  a.categories = s.categories;
  a.act_dim = L.act_dim;
  a.seed = s.seed;
  a.step = s.step;
  a.step_base = s.step_base;
  a.env_offset = s.env_offset;
  a.clip_actions = s.clip_actions;
  a.deterministic = s.deterministic;
  a.actor_out = nn::ac_policy_out(L, *w.nets);
  a.log_std = L.continuous() ? s.params + L.log_std : nullptr;
  a.act_low = s.act_low;
  a.act_high = s.act_high;
  a.critic_out = w.values ? nn::ac_values(L, *w.nets) : nullptr;
  a.actions = s.actions;
  a.env_actions = s.env_actions;
  a.logp = s.logp;
  a.values = w.values ? s.values : nullptr;
  rl::sample_actions(space, a);
}

void Actor::act(const ExecSpace& space, const float* obs, int n, bool deterministic, std::uint64_t seed,
                std::uint64_t step, std::uint64_t env_offset, float* actions, float* env_actions) {
  ActStep s;
  s.layout = &layout_;
  s.categories = categories_;
  s.params = params_.data();
  s.obs = obs;
  s.n = n;
  s.seed = seed;
  s.step = step;
  s.env_offset = env_offset;
  s.clip_actions = options_.clip_actions;
  s.deterministic = deterministic;
  s.tf32 = options_.tf32;
  s.obs_rms = options_.normalize_obs ? &obs_rms_ : nullptr;
  s.obs_clip = options_.obs_clip;
  s.act_low = act_low_.data();
  s.act_high = act_high_.data();
  s.actions = actions;
  s.env_actions = env_actions;
  s.logp = logp_.data();      // the fused kernel's by-products (unallocated on the layered path)
  s.values = values_.data();
  act_step(space, s, {fused_, frag_.size() ? frag_.data() : nullptr, policy_in_.data(), &ws_, false});
}

void copy_env_actions(const ExecSpace& space, const float* actions, float* env_actions, std::size_t count) {
  if (env_actions == actions) return;
  Kokkos::deep_copy(space, Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(env_actions, count),
                    Kokkos::View<const float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(actions, count));
}

}  // namespace gmi::algos
