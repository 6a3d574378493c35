"""Checkpoints written by an earlier gmi_drl still load and resume.

tests/data/checkpoints/ holds, for every algorithm and for a multi-agent game, the checkpoints of
iterations 2 and 4 of a 4-iteration run, written by the build named in its README.md (one GMI).
  check     every file verifies; resuming each run from iteration 2 with this build reaches
            iteration 4 with the policy, optimiser and normaliser state of the old run's
            iteration 4 (equal within rounding: BLAS kernels may differ between machines) and the
            same counters
  generate  (re)write the files with the gmi_drl given (run with the old build, then commit)
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "checkpoints")

# One tiny 4-iteration run per algorithm (and the multi-agent seam), checkpoints at 2 and 4.
RUNS = {
    "ppo_cartpole": "env:\n  name: CartPole-v1\n  num_envs: 4\npolicy:\n  actor_hidden: [16, 16]\n"
                    "  critic_hidden: [16, 16]\nppo:\n  num_steps: 16\n  num_minibatches: 2\n  update_epochs: 2\n"
                    "  normalize_obs: true\n  normalize_reward: true\ntrain:\n  total_env_steps: 256\n",
    "dqn_cartpole": "algo: dqn\nenv:\n  name: CartPole-v1\n  num_envs: 2\npolicy:\n  q_hidden: [16, 16]\n"
                    "replay:\n  capacity: 120\ndqn:\n  num_steps: 25\n  learning_starts: 20\n  train_frequency: 2\n"
                    "  target_network_frequency: 10\n  batch_size: 8\ntrain:\n  total_env_steps: 200\n",
    "sac_pendulum": "algo: sac\nenv:\n  name: Pendulum-v1\n  num_envs: 2\npolicy:\n  actor_hidden: [16, 16]\n"
                    "  q_hidden: [16, 16]\nreplay:\n  capacity: 60\nsac:\n  num_steps: 10\n  learning_starts: 15\n"
                    "  batch_size: 8\ntrain:\n  total_env_steps: 80\n",
    "ppo_tag": "env:\n  name: TagGridworld-v0\n  num_envs: 2\n  episode_length: 20\npolicy:\n  actor_hidden: [16]\n"
               "  critic_hidden: [16]\nppo:\n  num_steps: 8\n  num_minibatches: 2\n  update_epochs: 1\n"
               "  normalize_obs: true\ntrain:\n  total_env_steps: 64\n",
}


def merged(run):
    """The run's YAML: its keys, a seed, and a checkpoint every 2 iterations."""
    text = RUNS[run]
    lines = text.split("train:\n", 1)
    train_extra = "  log_interval: 1\n  seed: 3\n"
    if len(lines) == 2:
        text = lines[0] + "train:\n" + train_extra + lines[1]
    else:
        text += "train:\n" + train_extra
    return text + "checkpoint:\n  interval: 2\n  keep: 10\n"


def env():
    e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    e.pop("GMI_DRL_FAULT", None)
    return e


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=300)
    if p.returncode != 0:
        sys.exit(f"check_compat: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def ckpt(d, it):
    return os.path.join(d, "checkpoints", f"ckpt-{it:09d}.h5")


def arrays(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("metrics"):
                out[name] = obj[()]
        f.visititems(visit)
        for g in ["meta", "algo", "optimizer"]:
            if g in f:
                for k, v in f[g].attrs.items():
                    if k not in ("created", "wall_time_s", "gmi_drl_version", "run_dir", "config"):
                        out[f"{g}.{k}"] = v
    return out


def check_metrics(name, d):
    """Columns added since (gpu_util_pct, gpu_mem_mib) are nan in the old run's rows."""
    with open(os.path.join(d, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    if [r["iteration"] for r in rows] != ["1", "2", "3", "4"]:
        sys.exit(f"check_compat: {name}: metrics.csv has iterations {[r['iteration'] for r in rows]}, not 1..4")
    for r in rows[:2]:
        if "gpu_util_pct" not in r or r["gpu_util_pct"] != "nan" or r["gpu_mem_mib"] != "nan":
            sys.exit(f"check_compat: {name}: the old run's row {r['iteration']} should have gpu_util_pct and "
                     f"gpu_mem_mib nan: {r}")


def generate(a):
    os.makedirs(DATA, exist_ok=True)
    for name in RUNS:
        d = os.path.join(a.workdir, name)
        cfg = os.path.join(a.workdir, name + ".yaml")
        open(cfg, "w").write(merged(name))
        run([a.gmi, "--config", cfg, "--run-dir", d])
        for it in (2, 4):
            shutil.copy(ckpt(d, it), os.path.join(DATA, f"{name}-{it}.h5"))
        print(f"generated {name}")


def check(a):
    for name in RUNS:
        mid, end = (os.path.join(DATA, f"{name}-{it}.h5") for it in (2, 4))
        for f in (mid, end):
            run([a.gmi, "checkpoint", "verify", f])
        d = os.path.join(a.workdir, name)
        # The stored config drives the resume (no --config): exactly what a user resuming does.
        run([a.gmi, "--run-dir", d, "--resume", mid])
        old, new = arrays(end), arrays(ckpt(d, 4))
        # Counters added since (the kernels a run chose, `kernel_paths`) may be new; the old ones
        # must be there with the same values.
        counters = [dict(zip(c["algo.counter_names"].decode().split(",") if c["algo.counter_names"] else [],
                             c.pop("algo/counters").tolist())) for c in (old, new)]
        for c in (old, new):
            c.pop("algo.counter_names")
        added = sorted(set(counters[1]) - set(counters[0]))
        if any(not k.endswith("kernel_paths") for k in added) or \
                any(counters[1].get(k) != v for k, v in counters[0].items()):
            sys.exit(f"check_compat: {name}: counters differ: {counters[0]} vs {counters[1]}")
        # The format version moves on; attributes it added have their old meaning's value.
        for c in (old, new):
            c.pop("meta.format_version", None)
        if "meta.simulators_per_gmi" not in old and new.pop("meta.simulators_per_gmi", 1) != 1:
            sys.exit(f"check_compat: {name}: a dp run's checkpoint should have simulators_per_gmi 1")
        missing = sorted(set(old) ^ set(new))
        if missing:
            sys.exit(f"check_compat: {name}: datasets/attributes differ between the old and the resumed run: {missing}")
        for k in sorted(old):
            x, y = np.asarray(old[k]), np.asarray(new[k])
            if x.dtype.kind in "fc":
                if x.shape != y.shape or not np.allclose(x, y, rtol=1e-3, atol=2e-3, equal_nan=True):
                    sys.exit(f"check_compat: {name}: {k} differs (max |diff| "
                             f"{np.max(np.abs(x - y)) if x.shape == y.shape else 'shape'})")
            elif not np.array_equal(x, y):
                sys.exit(f"check_compat: {name}: {k} differs: {x!r} vs {y!r}")
        check_metrics(name, d)
        print(f"{name}: iteration 2 of the old build resumed to iteration 4 as the old build ran it")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "generate"])
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    {"check": check, "generate": generate}[a.mode](a)
    print(f"check_compat {a.mode}: ok")
