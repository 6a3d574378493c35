#pragma once
/// \file
/// \brief Per-env episode bookkeeping shared by the single- and multi-agent environments
/// (VecEnv, MultiAgentVecEnv): Gymnasium's TimeLimit, the episode (reset) counter, the running
/// return and the statistics of finished episodes, reduced only when asked for.
///
/// Single-agent envs are the case of one agent and one group.  The layers keep what is their own:
/// calling the environment, drawing initial states, and (multi-agent) summing a role's agents.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"

namespace gmi::envs {

/// Checkpoint names of the arrays where the two layers differ (older checkpoints fix them).
/// Pointers to string literals, so Episodes stays trivially copyable into kernels.
struct EpisodeNames {
  const char* elapsed = "elapsed";        ///< MultiAgentVecEnv: "timestep" (WarpDrive's name)
  const char* done_count = "done_count";  ///< MultiAgentVecEnv: "done_episodes"
  /// What the game counts per episode (MultiAgentVecEnv: Game::kEvents, checkpointed as
  /// "ep_<events>" and "done_<events>"); nullptr: nothing (VecEnv).
  const char* events = nullptr;
};

/// Sums over envs of the episodes finished since the last take.
struct EpisodeTotals {
  std::vector<double> returns;  ///< per group: the sums of its agents' returns
  double length = 0.0;          ///< steps, summed over episodes (not agents)
  double count = 0.0;           ///< episodes
  double events = 0.0;          ///< the game's events (EpisodeNames::events)
};

/// \brief N envs' step and episode counters and statistics, in device Views.
///
/// Copy it into a kernel; the counter members (start, go_on, bank_return, finish) run for env e on
/// one thread (in a team: inside Kokkos::single).  Agent a of env e has running return ret(e, a)
/// (a team thread per agent); a finished episode's returns are added per group (bank_return): the
/// sum over a role's agents, or the one agent's return.
struct Episodes {
  View1<int> elapsed;            ///< [N] steps of the current episode (TimeLimit)
  View1<std::uint64_t> episode;  ///< [N] episodes started by this env so far (reset counter)
  View1<float> ep_return;        ///< [N * agents] undiscounted return of the current episode
  View1<int> ep_events;          ///< [N] the game's events in the current episode (if named)
  View1<double> done_return;     ///< [N * groups] sums over episodes finished since the last take
  View1<double> done_length;     ///< [N]
  View1<double> done_count;      ///< [N]
  View1<double> done_events;     ///< [N] (if named)
  int max_steps = 0;             ///< truncated when an episode reaches it
  int agents = 1;                ///< per env
  int groups = 1;                ///< return sums per env (roles)
  EpisodeNames names;

  Episodes() = default;
  /// \param label  prefix of the Views' labels ("gmi::envs::VecEnv")
  Episodes(const std::string& label, int num_envs, int max_episode_steps, int agents_per_env, int num_groups,
           const EpisodeNames& n = {})
      : elapsed(label + "::elapsed", num_envs),
        episode(label + "::episode", num_envs),
        ep_return(label + "::ep_return", std::size_t(num_envs) * agents_per_env),
        ep_events(label + "::ep_events", n.events ? num_envs : 0),
        done_return(label + "::done_return", std::size_t(num_envs) * num_groups),
        done_length(label + "::done_length", num_envs),
        done_count(label + "::done_count", num_envs),
        done_events(label + "::done_events", n.events ? num_envs : 0),
        max_steps(max_episode_steps),
        agents(agents_per_env),
        groups(num_groups),
        names(n) {}

  bool has_events() const { return names.events != nullptr; }

  // --- device: env e ---------------------------------------------------------------------------

  /// Start episode k: the counters at 0 (the running returns are the caller's: ret(e, a) = 0).
  KOKKOS_INLINE_FUNCTION void start(int e, std::uint64_t k) const {
    episode(e) = k;
    elapsed(e) = 0;
    if (ep_events.extent(0)) ep_events(e) = 0;
  }
  /// The number of the step env e takes now (1 for an episode's first).
  KOKKOS_INLINE_FUNCTION int step_number(int e) const { return elapsed(e) + 1; }
  /// Whether step t reaches the time limit (truncation).
  KOKKOS_INLINE_FUNCTION bool truncates(int t) const { return t >= max_steps; }
  /// Agent a's running return.
  KOKKOS_INLINE_FUNCTION float& ret(int e, int a = 0) const { return ep_return(std::size_t(e) * agents + a); }
  /// Step t did not end the episode; the game counted `events` in it.
  KOKKOS_INLINE_FUNCTION void go_on(int e, int t, int events = 0) const {
    elapsed(e) = t;
    if (ep_events.extent(0)) ep_events(e) += events;
  }
  /// Add a finished episode's return summed over group g's agents.
  KOKKOS_INLINE_FUNCTION void bank_return(int e, int g, double sum) const {
    done_return(std::size_t(e) * groups + g) += sum;
  }
  /// Step t ended the episode (the game counted `events` in it): add its length and events to
  /// the finished episodes and start the next episode's counters; returns that episode's index.
  KOKKOS_INLINE_FUNCTION std::uint64_t finish(int e, int t, int events = 0) const {
    done_length(e) += t;
    done_count(e) += 1.0;
    if (ep_events.extent(0)) done_events(e) += ep_events(e) + events;
    const std::uint64_t k = episode(e) + 1;
    start(e, k);
    return k;
  }

  // --- host ------------------------------------------------------------------------------------

  /// Forget the finished episodes (after a take, or on a reset of every env).
  void clear_done(const ExecSpace& space) const {
    Kokkos::deep_copy(space, done_return, 0.0);
    Kokkos::deep_copy(space, done_length, 0.0);
    Kokkos::deep_copy(space, done_count, 0.0);
    if (has_events()) Kokkos::deep_copy(space, done_events, 0.0);
  }

  /// Sum the finished episodes over envs (kernels "<prefix>::episode_stats", "...::episode_returns"),
  /// then clear them.
  EpisodeTotals take(const ExecSpace& space, const std::string& prefix) const {
    const Sums sums{done_return, done_length, done_count, done_events, groups};
    const int n = int(elapsed.extent(0)), ng = groups;
    EpisodeTotals s;
    s.returns.assign(ng, 0.0);
    // The shapes are those the two layers had before sharing this: on CUDA a reduction of one
    // double and one of three add in different orders, so the returns' last bits depend on them.
    int g0 = 0;
    if (!has_events()) {
      Kokkos::parallel_reduce(prefix + "::episode_stats", Range(space, 0, n), sums, s.returns[0], s.length, s.count);
      g0 = 1;
    } else {
      Kokkos::parallel_reduce(prefix + "::episode_stats", Range(space, 0, n), WithEvents{sums}, s.length, s.count,
                              s.events);
    }
    for (int g = g0; g < ng; ++g)
      Kokkos::parallel_reduce(prefix + "::episode_returns", Range(space, 0, n), GroupReturns{sums, g}, s.returns[g]);
    clear_done(space);
    return s;
  }

  // take()'s reductions as named functors, not KOKKOS_LAMBDAs: an extended lambda in a header
  // function that several files compile gets one host helper per file, and the linker may keep a
  // launch from a file whose helper was never set (see kernels/optim/adam.hpp's AdamElements).
  /// Returns of group 0, lengths and counts.
  struct Sums {
    View1<double> dr, dl, dc, de;
    int ng = 1;
    KOKKOS_INLINE_FUNCTION void operator()(const int e, double& r, double& l, double& c) const {
      r += dr(std::size_t(e) * ng);
      l += dl(e);
      c += dc(e);
    }
  };
  /// Lengths, counts and events.
  struct WithEvents {
    Sums s;
    KOKKOS_INLINE_FUNCTION void operator()(const int e, double& l, double& c, double& v) const {
      l += s.dl(e);
      c += s.dc(e);
      v += s.de(e);
    }
  };
  /// Returns of group g.
  struct GroupReturns {
    Sums s;
    int g = 0;
    KOKKOS_INLINE_FUNCTION void operator()(const int e, double& acc) const { acc += s.dr(std::size_t(e) * s.ng + g); }
  };

  /// f(name, view, width, is_rng) for every array, in the checkpoints' order: the step and episode
  /// counters, the running returns (and events), the finished episodes' sums.
  template <class F>
  void for_each_array(F&& f) const {
    const std::string events = names.events ? names.events : "";
    f(names.elapsed, elapsed, 1, false);
    f("episode", episode, 1, true);
    f("ep_return", ep_return, agents, false);
    if (has_events()) f(("ep_" + events).c_str(), ep_events, 1, false);
    f("done_return", done_return, groups, false);
    f("done_length", done_length, 1, false);
    f(names.done_count, done_count, 1, false);
    if (has_events()) f(("done_" + events).c_str(), done_events, 1, false);
  }
};

}  // namespace gmi::envs
