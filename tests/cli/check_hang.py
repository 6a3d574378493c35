#!/usr/bin/env python3
"""Never hang: stuck GMIs end the job within the bounds, name the stuck rank, and the run resumes
exactly from its newest checkpoint.  Through the real command line, under mpiexec.

  strategies  GMI_DRL_FAULT=hang@N:R (rank R sleeps in host code before iteration N) with every
              reduction strategy (mpr, mrr, har with the IPC path, with NCCL-style rings and
              host-staged, hybrid) on 2-4 GMIs: exit status 3 within reduce.timeout_s + 15 s,
              one line naming rank R as the one that did not answer, no rank left running, the
              newest checkpoint verifies, and --resume latest then ends with the metrics of an
              uninterrupted run bit for bit
  kernel      hang-kernel@N:R (a device kernel that never returns; on host builds the host thread
              blocks in it): the same
  stall       one GMI alone (nobody waits for it): the stalled-GMI watchdog
              (train.stall_timeout_s) ends it with status 4 and names the phase and iteration
  setup       hang-setup@0:R (a GMI stuck before the set-up: placement, MPS, communicators):
              with 3 GMIs the others' set-up collectives are bounded waits, status 3 naming rank
              R; alone, the watchdog names the set-up phase (status 4); no rank left running
  gpu         (CUDA builds, GPU node) hang-kernel under MPS with 2 and 4 GMIs on one GPU: status
              3 within the bound, the rank named, and the MPS daemon the job started is gone
              (no nvidia-cuda-mps process left: run it where no other daemon runs)
  gpus2       (CUDA builds, a node with 2 GPUs; exit 77, skipped, with fewer) the strategies'
              NCCL steps between the GPUs: hang and hang-kernel with one GMI per GPU (har: one
              NCCL all-reduce; mrr) and with 2 per GPU (har's NCCL rings under MPS): the same
              checks as `strategies`, the exact resume included

  check_hang.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import os
import re
import subprocess
import sys
import time

import harness
from harness import env_for, learning_columns

TIMEOUT = 5  # reduce.timeout_s in these runs
CFG = ("env:\n  name: CartPole-v1\n  num_envs: 4\nppo:\n  num_steps: 16\n  num_minibatches: 2\n"
       "  update_epochs: 2\n  normalize_obs: true\n"
       "train:\n  total_env_steps: {steps}\n  log_interval: 1\ncheckpoint:\n  interval: 2\n  keep: 10\n"
       "reduce:\n  timeout_s: {timeout}\n")


def fail(msg, out=None):
    print("check_hang: " + msg)
    if out is not None:
        print("--- output\n" + out)
    sys.exit(1)



def run(a, np_, args, env=None, timeout=120):
    cmd = ([a.mpiexec, "-n", str(np_), "--oversubscribe", a.gmi] if np_ else [a.gmi]) + args
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env_for(env), cwd=a.workdir)
    return p, time.time() - t0, p.stdout + p.stderr


def config(a, iters_per_gmi_count, np_):
    path = os.path.join(a.workdir, f"c{np_}.yaml")
    with open(path, "w") as f:
        f.write(CFG.format(steps=iters_per_gmi_count * np_ * 4 * 16, timeout=TIMEOUT))
    return path



def left_running(tag):
    return subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split()


def expect_stuck(a, label, p, took, out, rank, status, bound, line_regex):
    if p.returncode != status:
        fail(f"{label}: exit status {p.returncode}, expected {status}", out)
    if took > bound:
        fail(f"{label}: the job took {took:.1f} s to end (bound {bound} s)", out)
    lines = [l for l in out.split("\n") if l.startswith("gmi_drl: error:")]
    if not lines or not any(re.search(line_regex.format(rank=rank), l) for l in lines):
        fail(f"{label}: no error line matching /{line_regex.format(rank=rank)}/", out)
    print(f"{label}: exit {p.returncode} after {took:.1f} s: {lines[0]}")


def hang_case(a, label, np_, sets, fault, rank, iters=8, at=5):
    """A run with `fault` ends within the bound naming `rank`; --resume latest then matches a
    straight run."""
    cfg = config(a, iters, np_)
    common = ["--config", cfg, "--set", "reduce.strategy=" + sets[0]] + [x for s in sets[1:] for x in ("--set", s)]
    straight = os.path.join(a.workdir, label + "-straight")
    p, _, out = run(a, np_, common + ["--run-dir", straight])
    if p.returncode != 0:
        fail(f"{label}: the straight run failed", out)
    hung = os.path.join(a.workdir, label + "-hung")
    p, took, out = run(a, np_, common + ["--run-dir", hung], env={"GMI_DRL_FAULT": f"{fault}@{at}:{rank}"})
    expect_stuck(a, label, p, took, out, rank, 3, TIMEOUT + 15,
                 r"reduce\.timeout_s \(5 s\) ran out.* at iteration {at}.*: rank \d+ waited .* for .*; rank {{rank}} did "
                 r"not answer within \d+ s \(stuck or dead\)".format(at=at))
    time.sleep(0.5)
    if left_running(hung):
        fail(f"{label}: processes left running", out)
    ckpts = sorted(f for f in os.listdir(os.path.join(hung, "checkpoints")) if f.endswith(".h5"))
    if not ckpts or ckpts[-1] != f"ckpt-{at - 1:09d}.h5":
        fail(f"{label}: expected the newest checkpoint at iteration {at - 1}, got {ckpts}", out)
    p, _, vout = run(a, 0, ["checkpoint", "verify", os.path.join(hung, "checkpoints", ckpts[-1])])
    if p.returncode != 0:
        fail(f"{label}: the newest checkpoint does not verify", vout)
    p, _, out = run(a, np_, ["--resume", "latest", "--run-dir", hung])
    if p.returncode != 0 or "resumed from" not in out:
        fail(f"{label}: --resume latest failed", out)
    if learning_columns(straight) != learning_columns(hung):
        fail(f"{label}: metrics.csv after the resume differs from the uninterrupted run's")


def mode_strategies(a):
    # (label, GMIs, [strategy, other --set values], stuck rank): every strategy, 2-4 GMIs
    cases = [("mpr", 2, ["mpr"], 1),
             ("mrr", 2, ["mrr", "gmi.gpus_per_node=2"], 0),
             ("har-ipc", 3, ["har", "reduce.intra_gpu=ipc"], 2),
             ("har-rings", 4, ["har", "gmi.gpus_per_node=2", "reduce.inter_gpu=rings"], 3),
             ("har-leaders", 4, ["har", "gmi.gpus_per_node=2", "reduce.inter_gpu=leaders"], 1),
             ("har-mpi", 3, ["har", "reduce.intra_gpu=mpi"], 1),
             ("hybrid", 4, ["hybrid", "gmi.gpus_per_node=2", "reduce.hybrid_k=1"], 2)]
    for label, np_, sets, rank in cases:
        hang_case(a, label, np_, sets, "hang", rank)


def mode_kernel(a):
    hang_case(a, "kernel-har", 2, ["har"], "hang-kernel", 1)
    hang_case(a, "kernel-mpr", 3, ["mpr"], "hang-kernel", 0, at=3)


def mode_stall(a):
    cfg = config(a, 8, 1)
    for fault in ["hang@3", "hang-kernel@3"]:
        d = os.path.join(a.workdir, "stall-" + fault.split("@")[0])
        p, took, out = run(a, 0, ["--config", cfg, "--run-dir", d, "--set", "train.stall_timeout_s=3"],
                           env={"GMI_DRL_FAULT": fault})
        expect_stuck(a, "stall " + fault, p, took, out, 0, 4, 3 + 15,
                     r"no progress for \d+ s \(train\.stall_timeout_s = 3 s\): rank {rank} on \S+ is stuck in phase "
                     r"[a-z ]+ at iteration 3")


def mode_setup(a):
    cfg = config(a, 8, 3)
    d = os.path.join(a.workdir, "setup3")
    p, took, out = run(a, 3, ["--config", cfg, "--run-dir", d], env={"GMI_DRL_FAULT": "hang-setup@0:2"})
    expect_stuck(a, "setup 3 GMIs", p, took, out, 2, 3, TIMEOUT + 15,
                 r"reduce\.timeout_s \(5 s\) ran out .*the set-up.*rank {rank} did not answer")
    time.sleep(0.5)
    if left_running(d):
        fail("setup 3 GMIs: processes left running", out)
    d = os.path.join(a.workdir, "setup1")
    p, took, out = run(a, 0, ["--config", cfg, "--run-dir", d, "--set", "train.stall_timeout_s=3"],
                       env={"GMI_DRL_FAULT": "hang-setup@0"})
    expect_stuck(a, "setup 1 GMI", p, took, out, 0, 4, 3 + 15,
                 r"no progress for \d+ s \(train\.stall_timeout_s = 3 s\): rank {rank} on \S+ is stuck in phase set-up")


def mode_gpu(a):
    for np_ in (2, 4):
        cfg = config(a, 8, np_)
        d = os.path.join(a.workdir, f"gpu{np_}")
        mps = os.path.join(a.workdir, f"mps{np_}")
        p, took, out = run(a, np_, ["--config", cfg, "--run-dir", d, "--set", "gmi.backend=mps",
                                    "--set", "gmi.mps_dir=" + mps, "--set", "reduce.strategy=har"],
                           env={"GMI_DRL_FAULT": f"hang-kernel@5:{np_ - 1}"})
        expect_stuck(a, f"gpu {np_} GMIs", p, took, out, np_ - 1, 3, TIMEOUT + 15,
                     r"reduce\.timeout_s \(5 s\) ran out.*rank {rank} did not answer")
        # The daemon the job started (its control and server processes) must be gone.
        t0 = time.time()
        while time.time() - t0 < 30 and mps_processes():
            time.sleep(0.5)
        if mps_processes():
            fail(f"gpu {np_} GMIs: MPS processes still run 30 s after the job: {mps_processes()}", out)
        print(f"gpu {np_} GMIs: MPS daemon gone {time.time() - t0:.1f} s after the job")


def mode_gpus2(a):
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ")
    if gpus < 2:
        print(f"check_hang gpus2: skipped ({gpus} GPU(s) here, 2 needed)")
        sys.exit(77)
    two = "gmi.gpus_per_node=2"
    hang_case(a, "nccl-har-host", 2, ["har", two], "hang", 1)
    hang_case(a, "nccl-har-kernel", 2, ["har", two], "hang-kernel", 0)
    hang_case(a, "nccl-mrr-kernel", 2, ["mrr", two], "hang-kernel", 1)
    hang_case(a, "nccl-rings-kernel", 4, ["har", two, "gmi.backend=mps", "reduce.inter_gpu=rings"], "hang-kernel", 2)


def mps_processes():
    return subprocess.run(["pgrep", "-a", "-f", "nvidia-cuda-mps"], capture_output=True, text=True).stdout.split("\n")[:-1]


if __name__ == "__main__":
    harness.main("check_hang", ["strategies", "kernel", "stall", "setup", "gpu", "gpus2"], globals())
