#!/usr/bin/env python3
"""The MuJoCo tasks on the device pipeline (kernels/envs/physics/) against Gymnasium v5, one step at a time.

For every case: write random actions (uniform over the action space, or over 1.5 times it, where
MuJoCo clamps the controls), run the real `gmi_drl env`, which writes besides observations,
rewards and flags the simulator state every step starts from (qpos, qvel, and the anchor the
forward reward measures from), then for every step t and env i put Gymnasium's environment into
that state (set_state, then the anchor where Gymnasium reads it: the main body's xpos, or every
body's xipos shifted for a mass-centre anchor; after a step mjData holds the last integrator
stage's kinematics, which set_state would otherwise recompute from qpos) and compare its step with
ours:

  * the next observation with our final_obs[t, i] (the true next observation before any reset),
  * the reward, terminated, and truncated (the case's time limit, counted here from our flags),
  * the state our next step starts from with Gymnasium's (after a done: a reset, not compared).

Restarting every step is what makes float32 (ours) and float64 (Gymnasium) comparable: legged
bodies on a floor are chaotic, so trajectories separate within a few hundred steps, while one
step from the same state agrees to float32 rounding. Tolerances for one env step (a frame skip of
5 time steps): what the state determines (positions, velocities; Humanoid's inertias, body
velocities and actuator forces) within ATOL + RTOL |x| (float32's 1.2e-7 times the joint-space
inertia's condition number, times the time steps); the contact forces, the observation's last
6 (nbody - 1) numbers, within FORCE_SCALE times that (they are the solver's Lagrange
multipliers, whose conditioning is the contact Jacobian's); the reward within REWARD_ATOL (the
forward velocity divides a position error by the env step's duration). Each case scales these by
its model's conditioning (CASES). Terminated may differ only within BORDERLINE of the healthy
range.

Gymnasium's Humanoid solves its constraints with PGS, which stops after its 50 iterations up to
2e-3 (in velocity, over an env step) short of the constraint problem's minimiser where several
contacts touch; the pipeline finds the minimiser, as MuJoCo's Newton solver does (within 2e-5 of
it there). The reference steps such a model with Newton.

A step where a contact or a constraint's force changes discontinuously within float32 rounding of
the state may differ beyond that. It passes only if Gymnasium's own step moves beyond the
tolerance, and as far as ours, when its start state is perturbed at the rounding a float32 state
carries after an env step (SPREAD_REL, SPREAD_DRAWS draws), and only for a few steps per case
(MAX_SENSITIVE). (One Ant step with clamped actions: Gymnasium's step jumps by 0.05 in a
velocity under such perturbations, as ours does; 2^-24 alone, 8 draws, did not reveal it.)

The first observations (after resets) are checked against Gymnasium's initial-state distribution
(qpos0 +- reset_noise_scale; qvel uniform within it, or normal with its scale: the largest draw and
the spread of all draws) and against what Gymnasium observes of that state after its reset (no
control, no contact forces).

Every task of kind "physics" in the registry (`gmi_env_list`) must have a case in CASES: adding
one = its header, its registry line, its cases here.

Usage: compare_physics.py --gmi PATH/TO/gmi_drl --env-list PATH/TO/gmi_env_list --workdir DIR [--steps 300] [--envs 8]
Exit status 0 when everything agrees, 1 with one line per mismatch otherwise.
"""
import argparse
import os
import subprocess
import sys

import h5py
import mujoco
import numpy as np

import gymnasium as gym

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from env_registry import Report, registered_envs, unmatched  # noqa: E402

ATOL = 5e-5
RTOL = 5e-5
FORCE_SCALE = 40.0
REWARD_ATOL = 5e-4
BORDERLINE = 1e-4
SPREAD_DRAWS = 64
SPREAD_REL = 1e-6  # about 8 float32 ulps: the rounding a state carries after one env step
MAX_SENSITIVE = 3  # steps per case that may agree only within Gymnasium's own sensitivity
MAX_REPORTED = 20


class Case:
    """task: our name; gym_id, kwargs: Gymnasium's; sets: the same as gmi_drl --set arguments;
    body: the body whose x the forward reward measures, None for the mass centre; scale: the
    tolerances' scale, after the joint-space inertia's condition number along random-action
    trajectories (Ant about 10, Humanoid about 3e3: its 0.003 s time step keeps the growth under
    the ratio); qvel_noise: Gymnasium's reset draw of qvel; actions: the actions' range over the
    action space's; limit: the time limit (None: Gymnasium's)."""

    def __init__(self, task, gym_id, sets, kwargs, body, scale, qvel_noise, actions=1.0, limit=None):
        self.task, self.gym_id, self.sets, self.kwargs, self.body = task, gym_id, sets, kwargs, body
        self.scale, self.qvel_noise, self.actions, self.limit = scale, qvel_noise, actions, limit


CASES = [
    Case("DeviceAnt-v5", "Ant-v5", [], {}, 1, 1.0, "normal"),
    Case("DeviceAnt-v5", "Ant-v5",
         ["env.contact_force_range=[-0.5, 0.5]", "env.frame_skip=3", "env.healthy_reward=2", "env.max_episode_steps=100"],
         dict(contact_force_range=(-0.5, 0.5), frame_skip=3, healthy_reward=2.0), 1, 1.0, "normal", actions=1.5,
         limit=100),
    Case("DeviceHumanoid-v5", "Humanoid-v5", [], {}, None, 10.0, "uniform"),
    Case("DeviceHumanoid-v5", "Humanoid-v5",
         ["env.contact_cost_weight=1e-5", "env.contact_cost_range=[-.inf, 0.5]", "env.reset_noise_scale=0.05",
          "env.terminate_when_unhealthy=false", "env.healthy_z_range=[0.9, 2.1]", "env.max_episode_steps=100"],
         dict(contact_cost_weight=1e-5, contact_cost_range=(-np.inf, 0.5), reset_noise_scale=0.05,
              terminate_when_unhealthy=False, healthy_z_range=(0.9, 2.1)), None, 10.0, "uniform", actions=1.5,
         limit=100),
]


def excess(ours, ref, atol, rtol, spread=0.0):
    """max(|ours - ref| / (atol + rtol |ref| + 2 spread)): above 1 is a mismatch."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(ours - ref) / (atol + rtol * np.abs(ref) + 2 * np.asarray(spread)), initial=0.0))


class Gym:
    """Gymnasium's environment of a case, stepped from a given state."""

    def __init__(self, case):
        self.case = case
        self.env = gym.make(case.gym_id, **case.kwargs).unwrapped
        opt = self.env.model.opt
        if opt.solver == mujoco.mjtSolver.mjSOL_PGS:  # Humanoid: see the module's notes
            opt.solver, opt.iterations = mujoco.mjtSolver.mjSOL_NEWTON, 100

    def step(self, q, v, act, anchor):
        env = self.env
        env.set_state(q, v)
        if self.case.body is not None:
            env.data.xpos[self.case.body, 0] = anchor
        else:  # the anchor is the mass centre: move every inertial frame by the difference
            m = env.model.body_mass
            env.data.xipos[:, 0] += anchor - float(np.dot(m, env.data.xipos[:, 0]) / m.sum())
        o, r, te, _, _ = env.step(act)
        return o, r, bool(te), np.concatenate([env.data.qpos, env.data.qvel])

    def spread(self, q, v, act, anchor, ref):
        """How far this step moves when its start state is perturbed at the rounding a float32 state
        carries (relative SPREAD_REL): where a contact or a constraint force changes discontinuously
        within that, float32 cannot be expected to land on double's side of it."""
        rng = np.random.default_rng(0)
        so, sr, sn = np.zeros_like(ref[0]), 0.0, np.zeros_like(ref[3])
        for _ in range(SPREAD_DRAWS):
            o, r, _, nxt = self.step(q * (1 + rng.normal(0, SPREAD_REL, q.shape)),
                                     v * (1 + rng.normal(0, SPREAD_REL, v.shape)), act, anchor)
            so, sr, sn = np.maximum(so, np.abs(o - ref[0])), max(sr, abs(r - ref[1])), np.maximum(sn, np.abs(nxt - ref[3]))
        return so, sr, sn


def run_env(a, case_no, case, gym_env):
    """Our trajectory of the case: actions, and what gmi_drl env wrote."""
    space = gym_env.env.action_space
    rng = np.random.default_rng(2000 + case_no)
    mid, half = (space.high + space.low) / 2, case.actions * (space.high - space.low) / 2
    actions = rng.uniform(mid - half, mid + half, size=(a.steps, a.envs, space.low.size)).astype(np.float32)
    act_file = os.path.join(a.workdir, f"actions{case_no}.txt")
    np.savetxt(act_file, actions.reshape(a.steps, -1), fmt="%.9g")
    out = os.path.join(a.workdir, f"traj{case_no}.h5")
    cmd = [a.gmi, "env", "--name", case.task, "--num-envs", str(a.envs), "--seed", str(case_no), "--actions", act_file,
           "--out", out] + [x for s in case.sets for x in ("--set", s)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"gmi_drl env failed: {p.stderr.strip()}"
    with h5py.File(out, "r") as f:
        t = {k: f[k][()] for k in ("obs", "final_obs", "reward", "terminated", "truncated", "qpos", "qvel", "anchor")}
    t["terminated"], t["truncated"], t["action"] = t["terminated"].astype(bool), t["truncated"].astype(bool), actions
    return t, None


def compare_steps(case, g, t, report, worst, label):
    """Every step against Gymnasium's from the same state; returns (steps, sensitive steps, resets)."""
    env = g.env
    tol = (case.scale * ATOL, case.scale * RTOL)
    nforce = 6 * (env.model.nbody - 1)  # the contact forces end the observation
    T, N = t["reward"].shape
    limit = case.limit or gym.spec(case.gym_id).max_episode_steps
    elapsed = np.zeros(N, int)
    starts, checked, sensitive = [(0, i) for i in range(N)], 0, 0
    for step in range(T):
        for i in range(N):
            q, v = t["qpos"][step, i].astype(np.float64), t["qvel"][step, i].astype(np.float64)
            act, anchor = t["action"][step, i].astype(np.float64), t["anchor"][step, i, 0]
            ref = g.step(q, v, act, anchor)
            z = env.data.qpos[2]
            elapsed[i] += 1
            checked += 1
            ours, term, trunc = t["final_obs"][step, i], t["terminated"][step, i], t["truncated"][step, i]
            has_next = not (term or trunc) and step + 1 < T
            ours_next = np.concatenate([t["qpos"][step + 1, i], t["qvel"][step + 1, i]]) if has_next else ref[3]

            def errors(spread, shift=None):
                """Each field's error as a fraction of its tolerance (widened by `spread`); with
                `shift` (a spread), the reference moved by it against itself instead of ours."""
                so, sr, sn = spread
                o, nx, r = (ref[0] + shift[0], ref[3] + shift[2], ref[1] + shift[1]) if shift else \
                    (ours, ours_next, float(t["reward"][step, i]))
                n = len(ours) - nforce
                e = {"state": excess(o[:n], ref[0][:n], *tol, so[:n] if len(so) else 0),
                     "force": excess(o[n:], ref[0][n:], FORCE_SCALE * tol[0], FORCE_SCALE * tol[1],
                                     so[n:] if len(so) else 0),
                     "next": excess(nx, ref[3], *tol, sn),
                     "reward": abs(r - ref[1]) / (case.scale * REWARD_ATOL + tol[1] * abs(ref[1]) + 2 * sr)}
                if term != ref[2]:
                    e["reward"] = 0.0  # the survive reward follows terminated, judged below
                return e

            e = errors((np.zeros(0), 0.0, 0.0))
            if max(e.values()) > 1:
                s = g.spread(q, v, act, anchor, ref)
                # excused only where Gymnasium's own spread exceeds a field's tolerance and covers ours
                own = errors((np.zeros(0), 0.0, 0.0), shift=s)
                widened = errors(s)
                if max(own.values()) > 1 and max(widened.values()) <= 1:
                    sensitive += 1
                    print(f"SENSITIVE {label} t={step} env {i}: Gymnasium's own step moves "
                          f"{max(own.values()):.3g} of the tolerance from perturbed starts")
                    e = None
            if e:
                at, msgs = f"{label} t={step} env {i}", []
                if e["state"] > 1 or e["force"] > 1:
                    k = int(np.argmax(np.abs(ours - ref[0])))
                    msgs.append(f"{at}: observation[{k}] {ours[k]!r} vs Gymnasium {ref[0][k]!r}")
                if e["next"] > 1:
                    msgs.append(f"{at}: the next step's state differs ({e['next']:.3g} of the tolerance)")
                if e["reward"] > 1:
                    msgs.append(f"{at}: reward {t['reward'][step, i]!r} vs Gymnasium {ref[1]!r}")
                for m in msgs:
                    report.add(m)
                worst["state"] = max(worst["state"], e["state"], e["next"])
                worst["force"] = max(worst["force"], e["force"])
                worst["reward"] = max(worst["reward"], e["reward"])
            zr = env._healthy_z_range
            borderline = min(abs(z - zr[0]), abs(z - zr[1])) < BORDERLINE
            if term != ref[2] and not borderline:
                report.add(f"{label} t={step} env {i}: terminated {term} vs Gymnasium {ref[2]} (z {z:.6f})")
            if trunc != (elapsed[i] >= limit):
                report.add(f"{label} t={step} env {i}: truncated {trunc} vs {elapsed[i] >= limit} after {elapsed[i]} steps")
            if term or trunc:
                elapsed[i] = 0
                starts.append((step + 1, i))
    if sensitive > MAX_SENSITIVE:
        report.add(f"{label}: {sensitive} of {checked} steps agree only within Gymnasium's own sensitivity "
                   f"(more than {MAX_SENSITIVE}: a systematic difference, not rounding)")
    return checked, sensitive, [s for s in starts if s[0] < T]


def check_resets(case, g, t, starts, report, label):
    """Our reset states against Gymnasium's initial-state distribution and its first observation."""
    env = g.env
    noise, qpos0 = env._reset_noise_scale, env.init_qpos
    draws, qdraws = [], []
    nforce = 6 * (env.model.nbody - 1)
    for step, i in starts:
        q, v = t["qpos"][step, i].astype(np.float64), t["qvel"][step, i].astype(np.float64)
        draws.append(v)
        qdraws.append(q - qpos0)
        if np.any(np.abs(q - qpos0) > noise * (1 + 1e-5) + 1e-6):
            report.add(f"{label} t={step} env {i}: a reset's qpos lies outside qpos0 +- {noise}")
        bound = 6 * noise if case.qvel_noise == "normal" else noise * (1 + 1e-5) + 1e-6
        if np.any(np.abs(v) > bound):
            report.add(f"{label} t={step} env {i}: a reset's qvel lies outside +-{bound:.3g} ({case.qvel_noise} noise)")
        env.data.ctrl[:] = 0.0
        env.set_state(q, v)
        env.data.cfrc_ext[:] = 0.0
        first = env._get_obs()  # what Gymnasium's reset observes of this state
        ours, n = t["obs"][step, i], len(first) - nforce
        if max(excess(ours[:n], first[:n], case.scale * ATOL, case.scale * RTOL),
               excess(ours[n:], first[n:], FORCE_SCALE * case.scale * ATOL, FORCE_SCALE * case.scale * RTOL)) > 1:
            k = int(np.argmax(np.abs(t["obs"][step, i] - first)))
            report.add(f"{label} t={step} env {i}: first observation[{k}] {t['obs'][step, i][k]!r} vs Gymnasium {first[k]!r}")
    draws = np.concatenate(draws)
    want = noise if case.qvel_noise == "normal" else noise / np.sqrt(3)
    if not 0.85 * want <= draws.std() <= 1.15 * want:
        report.add(f"{label}: the resets' qvel spread {draws.std():.4g} over {draws.size} draws, expected "
                   f"{want:.4g} ({case.qvel_noise} noise of scale {noise})")
    qdraws = np.concatenate(qdraws)  # qpos0 + U(-noise, noise); quaternions renormalised by neither side
    if not 0.85 * noise / np.sqrt(3) <= qdraws.std() <= 1.15 * noise / np.sqrt(3):
        report.add(f"{label}: the resets' qpos spread {qdraws.std():.4g} over {qdraws.size} draws, expected "
                   f"{noise / np.sqrt(3):.4g} (uniform noise of scale {noise})")


def run_case(a, case_no, case, report, worst):
    g = Gym(case)
    label = case.task + (" " + " ".join(case.sets) if case.sets else "") + (f" actions x{case.actions}" if case.actions != 1 else "")
    t, err = run_env(a, case_no, case, g)
    if err:
        report.add(f"{label}: {err}")
        return
    checked, sensitive, starts = compare_steps(case, g, t, report, worst, label)
    check_resets(case, g, t, starts, report, label)
    g.env.close()
    print(f"{label}: {checked} steps and {len(starts)} initial states compared; {sensitive} steps agree only "
          f"within what float32 rounding of the start state does to Gymnasium's own step")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--env-list", required=True, help="path of the gmi_env_list executable (the registry)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--envs", type=int, default=8)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    report = Report(MAX_REPORTED)
    tasks = registered_envs(a.env_list, "physics")
    for line in unmatched(tasks, {c.task for c in CASES}, "tests/envs/compare_physics.py"):
        report.add(line)
    worst = {"state": 0.0, "force": 0.0, "reward": 0.0}
    for name, why in tasks.items():
        if why:
            report.add(f"{name}: this build cannot run it ({why})")
            continue
        for no, case in enumerate(CASES):
            if case.task == name:
                run_case(a, no, case, report, worst)
    print("largest error, as a fraction of its tolerance: " + ", ".join(f"{k} {v:.3g}" for k, v in worst.items()))
    if report.lines:
        print(f"compare_physics: {len(report.lines)} mismatch(es)")
        sys.exit(1)
    print("compare_physics: every step agrees with Gymnasium")


if __name__ == "__main__":
    main()
