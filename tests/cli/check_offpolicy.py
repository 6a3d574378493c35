#!/usr/bin/env python3
"""DQN and SAC through the real command line, 2 GMIs under mpiexec:

  exact     N iterations straight == --resume from its N/2 checkpoint for the rest: every dataset of the
            final checkpoint (weights, Adam moments and steps, target networks, every GMI's replay
            shard with its cursor and fill level, env states, counters) and every learning column
            of metrics.csv bit for bit; the replay datasets hold one shard per GMI
  noreplay  checkpoint.replay: false leaves /experience/replay out; a resume says it refills the
            buffers and finishes
  memory    a replay buffer larger than the memory there is: one error line naming
            replay.capacity, the bytes needed and the bytes available, exit status 2, before
            training starts

  check_offpolicy.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import os
import re
import subprocess
import sys

import h5py
import numpy as np

import harness
from harness import ckpt, datasets, env_for, learning_columns

CFG = {
    "dqn": ("algo: dqn\nenv:\n  name: CartPole-v1\n  num_envs: 2\npolicy:\n  q_hidden: [16, 16]\n"
            "replay:\n  capacity: 150\ndqn:\n  num_steps: 20\n  learning_starts: 30\n  train_frequency: 2\n"
            "  target_network_frequency: 16\n  tau: 0.5\n  batch_size: 16\n  double: true\n  dueling: true\n"),
    "sac": ("algo: sac\nenv:\n  name: Pendulum-v1\n  num_envs: 2\npolicy:\n  actor_hidden: [16]\n"
            "  q_hidden: [16, 16]\nreplay:\n  capacity: 150\n  storage: host\nsac:\n  num_steps: 10\n"
            "  learning_starts: 20\n  batch_size: 16\n"),
}
COMMON = ("train:\n  total_env_steps: {steps}\n  log_interval: 1\ncheckpoint:\n  interval: 2\n  keep: 20\n"
          "reduce:\n  strategy: har\n")
ITERS = 8


def fail(msg, p=None):
    print("check_offpolicy: " + msg)
    if p is not None:
        print("--- stdout\n" + str(p.stdout) + "\n--- stderr\n" + str(p.stderr))
    sys.exit(1)


def run(a, args, status=0, np_=2):
    p = subprocess.run([a.mpiexec, "-n", str(np_), "--oversubscribe", a.gmi] + args, capture_output=True, text=True,
                       timeout=300, env=env_for(), cwd=a.workdir)
    if p.returncode != status:
        fail(f"expected exit status {status}, got {p.returncode}: {' '.join(args)}", p)
    return p


def config(a, algo, extra=""):
    per_iteration = 2 * 2 * (20 if algo == "dqn" else 10)  # GMIs x envs x vector steps
    path = os.path.join(a.workdir, f"{algo}.yaml")
    with open(path, "w") as f:
        f.write(CFG[algo] + COMMON.format(steps=ITERS * per_iteration) + extra)
    return path


def mode_exact(a):
    for algo in ("dqn", "sac"):
        cfg = config(a, algo)
        ref, part = os.path.join(a.workdir, algo + "-ref"), os.path.join(a.workdir, algo + "-part")
        run(a, ["--config", cfg, "--run-dir", ref])
        # From the middle checkpoint into another directory: the second half again, from the file.
        p = run(a, ["--config", cfg, "--run-dir", part, "--resume", ckpt(ref, ITERS // 2)])
        if "resumed from" not in p.stdout + p.stderr:
            fail(f"{algo}: the resume did not say so", p)
        x, y = datasets(ckpt(ref, ITERS)), datasets(ckpt(part, ITERS))
        if sorted(x) != sorted(y):
            fail(f"{algo}: the checkpoints hold different datasets: {sorted(set(x) ^ set(y))}")
        for k in x:
            if not np.array_equal(x[k], y[k], equal_nan=True):
                fail(f"{algo}: {k} differs between the straight and the resumed run")
        for k in ("experience/replay/obs", "experience/replay/actions", "experience/replay/terminated", "algo/counters"):
            if k not in x:
                fail(f"{algo}: {k} missing from the checkpoint")
        size = x["experience/replay.size"]
        if x["experience/replay/obs"].shape[0] != 2 * size or size != 150:
            fail(f"{algo}: replay rows {x['experience/replay/obs'].shape[0]} for 2 GMIs x size {size} (capacity 150)")
        if learning_columns(ref) != learning_columns(part):
            fail(f"{algo}: metrics.csv learning columns differ")
        cols = learning_columns(ref)[0].keys()
        want = {"dqn": ["td_loss", "q_values", "epsilon"], "sac": ["qf1_loss", "actor_loss", "alpha"]}[algo]
        if any(c not in cols for c in want):
            fail(f"{algo}: metrics.csv lacks {want}: {list(cols)}")
        p = subprocess.run([a.gmi, "checkpoint", "inspect", ckpt(ref, ITERS)], capture_output=True, text=True,
                           env=env_for())
        if p.returncode != 0 or f"model          {algo} on" not in p.stdout or "/experience/replay/obs" not in p.stdout:
            fail(f"{algo}: checkpoint inspect does not show the algorithm and the replay", p)


def mode_noreplay(a):
    cfg = config(a, "dqn", "")
    d = os.path.join(a.workdir, "noreplay")
    run(a, ["--config", cfg, "--run-dir", d, "--set", "checkpoint.replay=false",
            "--set", f"train.total_env_steps={ITERS // 2 * 80}"])
    with h5py.File(ckpt(d, ITERS // 2), "r") as f:
        if "replay" in f["experience"]:
            fail("checkpoint.replay false still wrote /experience/replay")
    p = run(a, ["--resume", "latest", "--run-dir", d, "--set", f"train.total_env_steps={ITERS * 80}"])
    if not re.search(r"no replay buffer .*refilling it with \d+ vector steps", p.stdout + p.stderr):
        fail("the resume did not say that it refills the replay buffers", p)
    if not os.path.exists(ckpt(d, ITERS)):
        fail("the resumed run did not finish")


def mode_memory(a):
    cfg = config(a, "sac")
    p = run(a, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "big"), "--set", "replay.capacity=200000000000"],
            status=2, np_=1)
    err = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:")]
    if len(err) != 1 or not re.search(r"^gmi_drl: error: not enough (host|device) memory for replay\.capacity = "
                                      r"200000000000, .* need [0-9.]+ GiB .* [0-9.]+ GiB (available|free)", err[0]):
        fail("expected one error line naming replay.capacity with the bytes needed and available", p)
    if "iter 1" in p.stdout:
        fail("training started")


if __name__ == "__main__":
    harness.main("check_offpolicy", ["exact", "noreplay", "memory"], globals())
