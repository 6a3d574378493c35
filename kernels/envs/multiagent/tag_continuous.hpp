#pragma once
/// \file
/// \brief TagContinuous-v0: WarpDrive's example_envs/tag_continuous (TagContinuous and its CUDA
/// step) as a game for MultiAgentVecEnv.  Taggers and runners move on the square
/// [0, grid_length]^2 by choosing an acceleration and a turn each step.
///
/// Agents: taggers 0..T-1, runners T..A-1.  WarpDrive draws which agent ids are taggers at random
/// once per run; here the roles are contiguous, taggers first, so that every role's rows are one
/// block per environment (the games are otherwise the same: agent numbers only order the
/// observation's entries and break distance ties).
///
/// Step t of an agent still in the game, in float32 as WarpDrive's kernel:
///   acceleration += acc_levels[i]; direction = fmod(direction + turn_levels[j], 2 pi) (in [0, 2 pi));
///   speed = clamp(speed + acceleration, 0, max_speed * skill); acceleration = 0 if speed is at
///   either limit; x += speed cos(direction), y += speed sin(direction); a position outside the
///   square is clipped to it and the step costs edge_hit_penalty.
/// An agent out of the game keeps its position with speed, direction and acceleration 0.
/// The action is one index a = i * (num_turn_levels + 1) + j (WarpDrive's MultiDiscrete pair
/// flattened), or with multi_discrete_actions the pair (i, j) itself, two floats per row (WarpDrive's
/// action space: its policies have one softmax head per index): acc_levels = [0,
/// linspace(min_acceleration, max_acceleration, levels)], turn_levels likewise.
/// Rewards: every agent in the game gets edge penalty + step reward (step_penalty_for_tagger,
/// step_reward_for_runner); a runner in the game whose nearest tagger (lowest number on ties) is
/// closer than tagging_distance * grid_length is tagged: tag_penalty_for_runner to it and
/// tag_reward_for_tagger to that tagger (once per runner it tagged), and with
/// runner_exits_game_after_tagged it leaves the game; at step episode_length every runner still in
/// the game gets end_of_game_reward_for_runner.  The game is terminated when no runner is left, and
/// truncated at episode_length.
/// Observations (WarpDrive's order of operations: after the moves, before this step's tags take
/// runners out of the game), feature-major over M other agents, then t = step / episode_length:
///   [dx_1..dx_M, dy.., dspeed.., dacceleration.., ddirection.., type.., in_game.., t]   7 M + 1 values
/// with d* = other - self: positions / (grid_length sqrt 2), speeds and accelerations /
/// (max_speed + 1e-10), directions / 2 pi; type 1 tagger, 0 runner; in_game 1 or 0.
///   full (use_full_observation): M = A - 1, every other agent in number order; an observer out of
///   the game sees zeros but the others' type and in_game, and t = 0.
///   else: M = num_other_agents_observed, the nearest other agents still in the game, nearest first
///   (lower number on ties), zeros where fewer remain; an observer out of the game sees all zeros.
/// Initial state: starting_location_x/y and starting_directions if given, else x, y uniform in
/// [0, grid_length) and a direction among 0, pi/2, pi, 3 pi/2, drawn afresh each episode
/// (WarpDrive draws them once per run); speeds and accelerations 0, everyone in the game.
#include "kernels/core/kokkos.hpp"
#include "kernels/envs/multiagent/multi_agent.hpp"
#include "kernels/envs/multiagent/tag_params.hpp"

namespace gmi::envs {

struct TagContinuous {
  static constexpr const char* kKernelName = "gmi::envs::TagContinuous";
  static constexpr const char* kEvents = "tags";  ///< GameStep::events counts tags
  static constexpr int kFeatures = 7;
  /// Up to this many nearest agents are selected in one pass with a per-thread buffer.
  static constexpr int kNearestBuffer = 16;

  static MultiAgentSpec spec(const TagParams& p) {  // p resolved
    const int taggers = *p.num_taggers, runners = *p.num_runners, agents = taggers + runners;
    const int others = p.use_full_observation ? agents - 1 : p.num_other_agents_observed;
    const int obs_dim = kFeatures * others + 1;
    const int acc = p.num_acceleration_levels + 1, turn = p.num_turn_levels + 1;
    const int actions = p.multi_discrete_actions ? acc + turn : acc * turn;
    const std::vector<int> nvec = p.multi_discrete_actions ? std::vector<int>{acc, turn} : std::vector<int>{};
    MultiAgentSpec s;
    s.name = kTagContinuous;
    s.roles = {{"tagger", taggers, obs_dim, actions, nvec}, {"runner", runners, obs_dim, actions, nvec}};
    s.max_episode_steps = p.episode_length;
    s.stat_terms = {"runners_tagged", "tag_rate"};
    s.stat_divisors = {1.0, double(runners)};
    return s;
  }

  /// [0, then `levels` values evenly spaced from lo to hi]: WarpDrive's float32 endpoints, then
  /// numpy.linspace in double (lo + i * step, the last exactly hi), stored as float.
  static std::vector<float> action_levels(double lo_in, double hi_in, int levels) {
    const double lo = float(lo_in), hi = float(hi_in);
    std::vector<float> v{0.0f};
    for (int i = 0; i < levels; ++i)
      v.push_back(float(levels == 1 ? lo : i == levels - 1 ? hi : lo + double(i) * ((hi - lo) / (levels - 1))));
    return v;
  }

  TagContinuous(int n, const TagParams& p)  // p resolved
      : lay(spec(p)),
        taggers(*p.num_taggers),
        episode_length(p.episode_length),
        full_obs(p.use_full_observation),
        exits(p.runner_exits_game_after_tagged),
        nearest(p.num_other_agents_observed),
        turn_count(p.num_turn_levels + 1),
        num_actions((p.num_acceleration_levels + 1) * (p.num_turn_levels + 1)),
        multi_discrete(p.multi_discrete_actions),
        grid(float(p.grid_length)),
        diag(float(double(float(p.grid_length)) * 1.4142135623730951)),
        margin(float(p.tagging_distance * double(float(p.grid_length)))),
        speed_norm(float(p.max_speed) + 1e-10f),
        edge_penalty(float(p.edge_hit_penalty)),
        tag_reward(float(*p.tag_reward_for_tagger)),
        tag_penalty(float(*p.tag_penalty_for_runner)),
        end_reward(float(p.end_of_game_reward_for_runner)),
        given_xy(!p.starting_location_x.empty()),
        given_dir(!p.starting_directions.empty()),
        acc_levels("gmi::envs::TagContinuous::acc_levels", p.num_acceleration_levels + 1),
        turn_levels("gmi::envs::TagContinuous::turn_levels", p.num_turn_levels + 1),
        start_x("gmi::envs::TagContinuous::start_x", given_xy ? lay.agents : 0),
        start_y("gmi::envs::TagContinuous::start_y", given_xy ? lay.agents : 0),
        start_dir("gmi::envs::TagContinuous::start_dir", given_dir ? lay.agents : 0),
        loc_x("gmi::envs::TagContinuous::loc_x", std::size_t(n) * lay.agents),
        loc_y("gmi::envs::TagContinuous::loc_y", std::size_t(n) * lay.agents),
        speed("gmi::envs::TagContinuous::speed", std::size_t(n) * lay.agents),
        direction("gmi::envs::TagContinuous::direction", std::size_t(n) * lay.agents),
        acceleration("gmi::envs::TagContinuous::acceleration", std::size_t(n) * lay.agents),
        still("gmi::envs::TagContinuous::still_in_game", std::size_t(n) * lay.agents),
        tag_count("gmi::envs::TagContinuous::tag_count", std::size_t(n) * lay.agents),
        tagged_now("gmi::envs::TagContinuous::tagged_now", std::size_t(n) * lay.agents) {
    const float max_speed = float(p.max_speed);
    speed_limit[0] = max_speed * float(p.skill_level_tagger);
    speed_limit[1] = max_speed * float(p.skill_level_runner);
    step_reward[0] = float(p.step_penalty_for_tagger);
    step_reward[1] = float(p.step_reward_for_runner);
    copy_in(acc_levels, action_levels(p.min_acceleration, p.max_acceleration, p.num_acceleration_levels));
    copy_in(turn_levels, action_levels(p.min_turn, p.max_turn, p.num_turn_levels));
    if (given_xy) {
      copy_in(start_x, std::vector<float>(p.starting_location_x.begin(), p.starting_location_x.end()));
      copy_in(start_y, std::vector<float>(p.starting_location_y.begin(), p.starting_location_y.end()));
    }
    if (given_dir) copy_in(start_dir, std::vector<float>(p.starting_directions.begin(), p.starting_directions.end()));
  }

  KOKKOS_INLINE_FUNCTION void reset(const TeamMember& m, int e, std::uint64_t seed, std::uint64_t episode,
                                    std::uint64_t env) const {
    const std::size_t base = std::size_t(e) * lay.agents;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) {
      const std::size_t i = base + a;
      const rng::Bits4 b = agent_reset_bits(seed, episode, env, a);
      loc_x(i) = given_xy ? start_x(a) : rng::uniform(b.v[0], 0.0f, grid);
      loc_y(i) = given_xy ? start_y(a) : rng::uniform(b.v[1], 0.0f, grid);
      direction(i) = given_dir ? start_dir(a) : float(double(b.v[2] >> 30) * (math::pi<double> / 2));
      speed(i) = 0.0f;
      acceleration(i) = 0.0f;
      still(i) = 1;
    });
  }

  /// The action index f (a float) clamped to [0, n).
  KOKKOS_INLINE_FUNCTION static int index_in(float f, int n) {
    return f >= 1.0f ? (f < float(n - 1) ? int(f) : n - 1) : 0;
  }

  /// Euclidean distance in float32, as WarpDrive's (sqrt of the summed squares).
  KOKKOS_INLINE_FUNCTION float distance(std::size_t i, std::size_t j) const {
    const float dx = loc_x(i) - loc_x(j), dy = loc_y(i) - loc_y(j);
#if defined(__CUDA_ARCH__)
    return math::sqrt(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)));  // no FMA: the host's rounding
#else
    return math::sqrt(dx * dx + dy * dy);
#endif
  }

  KOKKOS_INLINE_FUNCTION GameStep advance(const TeamMember& m, int e, int t, const RolePtrs<const float>& act,
                                          const RolePtrs<float>& rew) const {
    const std::size_t base = std::size_t(e) * lay.agents;
    const float two_pi = 2.0f * math::pi<float>;
    // Moves, and the rewards every agent in the game gets.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lay.agents), [&](int a) {
      const std::size_t i = base + a;
      const int r = lay.role(a);
      const std::size_t row = lay.row(e, a, r);
      int ia, it;  // acceleration and turn indices
      if (multi_discrete) {
        ia = index_in(act.p[r][2 * row], num_actions / turn_count);
        it = index_in(act.p[r][2 * row + 1], turn_count);
      } else {
        const int k = index_in(act.p[r][row], num_actions);
        ia = k / turn_count;
        it = k % turn_count;
      }
      const float in = float(still(i));
      float acc = acceleration(i) + acc_levels(ia);
      float dir = math::fmod(direction(i) + turn_levels(it), two_pi) * in;
      if (dir < 0.0f) dir = two_pi + dir;
      const float limit = speed_limit[r];
      const float sp = math::min(limit, math::max(0.0f, speed(i) + acc)) * in;
      if (sp <= 0.0f || sp >= limit) acc = 0.0f;
      float x = loc_x(i) + sp * math::cos(dir);
      float y = loc_y(i) + sp * math::sin(dir);
      const bool edge = x < 0.0f || x > grid || y < 0.0f || y > grid;
      x = math::clamp(x, 0.0f, grid);
      y = math::clamp(y, 0.0f, grid);
      loc_x(i) = x;
      loc_y(i) = y;
      speed(i) = sp;
      direction(i) = dir;
      acceleration(i) = acc;
      tag_count(i) = 0;
      tagged_now(i) = 0;
      float out = 0.0f;
      if (still(i)) {
        out += edge ? edge_penalty : 0.0f;
        out += step_reward[r];
      }
      rew.p[r][row] = out;
    });
    m.team_barrier();
    // Tags: every runner in the game against its nearest tagger.
    int tags = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, taggers, lay.agents),
        [&](int a, int& n) {
          const std::size_t i = base + a;
          if (!still(i)) return;
          int near = 0;
          float best = distance(i, base);
          for (int j = 1; j < taggers; ++j) {
            const float d = distance(i, base + j);
            if (d < best) {
              best = d;
              near = j;
            }
          }
          if (best < margin) {
            tagged_now(i) = 1;
            Kokkos::atomic_add(&tag_count(base + near), 1);
            ++n;
          }
        },
        tags);
    m.team_barrier();
    // Tag rewards and penalties, the end-of-game reward, the runners left.
    int left = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, lay.agents),
        [&](int a, int& n) {
          const std::size_t i = base + a;
          const int r = lay.role(a);
          float& out = rew.p[r][lay.row(e, a, r)];
          if (a < taggers) {
            for (int c = tag_count(i); c > 0; --c) out += tag_reward;
            return;
          }
          bool in = still(i) != 0;
          if (tagged_now(i)) {
            out += tag_penalty;
            if (exits) in = false;
          }
          if (in && t == episode_length) out += end_reward;
          n += in;
        },
        left);
    GameStep s;
    s.terminated = left == 0;
    s.events = tags;
    return s;
  }

  /// The 7 features of agent j seen from agent i, into slot `slot` of M.
  KOKKOS_INLINE_FUNCTION void features(float* o, int slots, int slot, std::size_t i, std::size_t j, int j_agent) const {
    const float two_pi = 2.0f * math::pi<float>;
    o[slot] = (loc_x(j) - loc_x(i)) / diag;
    o[slots + slot] = (loc_y(j) - loc_y(i)) / diag;
    o[2 * slots + slot] = (speed(j) - speed(i)) / speed_norm;
    o[3 * slots + slot] = (acceleration(j) - acceleration(i)) / speed_norm;
    o[4 * slots + slot] = (direction(j) - direction(i)) / two_pi;
    o[5 * slots + slot] = j_agent < taggers ? 1.0f : 0.0f;
    o[6 * slots + slot] = float(still(j));
  }

  KOKKOS_INLINE_FUNCTION void observe(const TeamMember& m, int e, int t, const RolePtrs<float>& obs) const {
    const std::size_t base = std::size_t(e) * lay.agents;
    const int agents = lay.agents;
    const float time = float(t) / float(episode_length);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, agents), [&](int a) {
      const std::size_t i = base + a;
      float* o = lay.obs(obs, e, a);
      const bool in = still(i) != 0;
      if (full_obs) {
        const int slots = agents - 1;
        for (int j = 0, slot = 0; j < agents; ++j) {
          if (j == a) continue;
          if (in) {
            features(o, slots, slot, i, base + j, j);
          } else {
            for (int f = 0; f < 5; ++f) o[f * slots + slot] = 0.0f;
            o[5 * slots + slot] = j < taggers ? 1.0f : 0.0f;
            o[6 * slots + slot] = float(still(base + j));
          }
          ++slot;
        }
        o[kFeatures * slots] = in ? time : 0.0f;
        return;
      }
      // The K nearest agents still in the game, nearest first, lower number on ties.
      const int slots = nearest;
      int filled = 0;
      if (in && slots <= kNearestBuffer) {
        // One pass over the agents, keeping the K best in a sorted buffer (registers / local
        // memory): an agent joins behind those at an equal distance, as it comes later.
        float best_d[kNearestBuffer];
        int best_j[kNearestBuffer];
        for (int j = 0; j < agents; ++j) {
          if (j == a || !still(base + j)) continue;
          const float d = distance(i, base + j);
          if (filled == slots && !(d < best_d[slots - 1])) continue;
          int p = filled < slots ? filled++ : slots - 1;
          for (; p > 0 && d < best_d[p - 1]; --p) {
            best_d[p] = best_d[p - 1];
            best_j[p] = best_j[p - 1];
          }
          best_d[p] = d;
          best_j[p] = j;
        }
        for (int slot = 0; slot < filled; ++slot) features(o, slots, slot, i, base + best_j[slot], best_j[slot]);
      } else if (in) {
        // K > kNearestBuffer: K passes, each taking the nearest agent beyond the previous one in
        // (distance, number) order; O(K A) distances but no per-agent buffer.
        float last_d = -1.0f;
        int last_j = -1;
        for (; filled < slots; ++filled) {
          int pick = -1;
          float pick_d = 0.0f;
          for (int j = 0; j < agents; ++j) {
            if (j == a || !still(base + j)) continue;
            const float d = distance(i, base + j);
            if (d < last_d || (d == last_d && j <= last_j)) continue;  // taken already
            if (pick < 0 || d < pick_d) {
              pick = j;
              pick_d = d;
            }
          }
          if (pick < 0) break;
          features(o, slots, filled, i, base + pick, pick);
          last_d = pick_d;
          last_j = pick;
        }
      }
      for (int slot = filled; slot < slots; ++slot)
        for (int f = 0; f < kFeatures; ++f) o[f * slots + slot] = 0.0f;
      o[kFeatures * slots] = in ? time : 0.0f;
    });
  }

  /// Tagged runners leave the game after this step's observation (WarpDrive's order).
  KOKKOS_INLINE_FUNCTION void commit(const TeamMember& m, int e) const {
    if (!exits) return;
    const std::size_t base = std::size_t(e) * lay.agents;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, taggers, lay.agents), [&](int a) {
      if (tagged_now(base + a)) still(base + a) = 0;
    });
  }

  template <class F>
  void for_each_state(F&& f) const {
    physical_state(f);
  }
  template <class F>
  void physical_state(F&& f) const {
    f("loc_x", loc_x, lay.agents);
    f("loc_y", loc_y, lay.agents);
    f("speed", speed, lay.agents);
    f("direction", direction, lay.agents);
    f("acceleration", acceleration, lay.agents);
    f("still_in_game", still, lay.agents);
  }

  RoleLayout lay;
  int taggers, episode_length;
  bool full_obs, exits;
  int nearest, turn_count, num_actions;  ///< num_actions: every (acceleration, turn) pair
  bool multi_discrete;                   ///< actions as two indices (acceleration, turn), not one
  float grid, diag, margin, speed_norm, edge_penalty, tag_reward, tag_penalty, end_reward;
  float speed_limit[2] = {}, step_reward[2] = {};  ///< per role: tagger, runner
  bool given_xy, given_dir;
  View1<float> acc_levels, turn_levels;  ///< [levels + 1], action 0 first
  View1<float> start_x, start_y, start_dir;
  View1<float> loc_x, loc_y, speed, direction, acceleration;  ///< [N * agents]
  View1<int> still;                       ///< [N * agents] 1 in the game, 0 left
  View1<int> tag_count, tagged_now;       ///< [N * agents] workspace of one step

 private:
  static void copy_in(const View1<float>& to, const std::vector<float>& from) {
    auto h = Kokkos::create_mirror_view(to);
    for (std::size_t k = 0; k < from.size(); ++k) h(k) = from[k];
    Kokkos::deep_copy(to, h);
  }
};

}  // namespace gmi::envs
