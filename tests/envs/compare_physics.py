#!/usr/bin/env python3
"""The MuJoCo tasks on the device pipeline (kernels/envs/physics/) against Gymnasium v5, one step at a time.

For every task: write random actions (uniform over the action space), run the real `gmi_drl env`,
which writes besides observations, rewards and flags the simulator state every step starts from
(qpos, qvel, and the anchor the forward reward measures from), then for every step t and env i put
Gymnasium's environment into that state (set_state, then the anchor into the main body's xpos,
where Gymnasium reads it: after a step mjData's xpos is that of the last integrator stage, which
set_state would otherwise recompute from qpos) and compare its step with ours:

  * the next observation with our final_obs[t, i] (the true next observation before any reset),
  * the reward, terminated, and truncated (Gymnasium's TimeLimit, counted here from our flags),
  * the state our next step starts from with Gymnasium's (after a done: a reset, not compared).

Restarting every step is what makes float32 (ours) and float64 (Gymnasium) comparable: legged
bodies on a floor are chaotic, so trajectories separate within a few hundred steps, while one
step from the same state agrees to float32 rounding. Tolerances, per quantity, for one env step
(five RK4 time steps of 0.01 s): positions and velocities within ATOL + RTOL |x| (their error is
float32's 1.2e-7 times the joint-space inertia's condition number, up to ~1e3, times the step
count); contact forces within 20x that (they are the solver's Lagrange multipliers, whose
conditioning is the contact Jacobian's); the reward within the forward velocity's error, which
divides a position error by the 0.05 s step. Terminated may differ only within BORDERLINE of the
healthy range. Each case scales these tolerances by its model's conditioning (CASES).

The first observations (after resets) are checked against Gymnasium's initial-state range
(qpos0 +- reset_noise_scale, |qvel| small enough for its noise) and against what Gymnasium
observes of that state after its reset (no control, no contact forces).

Every task of kind "physics" in the registry (`gmi_env_list`) must have a case in CASES: adding
one = its header, its registry line, its case here.

Usage: compare_physics.py --gmi PATH/TO/gmi_drl --env-list PATH/TO/gmi_env_list --workdir DIR [--steps 300] [--envs 8]
Exit status 0 when everything agrees, 1 with one line per mismatch otherwise.
"""
import argparse
import os
import subprocess
import sys

import h5py
import numpy as np

import gymnasium as gym

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from env_registry import registered_envs, unmatched  # noqa: E402

ATOL = 5e-5
RTOL = 5e-5
FORCE_SCALE = 40.0
REWARD_ATOL = 5e-4
BORDERLINE = 1e-4
SPREAD_DRAWS = 8
MAX_SENSITIVE = 0.01
MAX_REPORTED = 20

# (task, Gymnasium id, gmi_drl --set arguments, the same as Gymnasium keyword arguments, the body
# whose x the forward reward measures or None for the mass centre, the tolerances' scale).  The
# scale follows the joint-space inertia's condition number, which float32 rounding is multiplied
# by: about 10 for Ant along random-action trajectories, about 3e3 for Humanoid (median; its
# 0.003 s time step, 5 per env step, keeps the growth under the ratio).
CASES = [
    ("DeviceAnt-v5", "Ant-v5", [], {}, 1, 1.0),
    ("DeviceAnt-v5", "Ant-v5", ["env.contact_force_range=[-0.5, 0.5]", "env.frame_skip=3", "env.healthy_reward=2"],
     dict(contact_force_range=(-0.5, 0.5), frame_skip=3, healthy_reward=2.0), 1, 1.0),
    ("DeviceHumanoid-v5", "Humanoid-v5", [], {}, None, 10.0),
    ("DeviceHumanoid-v5", "Humanoid-v5", ["env.contact_cost_weight=1e-5", "env.reset_noise_scale=0.05"],
     dict(contact_cost_weight=1e-5, reset_noise_scale=0.05), None, 10.0),
]


class Report:
    def __init__(self):
        self.lines = []

    def add(self, msg):
        if len(self.lines) < MAX_REPORTED:
            print("MISMATCH " + msg)
        self.lines.append(msg)


def excess(ours, ref, atol, rtol, spread=0.0):
    """max(|ours - ref| / (atol + rtol |ref| + 2 spread)): above 1 is a mismatch."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(ours - ref) / (atol + rtol * np.abs(ref) + 2 * np.asarray(spread)), initial=0.0))


def reference_spread(gym_step, q, v, act, anc, ref_obs, ref_r, ref_next):
    """How far Gymnasium's own step moves when its start state is perturbed at float32 rounding
    (relative 2^-24, SPREAD_DRAWS draws): where a contact appears or vanishes within that, the
    step is discontinuous and float32 cannot be expected to land on double's side of it."""
    rng = np.random.default_rng(0)
    so, sr, sn = np.zeros_like(ref_obs), 0.0, np.zeros_like(ref_next)
    for _ in range(SPREAD_DRAWS):
        pq = q * (1 + rng.normal(0, 2.0 ** -24, q.shape))
        pv = v * (1 + rng.normal(0, 2.0 ** -24, v.shape))
        o, r, _, nxt = gym_step(pq, pv, act, anc)
        so, sr, sn = np.maximum(so, np.abs(o - ref_obs)), max(sr, abs(r - ref_r)), np.maximum(sn, np.abs(nxt - ref_next))
    return so, sr, sn


def run_case(a, case_no, case, report, worst):
    name, gym_id, sets, kwargs, body, scale = case
    atol, rtol, reward_atol = scale * ATOL, scale * RTOL, scale * REWARD_ATOL
    env = gym.make(gym_id, **kwargs).unwrapped
    nq, nv = env.model.nq, env.model.nv
    low, high = env.action_space.low, env.action_space.high
    rng = np.random.default_rng(2000 + case_no)
    T, N = a.steps, a.envs
    actions = rng.uniform(low, high, size=(T, N, low.size)).astype(np.float32)
    act_file = os.path.join(a.workdir, f"actions{case_no}.txt")
    np.savetxt(act_file, actions.reshape(T, -1), fmt="%.9g")
    out = os.path.join(a.workdir, f"traj{case_no}.h5")
    cmd = [a.gmi, "env", "--name", name, "--num-envs", str(N), "--seed", str(case_no), "--actions", act_file,
           "--out", out] + [x for s in sets for x in ("--set", s)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        report.add(f"{name}: gmi_drl env failed: {p.stderr.strip()}")
        return
    with h5py.File(out, "r") as f:
        obs, final, reward = f["obs"][()], f["final_obs"][()], f["reward"][()]
        term, trunc = f["terminated"][()].astype(bool), f["truncated"][()].astype(bool)
        qpos, qvel, anchor = f["qpos"][()], f["qvel"][()], f["anchor"][()]
    limit, noise = gym.spec(gym_id).max_episode_steps, env._reset_noise_scale
    label = f"{name}{' ' + ' '.join(sets) if sets else ''}"
    npos = nq - 2  # the observation: qpos[2:], qvel, then the contact forces
    elapsed = np.zeros(N, int)
    starts = [(0, i) for i in range(N)]
    checked = 0
    def gym_step(q, v, act, anc):
        env.set_state(q, v)
        if body is not None:
            env.data.xpos[body, 0] = anc
        else:  # the anchor is the mass centre: move every inertial frame by the difference
            m = env.model.body_mass
            env.data.xipos[:, 0] += anc - float(np.dot(m, env.data.xipos[:, 0]) / m.sum())
        o, r, te, _, _ = env.step(act)
        return o, r, bool(te), np.concatenate([env.data.qpos, env.data.qvel])

    sensitive = 0
    for t in range(T):
        for i in range(N):
            q, v, act = qpos[t, i].astype(np.float64), qvel[t, i].astype(np.float64), actions[t, i].astype(np.float64)
            ref_obs, ref_r, ref_term, ref_next = gym_step(q, v, act, anchor[t, i, 0])
            z = env.data.qpos[2]
            elapsed[i] += 1
            checked += 1
            ours = final[t, i]
            has_next = not (term[t, i] or trunc[t, i]) and t + 1 < T
            ours_next = np.concatenate([qpos[t + 1, i], qvel[t + 1, i]]) if has_next else ref_next
            spread = None
            for attempt in range(2):
                # errors as fractions of their tolerances, widened on the second pass by what float32
                # rounding of the start state does to Gymnasium's own step
                so, sr, sn = spread if spread else (0.0, 0.0, 0.0)
                e_state = excess(ours[:npos + nv], ref_obs[:npos + nv], atol, rtol, so[:npos + nv] if spread else 0)
                e_force = excess(ours[npos + nv:], ref_obs[npos + nv:], FORCE_SCALE * atol, FORCE_SCALE * rtol,
                                 so[npos + nv:] if spread else 0)
                e_next = excess(ours_next, ref_next, atol, rtol, sn)
                e_r = abs(float(reward[t, i]) - ref_r) / (reward_atol + rtol * abs(ref_r) + 2 * sr)
                if term[t, i] != ref_term:
                    e_r = 0.0  # the survive reward follows terminated, judged below
                if max(e_state, e_force, e_next, e_r) <= 1 or spread:
                    break
                spread = reference_spread(gym_step, q, v, act, anchor[t, i, 0], ref_obs, ref_r, ref_next)
            if spread and max(e_state, e_force, e_next, e_r) <= 1:
                sensitive += 1
            else:
                worst["state"] = max(worst["state"], e_state, e_next)
                worst["force"] = max(worst["force"], e_force)
                worst["reward"] = max(worst["reward"], e_r)
            at = f"{label} t={t} env {i}"
            if e_state > 1 or e_force > 1:
                k = int(np.argmax(np.abs(ours - ref_obs)))
                report.add(f"{at}: observation[{k}] {ours[k]!r} vs Gymnasium {ref_obs[k]!r}")
            if e_next > 1:
                report.add(f"{at}: the next step's state differs ({e_next:.3g} of the tolerance)")
            if e_r > 1:
                report.add(f"{at}: reward {reward[t, i]!r} vs Gymnasium {ref_r!r}")
            zr = env._healthy_z_range
            borderline = min(abs(z - zr[0]), abs(z - zr[1])) < BORDERLINE
            if term[t, i] != ref_term and not borderline:
                report.add(f"{at}: terminated {term[t, i]} vs Gymnasium {ref_term} (z {z:.6f})")
            if trunc[t, i] != (elapsed[i] >= limit):
                report.add(f"{at}: truncated {trunc[t, i]} vs {elapsed[i] >= limit} after {elapsed[i]} steps")
            if term[t, i] or trunc[t, i]:
                elapsed[i] = 0
                starts.append((t + 1, i))
    if sensitive > MAX_SENSITIVE * checked:
        report.add(f"{label}: {sensitive} of {checked} steps agree only within Gymnasium's own sensitivity "
                   f"(more than {MAX_SENSITIVE:.0%}: a systematic difference, not rounding)")
    qpos0 = env.init_qpos
    for t, i in starts:
        if t >= T:
            continue
        if np.any(np.abs(qpos[t, i] - qpos0) > noise * (1 + 1e-5) + 1e-6):
            report.add(f"{label} t={t} env {i}: a reset's qpos lies outside qpos0 +- {noise}")
        if np.any(np.abs(qvel[t, i]) > 6 * noise):
            report.add(f"{label} t={t} env {i}: a reset's qvel lies outside +-6 x {noise}")
        env.data.ctrl[:] = 0.0
        env.set_state(qpos[t, i].astype(np.float64), qvel[t, i].astype(np.float64))
        env.data.cfrc_ext[:] = 0.0
        first = env._get_obs()  # what Gymnasium's reset observes of this state
        if excess(obs[t, i], first, FORCE_SCALE * atol, FORCE_SCALE * rtol) > 1:
            k = int(np.argmax(np.abs(obs[t, i] - first)))
            report.add(f"{label} t={t} env {i}: first observation[{k}] {obs[t, i][k]!r} vs Gymnasium {first[k]!r}")
    env.close()
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
    report = Report()
    tasks = registered_envs(a.env_list, "physics")
    for line in unmatched(tasks, {c[0] for c in CASES}, "tests/envs/compare_physics.py"):
        report.add(line)
    worst = {"state": 0.0, "force": 0.0, "reward": 0.0}
    for name, why in tasks.items():
        if why:
            report.add(f"{name}: this build cannot run it ({why})")
            continue
        for no, case in enumerate(CASES):
            if case[0] == name:
                run_case(a, no, case, report, worst)
    print("largest error, as a fraction of its tolerance: " +
          ", ".join(f"{k} {v:.3g}" for k, v in worst.items()))
    if report.lines:
        print(f"compare_physics: {len(report.lines)} mismatch(es)")
        sys.exit(1)
    print("compare_physics: every step agrees with Gymnasium")


if __name__ == "__main__":
    main()
