#!/usr/bin/env python3
"""Replay trajectories of `gmi_drl env` step by step in Gymnasium (or a NumPy reference) and compare.

Every device environment of the registry (`gmi_env_list`) must have its reference entry in ENVS
below, keyed by name: adding a device environment = its header, its registry line, its entry here.
For every environment: its spec against the reference's spaces and time limit, and 4096 initial
states against the reference's initial-state distribution (ends and mean); then for every case: write an action file, run the real tool, load its HDF5 output, then for every
step t and env i put the Gymnasium env into the state our pre-step observation obs[t, i] describes,
call `env.unwrapped.step(action[t, i])` and compare

  * the next observation with our final_obs[t, i] (true next observation before any reset),
  * the reward and the terminated flag,
  * truncated with the elapsed-step count tracked here from the done flags (TimeLimit),
  * after a done: obs[t + 1, i] lies in Gymnasium's initial-state range,
  * every observation lies in Gymnasium's observation space.

The state is set from our observation at every step because Acrobot is chaotic: float32 (ours)
and float64 (Gymnasium) trajectories separate after a few dozen steps, while one step from the
same state agrees to float32 precision.

Usage: compare_gymnasium.py --gmi PATH/TO/gmi_drl --env-list PATH/TO/gmi_env_list --workdir DIR
Exit status 0 when everything agrees, 1 with one line per mismatch otherwise.
"""
import argparse
import math
import os
import subprocess
import sys

import h5py
import numpy as np

import gymnasium as gym

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from env_registry import registered_envs  # noqa: E402

ATOL = 1e-4  # float32 arithmetic on our side, float64 in Gymnasium
RTOL = 1e-4
# A state component this close to a termination threshold may fall on either side in float32
# and float64; only then may terminated (and the rewards that depend on it) differ.
BORDERLINE = 1e-5
MAX_REPORTED = 25


# ---------------------------------------------------------------------------------------------
# Per environment: our observation -> Gymnasium state, the initial-state ranges of Gymnasium's
# reset (in state coordinates), the distance of a state to its termination threshold(s), and a
# heuristic policy that reaches the interesting ends of episodes (goal, time limit).
# ---------------------------------------------------------------------------------------------
def cartpole_state(o):
    return np.array(o, dtype=np.float64)


def acrobot_state(o):
    return np.array([math.atan2(o[1], o[0]), math.atan2(o[3], o[2]), o[4], o[5]], dtype=np.float64)


def pendulum_state(o):
    return np.array([math.atan2(o[1], o[0]), o[2]], dtype=np.float64)


def mcc_state(o):
    # Gymnasium keeps this env's state in float32 after the first step.
    return np.array(o, dtype=np.float32)


def cartpole_margin(o):
    theta_max = 12 * 2 * math.pi / 360
    return min(abs(abs(o[0]) - 2.4), abs(abs(o[2]) - theta_max))


def acrobot_margin(o):
    s0, s1 = math.atan2(o[1], o[0]), math.atan2(o[3], o[2])
    return abs(-math.cos(s0) - math.cos(s1 + s0) - 1.0)


def pendulum_margin(o):
    return math.inf  # never terminates


def mcc_margin(o):
    # goal: position >= 0.45 and velocity >= 0 (each threshold matters only near the other's)
    m = math.inf
    if o[1] >= -BORDERLINE:
        m = min(m, abs(o[0] - 0.45))
    if o[0] >= 0.45 - BORDERLINE:
        m = min(m, abs(o[1]))
    return m


def cartpole_policy(o):
    return 1 if o[2] + 0.5 * o[3] + 0.05 * o[0] + 0.1 * o[1] > 0 else 0


def acrobot_policy(o):
    return 2 if o[5] > 0 else 0  # torque along dtheta2 pumps energy in


def mcc_policy(o):
    return 1.0 if o[1] >= 0 else -1.0  # push along the velocity


class SyntheticHumanoid:
    """NumPy reference of SyntheticHumanoid-v0 (no Gymnasium counterpart: Humanoid-v5's sizes,
    trivial dynamics).  Its observation hashes a hidden 64-bit key, so only the reward (from the
    pre-step observation and the action), termination (never) and the spaces are checked."""
    observation_space = gym.spaces.Box(-1.0, 1.0, (376,), np.float32)
    action_space = gym.spaces.Box(-0.4, 0.4, (17,), np.float32)
    max_episode_steps = 1000

    def __init__(self):
        self.state = None

    def step(self, a):
        o = np.asarray(self.state, dtype=np.float64)
        d = np.clip(np.asarray(a, dtype=np.float64), -0.4, 0.4) - 0.4 * o[:17]
        return None, -float(np.sum(d * d)) / 17, False, False, {}


def synthetic_state(o):
    return np.array(o, dtype=np.float64)


def never_terminates(o):
    return math.inf


# One reference entry per device environment: the Gymnasium id or a NumPy class (`ref`), our
# observation -> its state, the initial-state ranges of its reset (in state coordinates), the
# distance of a state to its termination threshold(s), where a wall makes the next observation
# jump, a heuristic policy that reaches the interesting ends of episodes (goal, time limit), and
# the cases: (num_envs, steps, max_episode_steps or None for the default, seed, policy?).
# Default limits: CartPole under its balancing heuristic reaches 500 steps, Acrobot and
# MountainCar under random actions reach their limits and under the heuristic their goals.
ENVS = {
    "CartPole-v1": dict(ref="CartPole-v1", state=cartpole_state, init_lo=[-0.05] * 4, init_hi=[0.05] * 4,
                        margin=cartpole_margin, wall=None, policy=cartpole_policy,
                        cases=[(4, 1100, None, 1, True), (6, 300, 50, 2, False), (6, 300, None, 3, False)]),
    "Acrobot-v1": dict(ref="Acrobot-v1", state=acrobot_state, init_lo=[-0.1] * 4, init_hi=[0.1] * 4,
                       margin=acrobot_margin, wall=None, policy=acrobot_policy,
                       cases=[(4, 1100, None, 4, False), (4, 700, None, 5, True), (6, 300, 50, 6, False)]),
    "Pendulum-v1": dict(ref="Pendulum-v1", state=pendulum_state, init_lo=[-math.pi, -1.0], init_hi=[math.pi, 1.0],
                        margin=pendulum_margin, wall=None, policy=None,
                        cases=[(6, 450, None, 7, False), (6, 300, 50, 8, False)]),
    "MountainCarContinuous-v0": dict(ref="MountainCarContinuous-v0", state=mcc_state, init_lo=[-0.6, 0.0],
                                     init_hi=[-0.4, 0.0], margin=mcc_margin, wall=np.float32(-1.2),
                                     policy=mcc_policy,
                                     cases=[(4, 2100, None, 9, False), (4, 1200, None, 10, True),
                                            (6, 300, 50, 11, False)]),
    "SyntheticHumanoid-v0": dict(ref=SyntheticHumanoid, state=synthetic_state, init_lo=[-1.0] * 376,
                                 init_hi=[1.0] * 376, margin=never_terminates, wall=None, policy=None,
                                 cases=[(4, 2100, None, 12, False), (6, 300, 50, 13, False)]),
}


def make_ref(name):
    """The reference environment (unwrapped) and its default time limit."""
    ref = ENVS[name]["ref"]
    if isinstance(ref, str):
        return gym.make(ref).unwrapped, gym.spec(ref).max_episode_steps
    return ref(), ref.max_episode_steps


def registered_device_envs(env_list):
    """The device environments of the registry, from the `gmi_env_list` tool."""
    return list(registered_envs(env_list, "device"))


class Failures:
    def __init__(self):
        self.lines = []

    def add(self, case, t, i, what):
        self.lines.append(f"{case}: step {t} env {i}: {what}")

    def __len__(self):
        return len(self.lines)


def run_tool(gmi, name, n, seed, limit, actions, path):
    """Write the action file, run `gmi_drl env`, return the HDF5 contents as numpy arrays."""
    act_file = path + ".actions.txt"
    with open(act_file, "w") as f:
        for row in actions.reshape(actions.shape[0], -1):
            f.write(" ".join(f"{v:.9g}" for v in row) + "\n")
    cmd = [gmi, "env", "--name", name, "--num-envs", str(n), "--seed", str(seed),
           "--actions", act_file, "--out", path + ".h5"]
    if limit is not None:
        cmd += ["--max-episode-steps", str(limit)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"compare_gymnasium: {' '.join(cmd)} failed with status {p.returncode}:\n"
                 f"{p.stderr}")
    with h5py.File(path + ".h5", "r") as f:
        data = {k: f[k][()] for k in ("obs", "final_obs", "reward", "terminated", "truncated",
                                       "action")}
        data["attrs"] = {k: (v.decode() if isinstance(v, bytes) else str(v))
                         for k, v in f.attrs.items()}
    return data


def make_actions(gmi, name, n, steps, seed, limit, use_policy, path, space):
    """Random actions, or a heuristic closed-loop policy (with 10% random actions).

    The tool takes a fixed action file, so the closed loop is closed by rounds: run the tool, find
    per env the first step whose action is not what the policy says for our observation, and from
    that observation simulate the policy in Gymnasium to the end of the episode to rewrite the
    actions from there.  float32 and float64 agree for a hundred steps or more (CartPole and
    Acrobot are unstable open-loop), so a few rounds converge.  The comparison is valid for any
    actions; the policy only makes goals and time limits likely.
    """
    rng = np.random.default_rng(seed)
    if isinstance(space, gym.spaces.Discrete):
        rand = rng.integers(0, space.n, size=(steps, n, 1)).astype(np.float32)
    else:
        lo, hi = space.low.astype(np.float64), space.high.astype(np.float64)
        w = 0.25 * (hi - lo)  # beyond the bounds too: clipping is part of the dynamics
        rand = rng.uniform(lo - w, hi + w, size=(steps, n, lo.size)).astype(np.float32)
        edges = rng.random(size=rand.shape) < 0.02
        bound = np.where(rng.random(size=rand.shape) < 0.5, lo, hi) if lo.size > 1 else \
            np.where(rng.random(size=int(edges.sum())) < 0.5, lo[0], hi[0])
        rand[edges] = bound[edges] if lo.size > 1 else bound
    if not use_policy:
        return rand
    spec, policy = ENVS[name], ENVS[name]["policy"]
    explore = rng.random(size=(steps, n)) < 0.1
    sim, default_limit = make_ref(name)
    limit = default_limit if limit is None else limit
    sim.reset(seed=0)
    actions = rand.copy()
    for _ in range(100):
        data = run_tool(gmi, name, n, seed, limit, actions, path)
        done = data["terminated"] | data["truncated"]
        changed = False
        for i in range(n):
            elapsed = 0
            for m in range(steps):
                if not explore[m, i] and policy(data["obs"][m, i]) != actions[m, i, 0]:
                    break
                elapsed = 0 if done[m, i] else elapsed + 1
            else:
                continue
            changed = True
            sim.state = spec["state"](data["obs"][m, i])
            o = data["obs"][m, i]
            for t in range(m, steps):
                actions[t, i, 0] = rand[t, i, 0] if explore[t, i] else policy(o)
                a = int(actions[t, i, 0]) if isinstance(space, gym.spaces.Discrete) else \
                    actions[t, i].copy()
                o, _, term, _, _ = sim.step(a)
                elapsed += 1
                if term or elapsed >= limit:
                    break  # our reset state is known only after the next round
        if not changed:
            break
    return actions


def in_initial_range(spec, o):
    s = spec["state"](o)
    return all(lo - 1e-6 <= float(v) <= hi + 1e-6
               for v, lo, hi in zip(s, spec["init_lo"], spec["init_hi"]))


def compare(case, name, data, limit, fails):
    spec = ENVS[name]
    env, _ = make_ref(name)
    if hasattr(env, "reset"):
        env.reset(seed=0)
    obs, fin, rew = data["obs"], data["final_obs"], data["reward"]
    term, trunc, act = data["terminated"], data["truncated"], data["action"]
    steps, n = rew.shape
    low = env.observation_space.low
    high = env.observation_space.high
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    elapsed = np.zeros(n, dtype=int)
    counts = dict(terminated=0, truncated=0, borderline=0)

    def check_space(o, t, i, what):
        if not (np.all(np.isfinite(o)) and np.all(o >= low) and np.all(o <= high)):
            fails.add(case, t, i, f"{what} {o} outside the observation space [{low}, {high}]")

    for i in range(n):
        if not in_initial_range(spec, obs[0, i]):
            fails.add(case, -1, i, f"initial obs {obs[0, i]} outside Gymnasium's initial range")
        check_space(obs[0, i], -1, i, "initial obs")
    for t in range(steps):
        for i in range(n):
            o = obs[t, i]
            env.state = spec["state"](o)
            if name == "CartPole-v1":
                env.steps_beyond_terminated = None  # a fresh step, not one after termination
            a = int(act[t, i, 0]) if discrete else np.array(act[t, i], dtype=np.float32)
            g_obs, g_rew, g_term, _, _ = env.step(a)
            ours = fin[t, i]
            if g_obs is None:  # a reference that checks the reward and termination only
                g_obs = ours
            borderline = min(spec["margin"](ours), spec["margin"](g_obs)) < BORDERLINE
            counts["borderline"] += borderline
            check_space(ours, t, i, "final_obs")
            check_space(obs[t + 1, i], t, i, "obs")
            term_agrees = bool(term[t, i]) == bool(g_term)
            if not term_agrees and not borderline:
                # float32 vs float64 may legitimately disagree only right at a threshold.
                fails.add(case, t, i, f"terminated ours {bool(term[t, i])} gymnasium "
                                      f"{bool(g_term)} (final_obs {ours}, gymnasium {g_obs})")
            if not np.allclose(ours, g_obs, atol=ATOL, rtol=RTOL):
                # Only MountainCar's left wall makes the next observation jump (a negative
                # velocity is zeroed when the position is clipped to -1.2): excused only where one
                # side clipped and the other stopped within BORDERLINE of the wall.
                jump = spec["wall"] is not None and (
                    (ours[0] == spec["wall"]) != (g_obs[0] == spec["wall"])) and (
                    min(abs(ours[0] - spec["wall"]), abs(g_obs[0] - spec["wall"])) < BORDERLINE)
                if not jump:
                    fails.add(case, t, i, f"next observation ours {ours} gymnasium {g_obs} "
                                          f"(from obs {o}, action {act[t, i]})")
            # The reward depends on terminated (Acrobot 0 / -1, MountainCar +100): compare it
            # where both agree on termination.
            if term_agrees and not math.isclose(float(rew[t, i]), float(g_rew), abs_tol=ATOL,
                                                rel_tol=RTOL):
                fails.add(case, t, i, f"reward ours {rew[t, i]} gymnasium {g_rew}")
            # TimeLimit: truncated once `limit` steps have elapsed, whether terminated or not.
            elapsed[i] += 1
            want_trunc = elapsed[i] >= limit
            if bool(trunc[t, i]) != want_trunc:
                fails.add(case, t, i, f"truncated {bool(trunc[t, i])} after {elapsed[i]} steps "
                                      f"with max_episode_steps {limit}")
            done = bool(term[t, i]) or bool(trunc[t, i])
            if done:
                counts["terminated"] += bool(term[t, i])
                counts["truncated"] += bool(trunc[t, i])
                elapsed[i] = 0
                if not in_initial_range(spec, obs[t + 1, i]):
                    fails.add(case, t, i, f"obs after the reset {obs[t + 1, i]} outside "
                                          "Gymnasium's initial range")
            elif not np.array_equal(obs[t + 1, i], fin[t, i]):
                fails.add(case, t, i, "obs differs from final_obs on a step without done")
    return counts


def check_spec(name, data, default_limit, fails):
    """Our spec (shapes, discrete action count, time limit) against the reference's spaces."""
    env, _ = make_ref(name)
    obs_space, act_space = env.observation_space, env.action_space
    discrete = isinstance(act_space, gym.spaces.Discrete)
    want = dict(obs_dim=obs_space.shape[0], act_dim=1 if discrete else act_space.shape[0],
                num_actions=int(act_space.n) if discrete else 0, max_episode_steps=default_limit)
    got = dict(obs_dim=data["obs"].shape[-1], act_dim=data["action"].shape[-1],
               num_actions=int(data["attrs"].get("num_actions", -1)),
               max_episode_steps=int(data["attrs"].get("max_episode_steps", -1)))
    for k in want:
        if want[k] != got[k]:
            fails.add(f"{name} spec", -1, -1, f"{k} ours {got[k]} reference {want[k]}")


def check_initial_distribution(name, data, fails):
    """4096 initial states: inside the reference's ranges, reaching both ends, mean in the middle."""
    spec = ENVS[name]
    states = np.array([spec["state"](o) for o in data["obs"][0]], dtype=np.float64)
    n = states.shape[0]
    lo, hi = np.array(spec["init_lo"]), np.array(spec["init_hi"])
    case = f"{name} initial states"
    for c in range(lo.size):
        s, w = states[:, c], hi[c] - lo[c]
        if s.min() < lo[c] - 1e-6 or s.max() > hi[c] + 1e-6:
            fails.add(case, -1, -1, f"component {c} in [{s.min()}, {s.max()}] outside [{lo[c]}, {hi[c]}]")
        elif w == 0.0:
            if s.min() != lo[c] or s.max() != hi[c]:
                fails.add(case, -1, -1, f"component {c} not exactly {lo[c]}")
        # n uniform draws: the gaps at the ends are about w / n; the mean's standard error is
        # w / sqrt(12 n) ~ 0.0045 w for n = 4096.
        elif s.min() - lo[c] > 0.01 * w or hi[c] - s.max() > 0.01 * w or \
                abs(s.mean() - 0.5 * (lo[c] + hi[c])) > 0.03 * w:
            fails.add(case, -1, -1, f"component {c}: min {s.min()} max {s.max()} mean {s.mean()} "
                                    f"for U({lo[c]}, {hi[c]}) over {n} draws")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gmi", required=True, help="path of the gmi_drl executable")
    ap.add_argument("--env-list", required=True, help="path of the gmi_env_list executable (the registry)")
    ap.add_argument("--workdir", required=True, help="directory for action files and HDF5 output")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    fails = Failures()
    names = registered_device_envs(args.env_list)
    for name in names:
        if name not in ENVS:
            fails.add(name, -1, -1, "registered device environment without a reference entry in ENVS "
                                    "(tests/envs/compare_gymnasium.py)")
    for name in ENVS:
        if name not in names:
            fails.add(name, -1, -1, "reference entry for an environment the registry does not have")
    for name in [n for n in names if n in ENVS]:
        _, default_limit = make_ref(name)
        space = make_ref(name)[0].action_space
        path = os.path.join(args.workdir, f"{name}-initial")
        data = run_tool(args.gmi, name, 4096, 99, None, make_actions(args.gmi, name, 4096, 1, 99, None, False,
                                                                     path, space), path)
        check_spec(name, data, default_limit, fails)
        check_initial_distribution(name, data, fails)
        if not ENVS[name]["cases"]:
            fails.add(name, -1, -1, "no case in its reference entry")
        for n, steps, limit, seed, use_policy in ENVS[name]["cases"]:
            eff_limit = default_limit if limit is None else limit
            case = f"{name} (num_envs {n}, max_episode_steps {eff_limit}, seed {seed})"
            path = os.path.join(args.workdir, f"{name}-n{n}-l{eff_limit}-s{seed}")
            actions = make_actions(args.gmi, name, n, steps, seed, limit, use_policy, path, space)
            data = run_tool(args.gmi, name, n, seed, limit, actions, path)
            if data["attrs"].get("max_episode_steps") != str(eff_limit):
                got = data["attrs"].get("max_episode_steps")
                fails.add(case, -1, -1, f"max_episode_steps attribute {got}, expected {eff_limit}")
            if not np.array_equal(data["action"], actions):
                fails.add(case, -1, -1, "actions in the HDF5 file differ from the action file")
            before = len(fails)
            counts = compare(case, name, data, eff_limit, fails)
            print(f"{case}: {steps} steps, {counts['terminated']} terminated, "
                  f"{counts['truncated']} truncated, {counts['borderline']} borderline, "
                  f"{len(fails) - before} mismatches")
            # The cases are chosen so that both ends of an episode are compared: random actions at
            # the default limit reach it (except in CartPole), the heuristics reach the goal (the
            # time limit for CartPole's balancing).
            if use_policy:
                want = "truncated" if name == "CartPole-v1" else "terminated"
            else:
                want = "truncated" if limit is not None or name != "CartPole-v1" else "terminated"
            if counts[want] == 0:
                fails.add(case, -1, -1, f"no episode {want}: the case does not test what it should")
    if len(fails):
        for line in fails.lines[:MAX_REPORTED]:
            print("MISMATCH " + line, file=sys.stderr)
        if len(fails) > MAX_REPORTED:
            print(f"... and {len(fails) - MAX_REPORTED} more", file=sys.stderr)
        print(f"compare_gymnasium: FAILED ({len(fails)} mismatches)", file=sys.stderr)
        return 1
    print("compare_gymnasium: every registered device environment agrees with its reference "
          f"(Gymnasium {gym.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
