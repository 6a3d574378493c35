"""An independent NumPy implementation of the step rules of WarpDrive's two Tag games
(example_envs/tag_gridworld and example_envs/tag_continuous), written from WarpDrive's source
for compare_tag.py, with gmi_drl's layout: one environment, agents numbered taggers first, the
continuous game's (acceleration, turn) action pair flattened to one index a = i * (turns + 1) + j,
arithmetic in float32 as WarpDrive's kernels.

    game = make_game(name, params)          # params: every TagParams field, resolved
    out = rollout(game, initial_state, actions, next_initial_state)

A state is a dict of arrays over agents (loc_x, loc_y; continuous also speed, direction,
acceleration, still_in_game) plus the step counter timestep.
"""
import ctypes
import ctypes.util

import numpy as np

f32 = np.float32

# cos and sin in float32: the C library's cosf/sinf, the functions the host build of gmi_drl
# calls, so that a last-bit difference cannot reorder near-equal distances over 200 steps (NumPy's
# own float32 cos may differ by an ulp); without a C library, double rounded to float32.
try:
    _libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for _fn in (_libm.cosf, _libm.sinf):
        _fn.restype, _fn.argtypes = ctypes.c_float, [ctypes.c_float]
    _cos = np.vectorize(lambda v: _libm.cosf(v), otypes=[f32])
    _sin = np.vectorize(lambda v: _libm.sinf(v), otypes=[f32])
except OSError:
    def _cos(x):
        return np.cos(x.astype(np.float64)).astype(f32)

    def _sin(x):
        return np.sin(x.astype(np.float64)).astype(f32)


class TagGridworld:
    """Taggers 0..T-1 chase one runner (agent T) on the cells 0..grid_length per axis."""

    moves = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.int64)

    def __init__(self, p):
        self.taggers = p["num_taggers"]
        self.agents = self.taggers + 1
        self.grid = int(p["grid_length"])
        self.length = p["episode_length"]
        self.full = p["use_full_observation"]
        self.wall = f32(p["wall_hit_penalty"])
        self.tag_reward = f32(p["tag_reward_for_tagger"])
        self.tag_penalty = f32(p["tag_penalty_for_runner"])
        self.step_cost = f32(p["step_cost_for_tagger"])
        self.obs_dim = 4 * self.agents + 1 if self.full else 6

    def set_state(self, s):
        self.x = np.asarray(s["loc_x"], dtype=np.int64).copy()
        self.y = np.asarray(s["loc_y"], dtype=np.int64).copy()
        self.t = int(s["timestep"])

    def state(self):
        return {"loc_x": self.x.copy(), "loc_y": self.y.copy(), "timestep": self.t}

    def observe(self):
        a, g = self.agents, f32(self.grid)
        xs, ys = self.x.astype(f32) / g, self.y.astype(f32) / g
        time = f32(self.t) / f32(self.length)
        types = np.zeros(a, dtype=f32)
        types[-1] = 1  # the runner
        if self.full:
            obs = np.empty((a, 4 * a + 1), dtype=f32)
            obs[:, :a] = xs
            obs[:, a:2 * a] = ys
            obs[:, 2 * a:3 * a] = types
            obs[:, 3 * a:4 * a] = np.eye(a, dtype=f32)
            obs[:, 4 * a] = time
            return obs
        obs = np.empty((a, 6), dtype=f32)
        obs[:, 0], obs[:, 1] = xs, ys
        # taggers see the runner; the runner its nearest tagger (argmin: first on ties)
        d = (self.x[:-1] - self.x[-1]) ** 2 + (self.y[:-1] - self.y[-1]) ** 2
        other = np.full(a, a - 1)
        other[-1] = int(np.argmin(d))
        obs[:, 2], obs[:, 3] = xs[other], ys[other]
        obs[:, 4] = types
        obs[:, 5] = time
        return obs

    def step(self, actions):
        self.t += 1
        mv = self.moves[np.asarray(actions, dtype=np.int64)]
        x, y = self.x + mv[:, 0], self.y + mv[:, 1]
        pen = np.zeros(self.agents, dtype=f32)
        for v in (x, y):
            out = (v < 0) | (v > self.grid)
            pen[out] = pen[out] - self.wall
        self.x, self.y = np.clip(x, 0, self.grid), np.clip(y, 0, self.grid)
        tagged = bool(np.any((self.x[:-1] == self.x[-1]) & (self.y[:-1] == self.y[-1])))
        rew = pen.copy()
        if tagged:
            rew[:-1] = pen[:-1] + self.tag_reward
            rew[-1] = pen[-1] - self.tag_penalty
        else:
            rew[:-1] = pen[:-1] - self.step_cost
            rew[-1] = pen[-1] + self.step_cost
        return self.observe(), rew, tagged, self.t >= self.length, int(tagged)


class TagContinuous:
    """Taggers 0..T-1 and runners T..A-1 accelerating and turning on [0, grid_length]^2."""

    features = 7

    def __init__(self, p):
        self.taggers = p["num_taggers"]
        self.agents = self.taggers + p["num_runners"]
        self.grid = f32(p["grid_length"])
        self.length = p["episode_length"]
        self.full = p["use_full_observation"]
        self.k = p["num_other_agents_observed"]
        self.exits = p["runner_exits_game_after_tagged"]
        self.is_tagger = np.arange(self.agents) < self.taggers
        # action levels: 0 first, then numpy.linspace in double over WarpDrive's float32 endpoints
        # (NumPy 1's promotion of WarpDrive's scalars), rounded to float32
        def levels(lo, hi, n):
            return np.concatenate([[0.0], np.linspace(np.float64(f32(lo)), np.float64(f32(hi)), n)]).astype(f32)
        self.acc_levels = levels(p["min_acceleration"], p["max_acceleration"], p["num_acceleration_levels"])
        self.turn_levels = levels(p["min_turn"], p["max_turn"], p["num_turn_levels"])
        max_speed = f32(p["max_speed"])
        self.limit = np.where(self.is_tagger, max_speed * f32(p["skill_level_tagger"]),
                              max_speed * f32(p["skill_level_runner"])).astype(f32)
        self.step_reward = np.where(self.is_tagger, f32(p["step_penalty_for_tagger"]),
                                    f32(p["step_reward_for_runner"])).astype(f32)
        self.edge_penalty = f32(p["edge_hit_penalty"])
        self.margin = f32(p["tagging_distance"] * np.float64(self.grid))
        self.tag_reward = f32(p["tag_reward_for_tagger"])
        self.tag_penalty = f32(p["tag_penalty_for_runner"])
        self.end_reward = f32(p["end_of_game_reward_for_runner"])
        self.diag = f32(np.float64(self.grid) * np.sqrt(2.0))
        self.speed_norm = max_speed + f32(1e-10)
        self.two_pi = f32(2 * np.pi)
        others = self.agents - 1 if self.full else self.k
        self.obs_dim = self.features * others + 1

    def set_state(self, s):
        for key in ("loc_x", "loc_y", "speed", "direction", "acceleration"):
            setattr(self, key, np.asarray(s[key], dtype=f32).copy())
        self.still = np.asarray(s["still_in_game"], dtype=np.int64).copy()
        self.t = int(s["timestep"])

    def state(self):
        s = {k: getattr(self, k).copy() for k in ("loc_x", "loc_y", "speed", "direction", "acceleration")}
        s["still_in_game"] = self.still.copy()
        s["timestep"] = self.t
        return s

    def _distances(self):
        dx = self.loc_x[:, None] - self.loc_x[None, :]
        dy = self.loc_y[:, None] - self.loc_y[None, :]
        return np.sqrt(dx * dx + dy * dy)  # float32, [observer, other]

    def observe(self):
        a, time = self.agents, f32(self.t) / f32(self.length)
        vals = [(self.loc_x, self.diag), (self.loc_y, self.diag), (self.speed, self.speed_norm),
                (self.acceleration, self.speed_norm), (self.direction, self.two_pi)]
        diff = np.stack([(v[None, :] - v[:, None]) / n for v, n in vals])  # [5, observer, other]
        types = self.is_tagger.astype(f32)
        still = self.still.astype(f32)
        inside = self.still == 1
        if self.full:
            keep = ~np.eye(a, dtype=bool)
            feats = np.concatenate([diff, np.broadcast_to(types, (1, a, a)), np.broadcast_to(still, (1, a, a))])
            feats = feats[:, keep].reshape(self.features, a, a - 1).copy()
            feats[:5, ~inside, :] = 0
            obs = np.concatenate([feats.transpose(1, 0, 2).reshape(a, -1), np.zeros((a, 1), dtype=f32)], axis=1)
            obs[inside, -1] = time
            return obs.astype(f32)
        obs = np.zeros((a, self.obs_dim), dtype=f32)
        d = self._distances()
        for i in np.nonzero(inside)[0]:
            cand = np.nonzero(inside & (np.arange(a) != i))[0]
            near = cand[np.argsort(d[i, cand], kind="stable")][: self.k]  # nearest, lower number on ties
            m = len(near)
            for f in range(5):
                obs[i, f * self.k:f * self.k + m] = diff[f, i, near]
            obs[i, 5 * self.k:5 * self.k + m] = types[near]
            obs[i, 6 * self.k:6 * self.k + m] = still[near]
            obs[i, -1] = time
        return obs

    def step(self, actions):
        self.t += 1
        act = np.asarray(actions, dtype=np.int64)
        turns = len(self.turn_levels)
        inside = self.still.astype(f32)
        acc = self.acceleration + self.acc_levels[act // turns]
        direction = np.fmod(self.direction + self.turn_levels[act % turns], self.two_pi) * inside
        direction = np.where(direction < 0, self.two_pi + direction, direction).astype(f32)
        speed = (np.minimum(self.limit, np.maximum(f32(0), self.speed + acc)) * inside).astype(f32)
        acc = np.where((speed <= 0) | (speed >= self.limit), f32(0), acc).astype(f32)
        x = self.loc_x + speed * _cos(direction)
        y = self.loc_y + speed * _sin(direction)
        edge = (x < 0) | (x > self.grid) | (y < 0) | (y > self.grid)
        self.loc_x, self.loc_y = np.clip(x, f32(0), self.grid), np.clip(y, f32(0), self.grid)
        self.speed, self.direction, self.acceleration = speed, direction, acc

        rew = np.zeros(self.agents, dtype=f32)
        in_game = self.still == 1
        rew[in_game] = rew[in_game] + np.where(edge[in_game], self.edge_penalty, f32(0))
        rew[in_game] = rew[in_game] + self.step_reward[in_game]
        # every runner in the game against its nearest tagger (argmin: the first on ties)
        d = self._distances()
        tagged = np.zeros(self.agents, dtype=bool)
        for r in range(self.taggers, self.agents):
            if not in_game[r]:
                continue
            near = int(np.argmin(d[r, :self.taggers]))
            if d[r, near] < self.margin:
                tagged[r] = True
                rew[near] += self.tag_reward
                rew[r] += self.tag_penalty
        obs = self.observe()  # after the moves, before the tagged runners leave (WarpDrive's order)
        if self.exits:
            self.still[tagged] = 0
        left = (self.still[self.taggers:] == 1)
        if self.t == self.length:
            runners = np.arange(self.taggers, self.agents)[left]
            rew[runners] += self.end_reward
        return obs, rew, not left.any(), self.t >= self.length, int(tagged.sum())


def make_game(name, params):
    if name == "TagGridworld-v0":
        return TagGridworld(params)
    if name == "TagContinuous-v0":
        return TagContinuous(params)
    raise ValueError(f"unknown Tag game {name}")


def rollout(game, initial_state, actions, next_initial_state=None):
    """Step `game` from `initial_state` through `actions` [T][agents].  When an episode ends at
    step t, the next episode starts from next_initial_state(t) (a state dict).  Returns a dict of
    lists over steps: state (before each step), obs ([T + 1], after any reset), final_obs (the
    true next observation), reward, terminated, truncated, tags."""
    game.set_state(initial_state)
    out = {k: [] for k in ("state", "obs", "final_obs", "reward", "terminated", "truncated", "tags")}
    out["obs"].append(game.observe())
    for t, a in enumerate(actions):
        out["state"].append(game.state())
        obs, rew, term, trunc, tags = game.step(a)
        for k, v in (("final_obs", obs), ("reward", rew), ("terminated", term), ("truncated", trunc), ("tags", tags)):
            out[k].append(v)
        if term or trunc:
            game.set_state(next_initial_state(t))
            obs = game.observe()
        out["obs"].append(obs)
    out["state"].append(game.state())
    return out
