#!/usr/bin/env python3
"""The MuJoCo environments against Gymnasium v5, step by step, for 1000 steps of random actions.

For every task: write random actions (uniform over the action space), run the real
`gmi_drl env`, which writes besides observations, rewards and flags the simulator state every
step starts from (qpos, qvel), then for every env start Gymnasium's environment from our state
(reset, then set_state(qpos, qvel)) and replay the same actions *continuously*, restarting it
from our state only after each of our resets.  (Restoring the state before every step does not
reproduce Gymnasium: Ant's forward reward reads body positions computed before the last physics
substep, which set_state recomputes.)  Compared, within 1e-5 relative (float64 physics, float32
observations): every observation (the true next one, and the first one of every episode),
reward, terminated and truncated (Gymnasium's 1000-step TimeLimit, counted here).

Also: our keyword arguments against Gymnasium's (a second run with other v5 arguments).

Every MuJoCo task of the registry (`gmi_env_list`) must have a case in CASES below: adding a task =
its header, its registry line, its case here.

Usage: compare_mujoco.py --gmi PATH/TO/gmi_drl --env-list PATH/TO/gmi_env_list --workdir DIR [--steps 1000] [--envs 3]
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
from env_registry import Report, registered_envs, unmatched  # noqa: E402

RTOL = 1e-5
ATOL = 1e-6
MAX_REPORTED = 20

# (task, gmi_drl --set arguments, the same as Gymnasium keyword arguments); at least one per
# registered task, the first with its defaults
CASES = [
    ("Hopper-v5", [], {}),
    ("HalfCheetah-v5", [], {}),
    ("Walker2d-v5", [], {}),
    ("Ant-v5", [], {}),
    ("Humanoid-v5", [], {}),
    ("InvertedPendulum-v5", [], {}),
    ("Swimmer-v5", [], {}),
    ("Hopper-v5", ["env.ctrl_cost_weight=0.3", "env.healthy_z_range=[0.9, .inf]", "env.terminate_when_unhealthy=false",
                   "env.exclude_current_positions_from_observation=false"],
     dict(ctrl_cost_weight=0.3, healthy_z_range=(0.9, float("inf")), terminate_when_unhealthy=False,
          exclude_current_positions_from_observation=False)),
    ("Ant-v5", ["env.contact_force_range=[-0.5, 0.5]", "env.include_cfrc_ext_in_observation=false", "env.frame_skip=3"],
     dict(contact_force_range=(-0.5, 0.5), include_cfrc_ext_in_observation=False, frame_skip=3)),
    ("Humanoid-v5", ["env.include_cinert_in_observation=false", "env.healthy_reward=2", "env.reset_noise_scale=0.05"],
     dict(include_cinert_in_observation=False, healthy_reward=2.0, reset_noise_scale=0.05)),
]


def close(a, b):
    return np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=RTOL, atol=ATOL)


def run_case(a, case_no, name, sets, kwargs, report):
    env = gym.make(name, **kwargs).unwrapped
    low, high = env.action_space.low, env.action_space.high
    rng = np.random.default_rng(1000 + case_no)
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
        qpos, qvel = f["qpos"][()], f["qvel"][()]
    limit = 1000
    resets = checked = 0
    for i in range(N):
        label = f"{name}{' ' + ' '.join(sets) if sets else ''} env {i}"

        def start(t):
            env.reset(seed=t)
            env.set_state(qpos[t, i].astype(np.float64), qvel[t, i].astype(np.float64))
            ref0 = env._get_obs()
            if not close(obs[t, i], ref0):
                report.add(f"{label} t={t}: first observation differs by {np.max(np.abs(obs[t, i] - ref0)):.3g}")

        start(0)
        elapsed = 0
        for t in range(T):
            ref_obs, ref_r, ref_term, _, _ = env.step(actions[t, i])
            elapsed += 1
            ref_trunc = elapsed >= limit
            checked += 1
            if not close(final[t, i], ref_obs):
                k = int(np.argmax(np.abs(final[t, i] - ref_obs)))
                report.add(f"{label} t={t}: observation[{k}] {final[t, i][k]!r} vs Gymnasium {ref_obs[k]!r}")
            if not close(reward[t, i], ref_r):
                report.add(f"{label} t={t}: reward {reward[t, i]!r} vs Gymnasium {ref_r!r}")
            if term[t, i] != bool(ref_term):
                report.add(f"{label} t={t}: terminated {term[t, i]} vs Gymnasium {bool(ref_term)}")
            if trunc[t, i] != ref_trunc:
                report.add(f"{label} t={t}: truncated {trunc[t, i]} vs {ref_trunc} after {elapsed} steps")
            if term[t, i] or trunc[t, i]:
                resets += 1
                start(t + 1)
                elapsed = 0
    env.close()
    print(f"{name}{' with ' + ' '.join(sets) if sets else ''}: {checked} steps, {resets} resets compared")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--env-list", required=True, help="path of the gmi_env_list executable (the registry)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--envs", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    report = Report(MAX_REPORTED)
    tasks = registered_envs(a.env_list, "mujoco")
    for line in unmatched(tasks, {c[0] for c in CASES}, "tests/envs/compare_mujoco.py"):
        report.add(line)
    for name, why in tasks.items():
        if why:
            report.add(f"{name}: this build cannot run it ({why})")
            continue
        # A case's number seeds its actions and its run.
        for no, (case_name, sets, kwargs) in enumerate(CASES):
            if case_name == name:
                run_case(a, no, name, sets, kwargs, report)
    if report.lines:
        print(f"compare_mujoco: {len(report.lines)} mismatch(es)")
        sys.exit(1)
    print("compare_mujoco: every step agrees with Gymnasium")


if __name__ == "__main__":
    main()
