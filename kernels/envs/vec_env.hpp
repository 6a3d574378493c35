#pragma once
/// \file
/// \brief N parallel copies of one environment on the device, with Gymnasium's TimeLimit and
/// same-step automatic reset.
///
/// An environment is a copyable struct (see cartpole.hpp) with SoA state in Views and
/// KOKKOS_INLINE_FUNCTION `reset(i, bits)`, `step(i, action, terminated) -> reward` and
/// `observe(i, out)`.  VecEnv<Env> adds what every environment shares: termination/truncation kept
/// apart, automatic reset with the true next observation kept in `final_obs`, and (episodes.hpp,
/// shared with the multi-agent environments) the time limit, the episode counter and per-env
/// episode statistics that are reduced only when asked for.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/env_spec.hpp"
#include "kernels/envs/episodes.hpp"

namespace gmi::envs {

/// Where one step writes.  Pointers are device memory; rows are envs (row-major [N][obs_dim]).
struct StepOutputs {
  float* next_obs = nullptr;           ///< [N][obs_dim] what the agent sees next (after any reset)
  float* final_obs = nullptr;          ///< [N][obs_dim] written only for envs whose episode ended
  float* reward = nullptr;             ///< [N]
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
  int width = 1;  ///< values per env (a simulator's state vector)
};

/// `view` copied to the host as the state array `name` (`width` values per env; fences `space`).
/// A rank-2 (env, field) View is written env by env, whatever its layout, with its field count as
/// the width.  Shared by the single- and multi-agent environments' save_state.
template <class V>
StateArray save_state_array(const ExecSpace& space, const char* name, const V& view, bool is_rng, int width = 1) {
  using T = typename V::non_const_value_type;
  std::vector<T> host(view.size());
  if constexpr (V::rank == 2) {
    auto mirror = Kokkos::create_mirror_view(view);
    Kokkos::deep_copy(space, mirror, view);
    space.fence();
    width = int(view.extent(1));
    for (std::size_t i = 0; i < view.extent(0); ++i)
      for (std::size_t k = 0; k < view.extent(1); ++k) host[i * width + k] = mirror(i, k);
  } else {
    Kokkos::deep_copy(
        space, Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(), host.size()), view);
    space.fence();
  }
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
  const std::size_t width = V::rank == 2 ? view.extent(1) : 1;
  if (!v || v->size() != view.size() || (V::rank == 2 && std::size_t(a->width) != width)) {
    auto shape = [](std::size_t n, std::size_t w) {
      return std::to_string(n) + " values" + (w > 1 ? " of width " + std::to_string(w) : std::string());
    };
    throw InputError(std::string("environment state '") + name + "': " +
                     (!a   ? std::string("missing")
                      : !v ? std::string("of another type")
                           : shape(v->size(), std::size_t(a->width)) + ", expected " + shape(view.size(), width)));
  }
  if constexpr (V::rank == 2) {
    auto mirror = Kokkos::create_mirror_view(view);
    for (std::size_t i = 0; i < view.extent(0); ++i)
      for (std::size_t k = 0; k < width; ++k) mirror(i, k) = (*v)[i * width + k];
    Kokkos::deep_copy(space, view, mirror);
    space.fence();  // the mirror is freed on return
  } else {
    Kokkos::deep_copy(space, view,
                      Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v->data(), v->size()));
  }
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
  /// Whether step_async works: host-simulated environments step ranges of envs on their
  /// threads while the caller goes on (env.batch_size groups).
  virtual bool can_step_async() const { return false; }
  /// Queue a step of envs [lo, hi) with `actions` and `out` as in step() (whole-batch pointers;
  /// rows lo..hi are read and written) and return; the actions are read before it returns.
  /// Several disjoint ranges may be queued; the threads step them in order.
  virtual void step_async(const ExecSpace& space, const float* actions, const StepOutputs& out, int lo, int hi) {
    throw Error("step_async: this environment steps on the device only");
  }
  /// Wait for the oldest range queued; its results are queued to the device on `space`.
  virtual void step_wait(const ExecSpace& space) {}
  /// Environments with a simulator: the state each env is in now (host MuJoCo: qpos, qvel and
  /// mj_getState's integration state; the device physics tasks: qpos, qvel and the forward
  /// reward's anchor), for `gmi_drl env`.  Empty for the other device environments.
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
      : env_(num_envs, params), seed_(seed), offset_(global_offset) {
    spec_ = Env::spec(params);
    num_envs_ = num_envs;
    eps_ = Episodes("gmi::envs::VecEnv", num_envs, spec_.max_episode_steps, 1, 1);
  }

  Env& env() { return env_; }

  void reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode = 0) override {
    auto env = env_;
    auto eps = eps_;
    const std::uint64_t seed = seed_, offset = offset_;
    constexpr int od = Env::kObsDim;
    parallel_for_blocks(
        "gmi::envs::VecEnv::reset_all", space, num_envs_, block(), KOKKOS_LAMBDA(const int i) {
          eps.start(i, first_episode);
          eps.ret(i) = 0.0f;
          env.reset(i, rng::philox(seed, first_episode, rng::tag(rng::kEnvReset, offset + i)));
          env.observe(i, obs + std::size_t(i) * od);
        });
    eps_.clear_done(space);
  }

  void step(const ExecSpace& space, const float* actions, const StepOutputs& out) override {
    auto env = env_;
    auto eps = eps_;
    const std::uint64_t seed = seed_, offset = offset_;
    constexpr int od = Env::kObsDim;
    constexpr int ad = Env::kActDim;
    const StepOutputs o = out;
    parallel_for_blocks(
        "gmi::envs::VecEnv::step", space, num_envs_, block(), KOKKOS_LAMBDA(const int i) {
          float a[ad];
          for (int k = 0; k < ad; ++k) a[k] = actions[std::size_t(i) * ad + k];
          bool terminated = false;
          const float r = env.step(i, a, terminated);
          const int t = eps.step_number(i);
          const bool truncated = eps.truncates(t);
          o.reward[i] = r;
          o.terminated[i] = terminated;
          o.truncated[i] = truncated;
          eps.ret(i) += r;
          if (terminated || truncated) {
            env.observe(i, o.final_obs + std::size_t(i) * od);
            eps.bank_return(i, 0, eps.ret(i));
            eps.ret(i) = 0.0f;
            const std::uint64_t k = eps.finish(i, t);
            env.reset(i, rng::philox(seed, k, rng::tag(rng::kEnvReset, offset + i)));
          } else {
            eps.go_on(i, t);
          }
          env.observe(i, o.next_obs + std::size_t(i) * od);
        });
  }

  EpisodeStats take_episode_stats(const ExecSpace& space) override {
    const EpisodeTotals t = eps_.take(space, "gmi::envs::VecEnv");
    EpisodeStats s;
    s.return_sum = t.returns[0];
    s.length_sum = t.length;
    s.count = t.count;
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

  /// What an environment with a simulator (Env::simulator_state(), the device physics tasks) says
  /// its state is; empty for the others.
  std::vector<StateArray> simulator_state() const override {
    if constexpr (HasSimulatorState<Env>::value)
      return env_.simulator_state();
    else
      return {};
  }

 private:
  template <class E, class = void>
  struct HasThreadsPerBlock : std::false_type {};
  template <class E>
  struct HasThreadsPerBlock<E, std::void_t<decltype(E::threads_per_block())>> : std::true_type {};
  /// Threads per block of the step and reset kernels: the environment's choice where it makes one
  /// (heavy per-env steps: the device physics), else Kokkos' (parallel_for_blocks).
  static int block() {
    if constexpr (HasThreadsPerBlock<Env>::value)
      return Env::threads_per_block();
    else
      return 0;
  }

  template <class E, class = void>
  struct HasSimulatorState : std::false_type {};
  template <class E>
  struct HasSimulatorState<E, std::void_t<decltype(std::declval<const E&>().simulator_state())>> : std::true_type {};

  /// f(name, view, is_rng) for the environment's arrays and the episode bookkeeping's.
  template <class F>
  void for_each_array(F&& f) const {
    env_.for_each_state([&](const char* name, auto view) { f(name, view, false); });
    eps_.for_each_array([&](const char* name, auto view, int, bool is_rng) {
      f(name, view, is_rng);
      // Checkpoints keep the episode length after the return; it always equals the step count
      // (saved from it, restored into it).
      if (std::string(name) == "ep_return") f("ep_length", eps_.elapsed, false);
    });
  }

  Env env_;
  std::uint64_t seed_;
  std::uint64_t offset_;
  Episodes eps_;  ///< time limit, episode counter, running return, finished-episode sums
};

}  // namespace gmi::envs
