#!/usr/bin/env python3
"""`gmi_drl sweep` through the real command line (no GPU needed):

  alone   a sweep started alone runs 2 GMIs side by side: every run's metrics.csv (learning
          columns) and final checkpoint equal the same config and seed trained alone, bit for bit;
          sweep.csv has one row per run; every run writes TensorBoard scalars; nothing is left
          running
  mpi     the same under `mpiexec -n 3` (every rank one GMI, rank 0 holds the queue), with
          gmi.per_gpu: 3 in the config (the runs are one GMI each all the same)
  faults  a grid value the config rejects and a NaN stop fail with their error lines while the
          other runs finish (exit status 1); a `kill -9` of one run mid-way restarts it from its
          newest checkpoint and it still equals the standalone run
  signal  SIGTERM to the sweep: every running run writes a checkpoint and stops, the sweep says
          `stopped SIGTERM`; `--resume DIR` finishes the rest, each run equal to the standalone one

  check_sweep.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import csv
import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CFG = ("env:\n  name: CartPole-v1\n  num_envs: 4\nppo:\n  num_steps: 16\n  num_minibatches: 2\n"
       "train:\n  total_env_steps: {steps}\n  log_interval: 100\ncheckpoint:\n  interval: 4\n")


def fail(msg, p=None):
    print("check_sweep: " + msg)
    if p is not None:
        print("--- stdout\n" + (p.stdout or "") + "\n--- stderr\n" + (p.stderr or ""))
    sys.exit(1)


def config(a, steps=1024):
    path = os.path.join(a.workdir, "c.yaml")
    with open(path, "w") as f:
        f.write(CFG.format(steps=steps))
    return path


def sweep(a, args, np_=0, status=0, env=None):
    cmd = ([a.mpiexec, "-n", str(np_), "--oversubscribe"] if np_ else []) + [a.gmi, "sweep"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=harness.env_for(env))
    if status is not None and p.returncode != status:
        fail(f"expected exit status {status}, got {p.returncode}: {' '.join(cmd)}", p)
    return p


def rows(sweep_dir):
    return {r["run"]: r for r in csv.DictReader(open(os.path.join(sweep_dir, "sweep.csv")))}


def standalone(a, cfg, seed, sets=(), env=None):
    """The same config and seed trained alone: its run directory."""
    run_dir = os.path.join(a.workdir, "alone", f"seed{seed}-" + "-".join(s.replace("=", "_") for s in sets))
    if not os.path.exists(os.path.join(run_dir, "status")):
        args = [a.gmi, "--config", cfg, "--seed", str(seed), "--run-dir", run_dir]
        for s in sets:
            args += ["--set", s]
        p = subprocess.run(args, capture_output=True, text=True, timeout=300, env=harness.env_for(env))
        if p.returncode != 0:
            fail("the standalone run failed", p)
    return run_dir


def final_checkpoint(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "checkpoints", "ckpt-*.h5")))
    if not files:
        fail(f"{run_dir}: no checkpoint")
    return files[-1]


def same_run(sweep_run, alone_run):
    """Bit for bit: metrics.csv without its timing columns, and every dataset of the final checkpoint."""
    if harness.learning_columns(sweep_run) != harness.learning_columns(alone_run):
        fail(f"{sweep_run}: metrics.csv differs from the standalone run {alone_run}")
    fa, fb = final_checkpoint(sweep_run), final_checkpoint(alone_run)
    if os.path.basename(fa) != os.path.basename(fb):
        fail(f"final checkpoints differ: {fa} vs {fb}")
    da, db = harness.datasets(fa), harness.datasets(fb)
    if set(da) != set(db):
        fail(f"{fa}: datasets {sorted(set(da) ^ set(db))} differ")
    for k in da:
        x, y = np.asarray(da[k]), np.asarray(db[k])
        same = np.array_equal(x, y, equal_nan=x.dtype.kind == "f" and y.dtype.kind == "f")
        if not same:
            fail(f"{fa}: {k} differs from the standalone run's")


def no_process_left(sweep_dir):
    time.sleep(0.5)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if os.path.abspath(sweep_dir) in cmd or (sweep_dir in cmd and "gmi_drl" in cmd):
            fail(f"process {pid} still running: {cmd}")


def check_done_sweep(a, cfg, sweep_dir, seeds):
    r = rows(sweep_dir)
    if sorted(r) != sorted(f"seed{s}" for s in seeds):
        fail(f"sweep.csv rows {sorted(r)}")
    for s in seeds:
        row = r[f"seed{s}"]
        if row["status"] != "done" or row["env_steps"] != "1024":
            fail(f"sweep.csv row {row}")
        run_dir = os.path.join(sweep_dir, f"seed{s}")
        same_run(run_dir, standalone(a, cfg, s))
        if not glob.glob(os.path.join(run_dir, "events.out.tfevents.*")):
            fail(f"{run_dir}: no TensorBoard event file")
    if open(os.path.join(sweep_dir, "status")).read() != "done\n":
        fail("the sweep's status file does not say done")
    no_process_left(sweep_dir)


def mode_alone(a):
    cfg = config(a)
    d = os.path.join(a.workdir, "sweep")
    p = sweep(a, ["--config", cfg, "--seeds", "1..3", "--per-gpu", "2", "--sweep-dir", d])
    if "sweep: 3 runs (3 left) on 2 GMI(s)" not in p.stdout:
        fail("no start line naming 3 runs on 2 GMIs", p)
    check_done_sweep(a, cfg, d, [1, 2, 3])
    # A second sweep into the same directory is refused; --resume of a finished one has nothing to do.
    p = sweep(a, ["--config", cfg, "--seeds", "1..3", "--sweep-dir", d], status=2)
    if "holds a sweep already" not in p.stderr:
        fail("reusing a sweep directory is not refused", p)
    sweep(a, ["--resume", d])


def mode_mpi(a):
    cfg = config(a)
    d = os.path.join(a.workdir, "sweep")
    # gmi.per_gpu places the sweep's 3 GMIs; each run is one GMI all the same (the sweep sets it to 0).
    p = sweep(a, ["--config", cfg, "--seeds", "1..4", "--sweep-dir", d, "--set", "gmi.per_gpu=3"], np_=3)
    if "on 3 GMI(s)" not in p.stdout:
        fail("not 3 GMIs", p)
    check_done_sweep(a, cfg, d, [1, 2, 3, 4])
    where = {row["gmi"] for row in rows(d).values()}
    if len(where) < 2:
        fail(f"every run ran on one GMI: {where}")


def wait_for(path_glob, timeout, proc=None):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if glob.glob(path_glob):
            return
        if proc is not None and proc.poll() is not None:
            fail(f"the sweep ended (status {proc.returncode}) before {path_glob} appeared")
        time.sleep(0.05)
    fail(f"{path_glob} did not appear in {timeout} s")


def pids_of(run_dir):
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if run_dir.encode() in cmd and b"sweep" not in cmd:
                out.append(int(pid))
    return out


def mode_faults(a):
    cfg = config(a, steps=4096)
    d = os.path.join(a.workdir, "sweep")
    # Slow checkpoints make the runs long enough to kill one mid-way; they change no result.
    env = {"GMI_DRL_FAULT": "slow-checkpoint@0.15"}
    grid = ["--grid", "ppo.num_minibatches=2,3"]
    proc = subprocess.Popen([a.gmi, "sweep", "--config", cfg, "--seeds", "1,2", *grid, "--per-gpu", "2",
                             "--sweep-dir", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=harness.env_for(env))
    victim = os.path.join(d, "c0-num_minibatches=2-seed1")
    wait_for(os.path.join(victim, "checkpoints", "ckpt-*.h5"), 120, proc)
    pids = pids_of(victim)
    if not pids:
        fail("the run to kill is not running")
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=400)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if proc.returncode != 1:
        fail(f"expected exit status 1 (runs failed), got {proc.returncode}", p)
    r = rows(d)
    for name in ("c1-num_minibatches=3-seed1", "c1-num_minibatches=3-seed2"):
        if r[name]["status"] != "failed" or "ppo.num_minibatches: 3 does not divide" not in r[name]["error"]:
            fail(f"{name}: {r[name]}", p)
    if r[os.path.basename(victim)]["attempts"] != "2" or "continues from its newest checkpoint" not in p.stdout:
        fail(f"the killed run was not restarted: {r[os.path.basename(victim)]}", p)
    for s in (1, 2):
        name = f"c0-num_minibatches=2-seed{s}"
        if r[name]["status"] != "done":
            fail(f"{name}: {r[name]}", p)
        same_run(os.path.join(d, name), standalone(a, cfg, s, ["ppo.num_minibatches=2"]))
    no_process_left(d)
    # A NaN stop fails at once (exit status 2 of the run, not retried) with its error line.
    d2 = os.path.join(a.workdir, "nan")
    p = sweep(a, ["--config", cfg, "--grid", "train.max_nonfinite_updates=1,100", "--sweep-dir", d2],
              status=1, env={"GMI_DRL_FAULT": "nan@3"})
    r = rows(d2)
    bad, good = r["c0-max_nonfinite_updates=1-seed1"], r["c1-max_nonfinite_updates=100-seed1"]
    if bad["status"] != "failed" or bad["attempts"] != "1" or "NaN/Inf gradient" not in bad["error"]:
        fail(f"NaN stop: {bad}", p)
    if good["status"] != "done":
        fail(f"the run that tolerates the NaN: {good}", p)


def mode_signal(a):
    cfg = config(a, steps=4096)
    d = os.path.join(a.workdir, "sweep")
    env = {"GMI_DRL_FAULT": "slow-checkpoint@0.15"}
    proc = subprocess.Popen([a.gmi, "sweep", "--config", cfg, "--seeds", "1..3", "--per-gpu", "2",
                             "--sweep-dir", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=harness.env_for(env))
    wait_for(os.path.join(d, "seed1", "checkpoints", "ckpt-*.h5"), 120, proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if proc.returncode != 0 or "stopped SIGTERM" not in open(os.path.join(d, "status")).read():
        fail(f"after SIGTERM: status {proc.returncode}", p)
    r = rows(d)
    if [r[f"seed{s}"]["status"] for s in (1, 2, 3)] != ["stopped", "stopped", "pending"]:
        fail(f"sweep.csv after SIGTERM: {[r[f'seed{s}']['status'] for s in (1, 2, 3)]}", p)
    for s in (1, 2):
        if not open(os.path.join(d, f"seed{s}", "status")).read().startswith("stopped SIGTERM"):
            fail(f"seed{s} did not stop with a checkpoint", p)
    no_process_left(d)
    p = sweep(a, ["--resume", d], env=env)
    if "sweep: 3 runs (3 left)" not in p.stdout:
        fail("the resumed sweep does not take up the 3 runs", p)
    for s in (1, 2, 3):
        if rows(d)[f"seed{s}"]["status"] != "done":
            fail(f"seed{s} not done after --resume", p)
        same_run(os.path.join(d, f"seed{s}"), standalone(a, cfg, s))
    if open(os.path.join(d, "status")).read() != "done\n":
        fail("the resumed sweep's status file does not say done")


if __name__ == "__main__":
    harness.main("check_sweep", ["alone", "mpi", "faults", "signal"], globals())
