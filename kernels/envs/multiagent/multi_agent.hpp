#pragma once
/// \file
/// \brief N multi-agent environments on the device: the seam the algorithms see
/// (MultiAgentVecEnvBase, beside the single-agent VecEnvBase of vec_env.hpp) and the template that
/// runs a game on it (MultiAgentVecEnv<Game>: one Kokkos team per environment).
///
/// Agents are grouped in roles (Tag: taggers, runners); one policy per role trains all agents of
/// the role, so every role has its own observation, action, reward and flag buffers whose rows are
/// (env e, k-th agent of the role) -> e * agents + k.  The conventions are vec_env.hpp's:
/// termination and truncation kept apart (per environment: every row of an env shares them),
/// same-step automatic reset with the true last observation in final_obs, counter-based initial
/// states, episode statistics reduced only when asked for, exact save/load.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/envs/vec_env.hpp"

namespace gmi::envs {

struct RoleSpec {            ///< one policy per role trains all agents of the role
  std::string name;          ///< "tagger", "runner"
  int agents = 0;            ///< agents of this role per environment
  int obs_dim = 0;
  int num_actions = 0;       ///< discrete action count (both Tag games are discrete; MultiDiscrete: the sum)
  std::vector<int> action_nvec;  ///< MultiDiscrete groups (EnvSpec::action_nvec); empty: Discrete
  int act_dim() const { return action_nvec.empty() ? 1 : int(action_nvec.size()); }  ///< numbers per action
  /// The index range of each of an action's numbers: action_nvec, or {num_actions}.
  std::vector<int> action_sizes() const { return action_nvec.empty() ? std::vector<int>{num_actions} : action_nvec; }
};

struct MultiAgentSpec {
  std::string name;          ///< "TagGridworld-v0", "TagContinuous-v0"
  std::vector<RoleSpec> roles;
  int max_episode_steps = 0; ///< WarpDrive's episode_length (truncated when reached)
  /// The game's own episode statistics (EpisodeStats::term_sums, in this order): statistic k of a
  /// finished episode is the events the game counted in it (GameStep::events) / stat_divisors[k]
  /// (Tag: "runners_tagged" = tags, "tag_rate" = tags / runners).
  std::vector<std::string> stat_terms;
  std::vector<double> stat_divisors;  ///< one per stat_terms entry
  int num_agents() const {
    int n = 0;
    for (const RoleSpec& r : roles) n += r.agents;
    return n;
  }
};

/// N environments; role r's rows are (env e, k-th agent of the role) -> row e * roles[r].agents + k.
/// Every row of an environment shares its terminated/truncated flags (episode-level done, as
/// WarpDrive); a runner that left the game keeps a row (its flag still_in_game is 0, its reward 0,
/// its actions ignored).
class MultiAgentVecEnvBase {
 public:
  virtual ~MultiAgentVecEnvBase() = default;
  const MultiAgentSpec& spec() const { return spec_; }
  int num_envs() const { return num_envs_; }
  /// Start every env's episode `first_episode` and write the observations: obs_per_role[r] is
  /// device memory [rows_r][obs_dim_r].
  virtual void reset_all(const ExecSpace&, float* const* obs_per_role, std::uint64_t first_episode = 0) = 0;
  /// actions_per_role[r]: [rows_r] exact float indices (out of range: clamped); out_per_role[r]:
  /// StepOutputs over rows_r (final_obs written only for the rows of envs whose episode ended).
  virtual void step(const ExecSpace&, const float* const* actions_per_role, const StepOutputs* out_per_role) = 0;
  /// per role: sums over agents of that role of finished episodes' returns and lengths, and count
  /// of (agent, episode) pairs; plus the game's statistics (spec().stat_terms, one value per
  /// (agent, episode) pair, so term_sums[k] / count is statistic k's mean) in term_sums
  virtual std::vector<EpisodeStats> take_episode_stats(const ExecSpace&) = 0;
  virtual std::vector<StateArray> save_state(const ExecSpace&) const = 0;   ///< exact resume
  /// Restore what save_state returned; throws gmi::Error naming an array that is missing or has
  /// the wrong type or length.
  virtual void load_state(const ExecSpace&, const std::vector<StateArray>&) = 0;
  /// the full physical state now (positions, directions/speeds/accelerations, still-in-game flags,
  /// step counter), one StateArray each, for trajectory files and the reference comparison
  virtual std::vector<StateArray> full_state(const ExecSpace&) const = 0;

 protected:
  MultiAgentSpec spec_;
  int num_envs_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Device side: what a game is given, and the template that runs it.

inline constexpr int kMaxRoles = 4;
using TeamMember = TeamPolicy::member_type;

/// One device pointer per role (a StepOutputs field, observations, actions).
template <class T>
struct RolePtrs {
  T* p[kMaxRoles] = {};
};

/// Where agent a of env e lives: agents are numbered role by role (all of role 0, then role 1...).
struct RoleLayout {
  int roles = 0;
  int agents = 0;               ///< per environment, all roles
  int count[kMaxRoles] = {};    ///< agents of role r per environment
  int first[kMaxRoles] = {};    ///< agent number of role r's first agent
  int obs_dim[kMaxRoles] = {};

  explicit RoleLayout(const MultiAgentSpec& s = {}) {
    GMI_REQUIRE(int(s.roles.size()) <= kMaxRoles, "RoleLayout: at most kMaxRoles roles");
    roles = int(s.roles.size());
    for (int r = 0; r < roles; ++r) {
      count[r] = s.roles[r].agents;
      first[r] = agents;
      obs_dim[r] = s.roles[r].obs_dim;
      agents += count[r];
    }
  }
  KOKKOS_INLINE_FUNCTION int role(int a) const {
    int r = 0;
    while (r + 1 < roles && a >= first[r + 1]) ++r;
    return r;
  }
  /// Row of agent a of env e in its role's buffers.
  KOKKOS_INLINE_FUNCTION std::size_t row(int e, int a, int r) const {
    return std::size_t(e) * count[r] + (a - first[r]);
  }
  template <class T>
  KOKKOS_INLINE_FUNCTION T* obs(const RolePtrs<T>& o, int e, int a) const {
    const int r = role(a);
    return o.p[r] + row(e, a, r) * obs_dim[r];
  }
};

/// What a game's step reports to the template (the same value on every thread of the team).
struct GameStep {
  bool terminated = false;  ///< the game is over before the time limit (Tag: every runner tagged)
  int events = 0;           ///< events this step that the game counts per episode (Tag: tags)
};

/// \brief Random bits for agent `agent`'s initial state in episode `episode` of global env `env`:
/// the counter is VecEnv's (episode, tag(kEnvReset, env)) with agent + 1 in the top 24 bits of the
/// low word, so it never meets a single-agent reset (whose top bits are 0); episodes are taken
/// modulo 2^40.
KOKKOS_INLINE_FUNCTION rng::Bits4 agent_reset_bits(std::uint64_t seed, std::uint64_t episode, std::uint64_t env,
                                                   int agent) {
  const std::uint64_t lo = (episode & ((std::uint64_t(1) << 40) - 1)) | (std::uint64_t(agent + 1) << 40);
  return rng::philox(seed, lo, rng::tag(rng::kEnvReset, env));
}

/// One team per environment: one warp up to 128 threads on CUDA (a team thread per agent, several
/// agents per thread beyond); the host backends choose their own size.
inline TeamPolicy team_per_env(const ExecSpace& space, int num_envs, int agents) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    const int size = agents >= 128 ? 128 : (agents + 31) / 32 * 32;
    return TeamPolicy(space, num_envs, size);
  }
#endif
  return TeamPolicy(space, num_envs, Kokkos::AUTO);
}

/// \brief N environments of a multi-agent game.
///
/// A Game is a copyable struct with kKernelName (the prefix of its kernels' names), kEvents (what
/// GameStep::events counts: the running and finished counts are checkpointed as "ep_<kEvents>" and
/// "done_<kEvents>"), SoA state in
/// Views (one entry per (env, agent), env-major) and team-collective KOKKOS_INLINE_FUNCTIONs called
/// with the team of env e:
///   reset(m, e, seed, episode, global_env)   draw / set the initial state
///   advance(m, e, t, actions, rewards) -> GameStep   apply the actions of step t, write rewards
///   observe(m, e, t, obs)                    write every agent's observation
///   commit(m, e)                             apply what must not show in this step's observation
/// and host-side for_each_state(f) (every state array: f(name, view, width)) and
/// physical_state(f) (the subset full_state() reports).
template <class Game>
class MultiAgentVecEnv final : public MultiAgentVecEnvBase {
 public:
  MultiAgentVecEnv(const MultiAgentSpec& spec, const Game& game, int num_envs, std::uint64_t seed,
                   std::uint64_t global_offset)
      : game_(game),
        layout_(spec),
        seed_(seed),
        offset_(global_offset) {
    spec_ = spec;
    num_envs_ = num_envs;
    EpisodeNames names;
    names.elapsed = "timestep";
    names.done_count = "done_episodes";
    names.events = Game::kEvents;
    eps_ = Episodes("gmi::envs::MultiAgentVecEnv", num_envs, spec.max_episode_steps, layout_.agents, layout_.roles,
                    names);
  }

  Game& game() { return game_; }

  void reset_all(const ExecSpace& space, float* const* obs_per_role, std::uint64_t first_episode = 0) override {
    const RolePtrs<float> obs = gather<float>(obs_per_role);
    auto game = game_;
    auto eps = eps_;
    const RoleLayout lay = layout_;
    const std::uint64_t seed = seed_, offset = offset_;
    Kokkos::parallel_for(
        std::string(Game::kKernelName) + "::reset_all", team_per_env(space, num_envs_, lay.agents),
        KOKKOS_LAMBDA(const TeamMember& m) {
          const int e = m.league_rank();
          Kokkos::single(Kokkos::PerTeam(m), [&] { eps.start(e, first_episode); });
          Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) { eps.ret(e, a) = 0.0f; });
          game.reset(m, e, seed, first_episode, offset + e);
          m.team_barrier();
          game.observe(m, e, 0, obs);
        });
    eps_.clear_done(space);
  }

  void step(const ExecSpace& space, const float* const* actions_per_role, const StepOutputs* out_per_role) override {
    const RolePtrs<const float> act = gather<const float>(actions_per_role);
    RolePtrs<float> obs, fin, rew;
    RolePtrs<std::uint8_t> term, trunc;
    for (int r = 0; r < layout_.roles; ++r) {
      obs.p[r] = out_per_role[r].next_obs;
      fin.p[r] = out_per_role[r].final_obs;
      rew.p[r] = out_per_role[r].reward;
      term.p[r] = out_per_role[r].terminated;
      trunc.p[r] = out_per_role[r].truncated;
    }
    auto game = game_;
    auto eps = eps_;
    const RoleLayout lay = layout_;
    const std::uint64_t seed = seed_, offset = offset_;
    Kokkos::parallel_for(
        std::string(Game::kKernelName) + "::step", team_per_env(space, num_envs_, lay.agents),
        KOKKOS_LAMBDA(const TeamMember& m) {
          const int e = m.league_rank();
          const int t = eps.step_number(e);
          const std::uint64_t ep = eps.episode(e);
          const GameStep s = game.advance(m, e, t, act, rew);
          const bool terminated = s.terminated, truncated = eps.truncates(t);
          const bool done = terminated || truncated;
          m.team_barrier();
          game.observe(m, e, t, done ? fin : obs);
          m.team_barrier();
          game.commit(m, e);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) {
            const int r = lay.role(a);
            const std::size_t row = lay.row(e, a, r);
            term.p[r][row] = terminated;
            trunc.p[r][row] = truncated;
            eps.ret(e, a) += rew.p[r][row];
          });
          m.team_barrier();
          if (!done) {
            Kokkos::single(Kokkos::PerTeam(m), [&] { eps.go_on(e, t, s.events); });
            return;
          }
          for (int r = 0; r < lay.roles; ++r) {
            double sum = 0.0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(m, lay.first[r], lay.first[r] + lay.count[r]),
                [&](int a, double& acc) { acc += eps.ret(e, a); }, sum);
            Kokkos::single(Kokkos::PerTeam(m), [&] { eps.bank_return(e, r, sum); });
          }
          Kokkos::single(Kokkos::PerTeam(m), [&] { eps.finish(e, t, s.events); });
          m.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) { eps.ret(e, a) = 0.0f; });
          game.reset(m, e, seed, ep + 1, offset + e);
          m.team_barrier();
          game.observe(m, e, 0, obs);
        });
  }

  std::vector<EpisodeStats> take_episode_stats(const ExecSpace& space) override {
    const EpisodeTotals t = eps_.take(space, Game::kKernelName);
    std::vector<EpisodeStats> out;
    for (int r = 0; r < layout_.roles; ++r) {
      EpisodeStats s;
      const double agents = layout_.count[r];
      s.return_sum = t.returns[r];
      s.length_sum = t.length * agents;
      s.count = t.count * agents;
      for (const double d : spec_.stat_divisors) s.term_sums.push_back(t.events * agents / d);
      out.push_back(s);
    }
    return out;
  }

  std::vector<StateArray> save_state(const ExecSpace& space) const override {
    std::vector<StateArray> out;
    for_each_array([&](const char* name, auto view, int width, bool is_rng) {
      out.push_back(save_state_array(space, name, view, is_rng, width));
    });
    return out;
  }

  void load_state(const ExecSpace& space, const std::vector<StateArray>& state) override {
    for_each_array([&](const char* name, auto view, int, bool) { load_state_array(space, view, name, state); });
    space.fence();
  }

  std::vector<StateArray> full_state(const ExecSpace& space) const override {
    std::vector<StateArray> out;
    game_.physical_state([&](const char* name, auto view, int width) {
      out.push_back(save_state_array(space, name, view, false, width));
    });
    out.push_back(save_state_array(space, "timestep", eps_.elapsed, false));
    return out;
  }

 private:
  template <class T>
  RolePtrs<T> gather(T* const* per_role) const {
    RolePtrs<T> p;
    for (int r = 0; r < layout_.roles; ++r) p.p[r] = per_role[r];
    return p;
  }

  /// f(name, view, width, is_rng): the game's arrays, then the episode bookkeeping's (the step and
  /// episode counters, the running and finished-episode statistics).
  template <class F>
  void for_each_array(F&& f) const {
    game_.for_each_state([&](const char* name, auto view, int width) { f(name, view, width, false); });
    eps_.for_each_array(f);
  }

  Game game_;
  RoleLayout layout_;
  std::uint64_t seed_;
  std::uint64_t offset_;
  /// Time limit, episode counter (timestep: WarpDrive's _timestep_), returns per agent, finished
  /// episodes' returns per role, lengths, counts and the game's events (GameStep::events).
  Episodes eps_;
};

}  // namespace gmi::envs
