#pragma once
/// \file
/// \brief N parallel copies of one environment on the device, with Gymnasium's TimeLimit and
/// same-step automatic reset.
///
/// An environment is a copyable struct (see cartpole.hpp) with SoA state in Views and
/// KOKKOS_INLINE_FUNCTION `reset(i, bits)`, `step(i, action, terminated) -> reward` and
/// `observe(i, out)`.  VecEnv<Env> adds what every environment shares: the elapsed-step counter and
/// truncation, termination/truncation kept apart, automatic reset with the true next observation
/// kept in `final_obs`, and per-env episode statistics that are reduced only when asked for.
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"

namespace gmi::envs {

/// Where one step writes.  Pointers are device memory; rows are envs (row-major [N][obs_dim]).
struct StepOutputs {
  float* next_obs = nullptr;       ///< [N][obs_dim] what the agent sees next (after any reset)
  float* final_obs = nullptr;      ///< [N][obs_dim] written only for envs whose episode ended
  float* reward = nullptr;         ///< [N]
  std::uint8_t* terminated = nullptr;  ///< [N] MDP terminal state reached (no bootstrap)
  std::uint8_t* truncated = nullptr;   ///< [N] time limit reached (bootstrap from final_obs)
};

/// Episodes completed since the last call of take_episode_stats.
struct EpisodeStats {
  double return_sum = 0.0;
  double length_sum = 0.0;
  double count = 0.0;
  std::vector<double> term_sums;  ///< per reward term (EnvSpec::reward_terms), summed like return_sum
};

/// One per-env state array copied to the host (checkpoints): values [i * width, (i + 1) * width)
/// belong to env i.
struct StateArray {
  std::string name;
  bool rng = false;  ///< a random-number counter (checkpoints keep it under /rng)
  std::variant<std::vector<float>, std::vector<double>, std::vector<int>, std::vector<std::uint64_t>> values;
  int width = 1;     ///< values per env (a simulator's state vector)
};

/// `view` copied to the host as the state array `name` (`width` values per env; fences `space`).
/// Shared by the single- and multi-agent environments' save_state.
template <class V>
StateArray save_state_array(const ExecSpace& space, const char* name, const V& view, bool is_rng, int width = 1) {
  using T = typename V::non_const_value_type;
  std::vector<T> host(view.extent(0));
  Kokkos::deep_copy(space, Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(), host.size()),
                    view);
  space.fence();
  StateArray a{name, is_rng, std::move(host)};
  a.width = width;
  return a;
}

/// Restore `view` from the array named `name` in `state` (exact type and length), or throw
/// gmi::Error naming it.  Shared by the single- and multi-agent environments' load_state.
template <class V>
void load_state_array(const ExecSpace& space, const V& view, const char* name, const std::vector<StateArray>& state) {
  using T = typename V::non_const_value_type;
  const StateArray* a = nullptr;
  for (const StateArray& s : state)
    if (s.name == name) a = &s;
  const auto* v = a ? std::get_if<std::vector<T>>(&a->values) : nullptr;
  GMI_REQUIRE(v && v->size() == view.extent(0),
              std::string("environment state '") + name + "' is missing or has the wrong type or length");
  Kokkos::deep_copy(space, view,
                    Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v->data(), v->size()));
}

/// Host-side interface; device code is reached only through the typed VecEnv<Env> below.
class VecEnvBase {
 public:
  virtual ~VecEnvBase() = default;
  const EnvSpec& spec() const { return spec_; }
  int num_envs() const { return num_envs_; }

  /// Start every env's episode `first_episode` (0 for a new run; a resume with another layout
  /// starts a fresh, disjoint range) and write its observation to obs [N][obs_dim].
  virtual void reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode = 0) = 0;
  /// Apply actions [N][act_dim] (discrete actions as exact float indices).
  virtual void step(const ExecSpace& space, const float* actions, const StepOutputs& out) = 0;
  /// Sum the statistics of episodes finished since the last call, then clear them.
  virtual EpisodeStats take_episode_stats(const ExecSpace& space) = 0;
  /// Every state array (the environment's own, then step counters, episode counters and
  /// statistics), copied to the host.  Fences `space`.
  virtual std::vector<StateArray> save_state(const ExecSpace& space) const = 0;
  /// Restore what save_state returned; throws gmi::Error naming an array that is missing or
  /// has the wrong type or length.
  virtual void load_state(const ExecSpace& space, const std::vector<StateArray>& state) = 0;
  /// Whether step_async works: host-simulated environments step a range of envs on their
  /// threads while the caller goes on (env.async_halves).
  virtual bool can_step_async() const { return false; }
  /// Start stepping envs [lo, hi) with `actions` and `out` as in step() (whole-batch pointers;
  /// rows lo..hi are read and written) and return; the actions are read before it returns.
  /// One range at a time: step_wait() before the next.
  virtual void step_async(const ExecSpace& space, const float* actions, const StepOutputs& out, int lo, int hi) {
    throw Error("step_async: this environment steps on the device only");
  }
  /// Wait for the range started last; its results are queued to the device on `space`.
  virtual void step_wait(const ExecSpace& space) {}
  /// Host-simulated environments: the simulator state each env is in now (MuJoCo: qpos, qvel
  /// and mj_getState's integration state), for `gmi_drl env`.  Empty for device environments.
  virtual std::vector<StateArray> simulator_state() const { return {}; }

 protected:
  EnvSpec spec_;
  int num_envs_ = 0;
};

/// \brief N environments of type Env.
/// Randomness is counter-based: the initial state of episode k of global env g is drawn from
/// philox(seed, {k, tag(kEnvReset, g)}), whatever the layout of envs over ranks.
template <class Env>
class VecEnv final : public VecEnvBase {
 public:
  using Params = typename Env::Params;

  /// \param num_envs      envs on this rank
  /// \param seed          the run's seed (Philox key)
  /// \param global_offset global index of this rank's first env
  VecEnv(int num_envs, std::uint64_t seed, std::uint64_t global_offset, const Params& params)
      : env_(num_envs, params),
        seed_(seed),
        offset_(global_offset),
        elapsed_("gmi::envs::VecEnv::elapsed", num_envs),
        episode_("gmi::envs::VecEnv::episode", num_envs),
        ep_return_("gmi::envs::VecEnv::ep_return", num_envs),
        ep_length_("gmi::envs::VecEnv::ep_length", num_envs),
        done_return_("gmi::envs::VecEnv::done_return", num_envs),
        done_length_("gmi::envs::VecEnv::done_length", num_envs),
        done_count_("gmi::envs::VecEnv::done_count", num_envs) {
    spec_ = Env::spec(params);
    num_envs_ = num_envs;
  }

  Env& env() { return env_; }

  void reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode = 0) override {
    auto env = env_;
    auto elapsed = elapsed_;
    auto episode = episode_;
    auto ep_return = ep_return_;
    auto ep_length = ep_length_;
    const std::uint64_t seed = seed_, offset = offset_;
    constexpr int od = Env::kObsDim;
    Kokkos::parallel_for(
        "gmi::envs::VecEnv::reset_all", Range(space, 0, num_envs_), KOKKOS_LAMBDA(const int i) {
          episode(i) = first_episode;
          elapsed(i) = 0;
          ep_return(i) = 0.0f;
          ep_length(i) = 0;
          env.reset(i, rng::philox(seed, first_episode, rng::tag(rng::kEnvReset, offset + i)));
          env.observe(i, obs + std::size_t(i) * od);
        });
    Kokkos::deep_copy(space, done_return_, 0.0);
    Kokkos::deep_copy(space, done_length_, 0.0);
    Kokkos::deep_copy(space, done_count_, 0.0);
  }

  void step(const ExecSpace& space, const float* actions, const StepOutputs& out) override {
    auto env = env_;
    auto elapsed = elapsed_;
    auto episode = episode_;
    auto ep_return = ep_return_;
    auto ep_length = ep_length_;
    auto done_return = done_return_;
    auto done_length = done_length_;
    auto done_count = done_count_;
    const std::uint64_t seed = seed_, offset = offset_;
    const int max_steps = spec_.max_episode_steps;
    constexpr int od = Env::kObsDim;
    constexpr int ad = Env::kActDim;
    const StepOutputs o = out;
    Kokkos::parallel_for(
        "gmi::envs::VecEnv::step", Range(space, 0, num_envs_), KOKKOS_LAMBDA(const int i) {
          float a[ad];
          for (int k = 0; k < ad; ++k) a[k] = actions[std::size_t(i) * ad + k];
          bool terminated = false;
          const float r = env.step(i, a, terminated);
          const int steps = elapsed(i) + 1;
          const bool truncated = steps >= max_steps;
          o.reward[i] = r;
          o.terminated[i] = terminated;
          o.truncated[i] = truncated;
          const float ret = ep_return(i) + r;
          const int len = ep_length(i) + 1;
          if (terminated || truncated) {
            env.observe(i, o.final_obs + std::size_t(i) * od);
            done_return(i) += ret;
            done_length(i) += len;
            done_count(i) += 1.0;
            const std::uint64_t k = ++episode(i);
            env.reset(i, rng::philox(seed, k, rng::tag(rng::kEnvReset, offset + i)));
            elapsed(i) = 0;
            ep_return(i) = 0.0f;
            ep_length(i) = 0;
          } else {
            elapsed(i) = steps;
            ep_return(i) = ret;
            ep_length(i) = len;
          }
          env.observe(i, o.next_obs + std::size_t(i) * od);
        });
  }

  EpisodeStats take_episode_stats(const ExecSpace& space) override {
    auto done_return = done_return_;
    auto done_length = done_length_;
    auto done_count = done_count_;
    EpisodeStats s;
    Kokkos::parallel_reduce(
        "gmi::envs::VecEnv::episode_stats", Range(space, 0, num_envs_),
        KOKKOS_LAMBDA(const int i, double& r, double& l, double& c) {
          r += done_return(i);
          l += done_length(i);
          c += done_count(i);
        },
        s.return_sum, s.length_sum, s.count);
    Kokkos::deep_copy(space, done_return_, 0.0);
    Kokkos::deep_copy(space, done_length_, 0.0);
    Kokkos::deep_copy(space, done_count_, 0.0);
    return s;
  }

  std::vector<StateArray> save_state(const ExecSpace& space) const override {
    std::vector<StateArray> out;
    for_each_array(
        [&](const char* name, auto view, bool is_rng) { out.push_back(save_state_array(space, name, view, is_rng)); });
    return out;
  }

  void load_state(const ExecSpace& space, const std::vector<StateArray>& state) override {
    for_each_array([&](const char* name, auto view, bool) { load_state_array(space, view, name, state); });
    space.fence();
  }

 private:
  /// f(name, view, is_rng) for the environment's arrays and VecEnv's own.
  template <class F>
  void for_each_array(F&& f) const {
    env_.for_each_state([&](const char* name, auto view) { f(name, view, false); });
    f("elapsed", elapsed_, false);
    f("episode", episode_, true);
    f("ep_return", ep_return_, false);
    f("ep_length", ep_length_, false);
    f("done_return", done_return_, false);
    f("done_length", done_length_, false);
    f("done_count", done_count_, false);
  }

  Env env_;
  std::uint64_t seed_;
  std::uint64_t offset_;
  View1<int> elapsed_;             ///< steps in the current episode (TimeLimit)
  View1<std::uint64_t> episode_;   ///< episodes started by this env so far (reset counter)
  View1<float> ep_return_;         ///< undiscounted return of the current episode
  View1<int> ep_length_;
  View1<double> done_return_;      ///< sums over episodes finished since the last take
  View1<double> done_length_;
  View1<double> done_count_;
};

}  // namespace gmi::envs
