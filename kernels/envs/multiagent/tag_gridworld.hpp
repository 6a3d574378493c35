#pragma once
/// \file
/// \brief TagGridworld-v0: WarpDrive's example_envs/tag_gridworld (TagGridWorld and its CUDA step)
/// as a game for MultiAgentVecEnv.  num_taggers taggers chase one runner on the integer grid
/// 0..grid_length per axis; a move that would leave the grid is clipped and costs
/// wall_hit_penalty; the runner is tagged when a tagger stands on its cell after the moves, which
/// ends the game (terminated); otherwise it ends at episode_length (truncated).
///
/// Agents: taggers 0..T-1, the runner T (as WarpDrive's gridworld, whose runner is its last agent).
/// Actions (5): 0 stay, 1 x+1, 2 x-1, 3 y+1, 4 y-1.
/// Rewards per step: wall penalty (-wall_hit_penalty or 0), plus, with a tag, tag_reward_for_tagger
/// to every tagger and -tag_penalty_for_runner to the runner, else -step_cost_for_tagger to every
/// tagger and +step_cost_for_tagger to the runner.
/// Observations, every coordinate divided by grid_length, t = step / episode_length:
///   full (use_full_observation): [x_0..x_{A-1}, y_0..y_{A-1}, type_0..type_{A-1} (runner 1, taggers 0),
///         self_0..self_{A-1} (1 at the observer), t]                       4A + 1 values
///   else: [x, y of the observer, x, y of the runner (the runner: of its nearest tagger, lowest
///         number on ties), type of the observer, t]                           6 values
/// Initial state: starting_location_x/y if given; else (WarpDrive's reset-pool variant, drawn
/// afresh each episode) every tagger on a uniform cell of 1..grid_length-1 per axis and the runner
/// at (0, 0).
#include "kernels/core/kokkos.hpp"
#include "kernels/envs/multiagent/multi_agent.hpp"
#include "kernels/envs/multiagent/tag_params.hpp"

namespace gmi::envs {

struct TagGridworld {
  static constexpr const char* kKernelName = "gmi::envs::TagGridworld";
  static constexpr const char* kEvents = "tags";  ///< GameStep::events counts tags
  static constexpr int kNumActions = 5;

  static MultiAgentSpec spec(const TagParams& p) {  // p resolved
    const int taggers = *p.num_taggers, agents = taggers + 1;
    const int obs_dim = p.use_full_observation ? 4 * agents + 1 : 6;
    MultiAgentSpec s;
    s.name = kTagGridworld;
    s.roles = {{"tagger", taggers, obs_dim, kNumActions, {}}, {"runner", 1, obs_dim, kNumActions, {}}};
    s.max_episode_steps = p.episode_length;
    s.stat_terms = {"runners_tagged", "tag_rate"};
    s.stat_divisors = {1.0, 1.0};  // one runner
    return s;
  }

  TagGridworld(int n, const TagParams& p)  // p resolved
      : lay(spec(p)),
        taggers(*p.num_taggers),
        grid(int(p.grid_length)),
        episode_length(p.episode_length),
        full_obs(p.use_full_observation),
        wall_hit_penalty(float(p.wall_hit_penalty)),
        tag_reward(float(*p.tag_reward_for_tagger)),
        tag_penalty(float(*p.tag_penalty_for_runner)),
        step_cost(float(p.step_cost_for_tagger)),
        given_start(!p.starting_location_x.empty()),
        start_x("gmi::envs::TagGridworld::start_x", given_start ? lay.agents : 0),
        start_y("gmi::envs::TagGridworld::start_y", given_start ? lay.agents : 0),
        loc_x("gmi::envs::TagGridworld::loc_x", std::size_t(n) * lay.agents),
        loc_y("gmi::envs::TagGridworld::loc_y", std::size_t(n) * lay.agents) {
    if (given_start) {
      auto hx = Kokkos::create_mirror_view(start_x);
      auto hy = Kokkos::create_mirror_view(start_y);
      for (int a = 0; a < lay.agents; ++a) {
        hx(a) = int(p.starting_location_x[a]);
        hy(a) = int(p.starting_location_y[a]);
      }
      Kokkos::deep_copy(start_x, hx);
      Kokkos::deep_copy(start_y, hy);
    }
  }

  KOKKOS_INLINE_FUNCTION void reset(const TeamMember& m, int e, std::uint64_t seed, std::uint64_t episode,
                                    std::uint64_t env) const {
    const std::size_t base = std::size_t(e) * lay.agents;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) {
      if (given_start) {
        loc_x(base + a) = start_x(a);
        loc_y(base + a) = start_y(a);
      } else if (a < taggers) {
        const rng::Bits4 b = agent_reset_bits(seed, episode, env, a);
        const std::uint32_t cells = std::uint32_t(grid - 1);  // 1..grid-1
        loc_x(base + a) = 1 + int((std::uint64_t(b.v[0]) * cells) >> 32);
        loc_y(base + a) = 1 + int((std::uint64_t(b.v[1]) * cells) >> 32);
      } else {
        loc_x(base + a) = 0;
        loc_y(base + a) = 0;
      }
    });
  }

  KOKKOS_INLINE_FUNCTION GameStep advance(const TeamMember& m, int e, int t, const RolePtrs<const float>& act,
                                          const RolePtrs<float>& rew) const {
    const std::size_t base = std::size_t(e) * lay.agents;
    const int runner = lay.agents - 1;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) {
      const int r = lay.role(a);
      const std::size_t row = lay.row(e, a, r);
      const float f = act.p[r][row];
      const int k = f >= 1.0f ? (f < float(kNumActions - 1) ? int(f) : kNumActions - 1) : 0;
      int x = loc_x(base + a) + (k == 1) - (k == 2);
      int y = loc_y(base + a) + (k == 3) - (k == 4);
      float pen = 0.0f;
      if (x < 0 || x > grid) {
        x = x < 0 ? 0 : grid;
        pen -= wall_hit_penalty;
      }
      if (y < 0 || y > grid) {
        y = y < 0 ? 0 : grid;
        pen -= wall_hit_penalty;
      }
      loc_x(base + a) = x;
      loc_y(base + a) = y;
      rew.p[r][row] = pen;
    });
    m.team_barrier();
    const int rx = loc_x(base + runner), ry = loc_y(base + runner);
    int hits = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, taggers),
        [&](int a, int& n) { n += loc_x(base + a) == rx && loc_y(base + a) == ry; }, hits);
    const bool tagged = hits > 0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) {
      const int r = lay.role(a);
      float& out = rew.p[r][lay.row(e, a, r)];
      if (a < taggers)
        out = tagged ? out + tag_reward : out - step_cost;
      else
        out = tagged ? out - tag_penalty : out + step_cost;
    });
    GameStep s;
    s.terminated = tagged;
    s.events = tagged ? 1 : 0;
    return s;
  }

  KOKKOS_INLINE_FUNCTION void observe(const TeamMember& m, int e, int t, const RolePtrs<float>& obs) const {
    const std::size_t base = std::size_t(e) * lay.agents;
    const int agents = lay.agents, runner = agents - 1;
    const float g = float(grid), time = float(t) / float(episode_length);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, agents), [&](int a) {
      float* o = lay.obs(obs, e, a);
      if (full_obs) {
        for (int j = 0; j < agents; ++j) {
          o[j] = float(loc_x(base + j)) / g;
          o[agents + j] = float(loc_y(base + j)) / g;
          o[2 * agents + j] = j == runner ? 1.0f : 0.0f;
          o[3 * agents + j] = j == a ? 1.0f : 0.0f;
        }
        o[4 * agents] = time;
        return;
      }
      const int x = loc_x(base + a), y = loc_y(base + a);
      int other = runner;
      if (a == runner) {  // the nearest tagger, by squared grid distance
        int best = -1;
        for (int j = 0; j < taggers; ++j) {
          const int dx = loc_x(base + j) - x, dy = loc_y(base + j) - y;
          const int d = dx * dx + dy * dy;
          if (best < 0 || d < best) {
            best = d;
            other = j;
          }
        }
      }
      o[0] = float(x) / g;
      o[1] = float(y) / g;
      o[2] = float(loc_x(base + other)) / g;
      o[3] = float(loc_y(base + other)) / g;
      o[4] = a == runner ? 1.0f : 0.0f;
      o[5] = time;
    });
  }

  KOKKOS_INLINE_FUNCTION void commit(const TeamMember&, int) const {}

  template <class F>
  void for_each_state(F&& f) const {
    physical_state(f);
  }
  template <class F>
  void physical_state(F&& f) const {
    f("loc_x", loc_x, lay.agents);
    f("loc_y", loc_y, lay.agents);
  }

  RoleLayout lay;
  int taggers, grid, episode_length;
  bool full_obs;
  float wall_hit_penalty, tag_reward, tag_penalty, step_cost;
  bool given_start;
  View1<int> start_x, start_y;  ///< [agents] when given
  View1<int> loc_x, loc_y;      ///< [N * agents]
};

}  // namespace gmi::envs
