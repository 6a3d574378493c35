#!/usr/bin/env python3
"""A tiny training run through the real command line, then its run directory: the resolved
config (every key, re-parseable, seed and overrides applied), metrics.csv (header with the
documented columns, one row per iteration, env_steps counting up), train.log with progress lines,
stdout progress and an empty stderr.

  check_run_dir.py --gmi PATH/TO/gmi_drl --workdir DIR
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys

REQUIRED = ["iteration", "env_steps", "samples_per_s", "episode_return_mean",
            "episode_length_mean", "policy_loss", "value_loss", "entropy", "approx_kl",
            "time_rollout_s", "time_update_s"]


def fail(msg):
    print("check_run_dir: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    cfg = os.path.join(a.workdir, "c.yaml")
    with open(cfg, "w") as f:
        f.write("env:\n  name: CartPole-v1\n  num_envs: 4\nppo:\n  num_steps: 16\n"
                "  num_minibatches: 2\ntrain:\n  total_env_steps: 640\n  log_interval: 2\n")
    run = os.path.join(a.workdir, "run")
    p = subprocess.run([a.gmi, "--config", cfg, "--run-dir", run, "--seed", "7",
                        "--set", "ppo.gamma=0.95"], capture_output=True, text=True, timeout=100)
    if p.returncode != 0:
        fail(f"exit status {p.returncode}; stderr: {p.stderr}")
    if p.stderr.strip():
        fail(f"stderr not empty: {p.stderr!r}")
    if "iter 10/10" not in p.stdout or "iter 2/10" not in p.stdout:
        fail("progress lines missing from stdout:\n" + p.stdout)

    resolved = open(os.path.join(run, "config.yaml")).read()
    for line in ["seed: 7", "gamma: 0.95", "num_envs: 4", "run_dir: " + run]:
        if line not in resolved:
            fail(f"config.yaml lacks '{line}':\n{resolved}")
    # the resolved config is itself a valid config
    q = subprocess.run([a.gmi, "config", "show", "--config", os.path.join(run, "config.yaml")],
                       capture_output=True, text=True, timeout=60)
    if q.returncode != 0 or q.stdout != resolved:
        fail(f"config.yaml does not round-trip: {q.stderr}")

    with open(os.path.join(run, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    header = list(rows[0].keys()) if rows else []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        fail(f"metrics.csv lacks columns {missing}; has {header}")
    if len(rows) != 10:
        fail(f"metrics.csv has {len(rows)} rows, expected 10 (640 steps / 64 per iteration)")
    steps = [int(r["env_steps"]) for r in rows]
    if steps != [64 * (i + 1) for i in range(10)]:
        fail(f"env_steps {steps}")
    if float(rows[-1]["samples_per_s"]) <= 0:
        fail("samples_per_s not positive")
    log = open(os.path.join(run, "train.log")).read()
    if "iter 10/10" not in log:
        fail("train.log lacks the progress lines")
    if open(os.path.join(run, "status")).read() != "done\n":
        fail("status is not 'done'")
    if os.listdir(os.path.join(run, "checkpoints")) != ["ckpt-000000010.h5"]:
        fail("expected the end-of-training checkpoint")
    print("check_run_dir: ok")


if __name__ == "__main__":
    main()
