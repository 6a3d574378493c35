#!/usr/bin/env python3
"""Checkpoints, restarts and faults through the real command line, 4 GMIs under mpiexec:

  exact     N iterations straight == N/2, then --resume FILE for the rest, and == a run stopped
            by SIGTERM (to one rank) then continued with --resume latest, also on two emulated
            nodes (gmi.ranks_per_node): every dataset of the final
            checkpoint (weights, Adam moments and step, normalisers, env state, Philox
            counters) and every learning column of metrics.csv bit for bit
  signals   SIGUSR2 to mpiexec: a checkpoint and training goes on; SIGUSR1 to mpiexec, SIGTERM
            twice to every rank (the second one while the checkpoint is being written) and
            SIGINT to a single process: a valid checkpoint, a message, exit status 0
  dead      a rank killed with SIGKILL, or segfaulting: the job ends within 60 s, the output
            names the rank, no rank is left running
  killwrite a rank killed while the checkpoint is written: only a .partial file is left,
            --resume latest continues from the previous checkpoint and ends where an
            uninterrupted run ends
  diskfull  the file system filled while a checkpoint is written (GMI_DRL_FAULT
            fill-in-checkpoint, on a 16 MiB tmpfs; root only, else skipped), 1 GMI and 4 GMIs:
            exit 1 with one 'writing ... failed' line and no crash (HDF5's clean-up of the
            failed file at MPI_Finalize segfaulted one GMI), the previous checkpoint intact, no
            .partial; with the space freed, --resume latest ends where an uninterrupted run ends
  nan       a NaN in the gradients of one iteration on one GMI: the updates are skipped and
            logged, training goes on; with train.max_nonfinite_updates reached the run stops
            with one error line naming the last good checkpoint, which verifies
  badfiles  missing, a directory, truncated, wrong format version, wrong shape, checksum
            mismatch, a conflicting config: one error line naming the file and the problem
            (verify and --resume); --resume latest falls back to the previous valid one
  cadence   checkpoint.interval, checkpoint.interval_minutes, checkpoint.keep and
            checkpoint.at_end decide which checkpoints exist
  layout    a 4-GMI checkpoint resumed on 2 GMIs with other env counts: policy, optimizer and
            normalisers restored, envs re-seeded, a warning, the run finishes
  finished  --resume latest of a finished run: nothing to do, said so, exit status 0, no return
            invented, nothing written
  tag       TagContinuous-v0 (multi-agent: a policy per role) on 2 GMIs: N iterations straight ==
            N/2 then --resume (every role's weights, optimiser and normalisers, the game state),
            per-role and tag-rate columns
  mujoco    Hopper-v5 (host-simulated) on 2 GMIs: N iterations straight == N/2 then --resume
            (simulator states and metrics, reward-term columns included, bit for bit), and ~= a
            run with env.async_halves or env.batch_size groups (to rounding)
  physics   DeviceAnt-v5 (the device physics pipeline) on 2 GMIs: N iterations straight == N/2
            then --resume, bit for bit; every env's qpos, qvel and contact forces in the checkpoint

  check_checkpoint.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

import harness
from harness import ckpt, datasets, env_for, learning_columns

CFG = ("env:\n  name: CartPole-v1\n  num_envs: 4\nppo:\n  num_steps: 16\n  num_minibatches: 2\n"
       "  update_epochs: 4\n  normalize_obs: true\n  normalize_reward: true\n"
       "train:\n  total_env_steps: 2048\n  log_interval: 1\ncheckpoint:\n  interval: 4\n  keep: 10\n"
       # auto measures at start-up and may pick another strategy in another run (another
       # summation order); runs compared with each other pin it
       "reduce:\n  strategy: har\n")
ITERS = 8  # 2048 steps / (4 GMIs x 4 envs x 16 steps)


def fail(msg, p=None):
    print("check_checkpoint: " + msg)
    if p is not None:
        out, err = (p.stdout, p.stderr) if hasattr(p, "stdout") else p
        print("--- stdout\n" + str(out) + "\n--- stderr\n" + str(err))
    sys.exit(1)



def cmd(a, np_, args):
    return ([a.mpiexec, "-n", str(np_), "--oversubscribe", a.gmi] if np_ else [a.gmi]) + args


def run(a, np_, args, env=None, status=0, timeout=240):
    p = subprocess.run(cmd(a, np_, args), capture_output=True, text=True, timeout=timeout,
                       env=env_for(env), cwd=a.workdir)
    if status is not None and p.returncode != status:
        fail(f"expected exit status {status}, got {p.returncode}: {' '.join(args)}", p)
    return p


def start(a, np_, args, env=None):
    log = open(os.path.join(a.workdir, f"log-{time.time_ns()}.txt"), "w+")
    p = subprocess.Popen(cmd(a, np_, args), stdout=log, stderr=subprocess.STDOUT, text=True,
                         env=env_for(env), cwd=a.workdir, start_new_session=True)
    return p, log


def read_log(log):
    log.flush()
    log.seek(0)
    return log.read()


def wait_for(log, pattern, p, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        text = read_log(log)
        if re.search(pattern, text):
            return text
        if p.poll() is not None:
            fail(f"process exited ({p.returncode}) before /{pattern}/", (read_log(log), ""))
        time.sleep(0.05)
    fail(f"no /{pattern}/ within {timeout} s", (read_log(log), ""))


def rank_pids(p):
    out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def one_error_line(p, regex):
    # gmi_drl's own lines (mpiexec adds its banner about the exit status after them)
    err = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:")]
    if len(err) != 1 or not re.search(regex, err[0]):
        fail(f"expected one stderr line matching /{regex}/", p)


def config(a, extra=""):
    path = os.path.join(a.workdir, "c.yaml")
    with open(path, "w") as f:
        f.write(CFG + extra)
    return path


def same_checkpoints(x, y):
    a, b = datasets(x), datasets(y)
    if sorted(a) != sorted(b):
        fail(f"{x} and {y} hold different datasets")
    for k in a:
        if not np.array_equal(a[k], b[k], equal_nan=True):
            fail(f"{k} differs between {x} and {y}")



def straight(a, cfg):
    run_dir = os.path.join(a.workdir, "straight")
    if not os.path.exists(ckpt(run_dir, ITERS)):
        run(a, 4, ["--config", cfg, "--run-dir", run_dir])
    return run_dir


def mode_exact(a):
    cfg = config(a)
    ref = straight(a, cfg)
    half = ckpt(ref, ITERS // 2)
    # Resume from the middle checkpoint into another directory.
    b = os.path.join(a.workdir, "resumed")
    p = run(a, 4, ["--config", cfg, "--run-dir", b, "--resume", half])
    if f"resumed from {half}: iteration {ITERS // 2}" not in p.stdout:
        fail("no 'resumed from' line", p)
    same_checkpoints(ckpt(ref, ITERS), ckpt(b, ITERS))
    if learning_columns(ref) != learning_columns(b):
        fail("metrics.csv differs between the straight and the resumed run")
    # Two emulated nodes (gmi.ranks_per_node): leaders on both nodes, the file written by all.
    nodes = os.path.join(a.workdir, "nodes2")
    two = ["--set", "gmi.ranks_per_node=2", "--set", "gmi.per_gpu=2"]
    p = run(a, 4, ["--config", cfg, "--run-dir", nodes] + two)
    if "4 GMI(s) on 2 GPU(s) of 2 node(s)" not in p.stdout:
        fail("not a 2-node layout", p)
    b = os.path.join(a.workdir, "nodes2-resumed")
    run(a, 4, ["--config", cfg, "--run-dir", b, "--resume", ckpt(nodes, ITERS // 2)] + two)
    with h5py.File(ckpt(b, ITERS), "r") as f:
        if f["meta"].attrs["num_nodes"] != 2 or list(f["meta/gmis_per_gpu"][()]) != [2, 2]:
            fail("the checkpoint does not record the 2-node layout")
    same_checkpoints(ckpt(nodes, ITERS), ckpt(b, ITERS))
    # reduce.strategy auto: the resumed run keeps the strategy the checkpoint was written with.
    auto = os.path.join(a.workdir, "auto")
    run(a, 4, ["--config", cfg, "--run-dir", auto, "--set", "reduce.strategy=auto"])
    b = os.path.join(a.workdir, "auto-resumed")
    p = run(a, 4, ["--config", cfg, "--run-dir", b, "--set", "reduce.strategy=auto", "--resume", ckpt(auto, ITERS // 2)])
    if "(the checkpoint's; reduce.strategy auto keeps it on resume" not in p.stdout:
        fail("auto did not keep the checkpoint's strategy", p)
    same_checkpoints(ckpt(auto, ITERS), ckpt(b, ITERS))
    # Stop with SIGTERM (to rank 3 only, before iteration 5: a deterministic stop point), then
    # --resume latest without --config (the checkpoint's config).
    c = os.path.join(a.workdir, "stopped")
    p = run(a, 4, ["--config", cfg, "--run-dir", c, "--set", "checkpoint.interval=0"],
            env={"GMI_DRL_FAULT": "sigterm@5:3"})
    if not re.search(r"SIGTERM received: stopped after iteration 5 with checkpoint \S+ckpt-000000005\.h5", p.stdout):
        fail("no stop after iteration 5", p)
    if open(os.path.join(c, "status")).read() != "stopped SIGTERM 5\n":
        fail("status is not 'stopped SIGTERM 5'", p)
    p = run(a, 4, ["--resume", "latest", "--run-dir", c, "--set", "checkpoint.interval=0"])
    if "resumed from" not in p.stdout:
        fail("--resume latest did not resume", p)
    same_checkpoints(ckpt(ref, ITERS), ckpt(c, ITERS))
    if learning_columns(ref) != learning_columns(c):
        fail("metrics.csv differs between the straight and the stopped-and-resumed run")


def verify(a, path, status=0):
    return run(a, 0, ["checkpoint", "verify", path], status=status)


def mode_signals(a):
    cfg = config(a, "")
    long = ["--set", "train.total_env_steps=100000000", "--set", "checkpoint.interval=0"]
    # SIGUSR2: checkpoint, go on; then SIGUSR1 (forwarded by mpiexec): checkpoint and exit 0.
    d = os.path.join(a.workdir, "usr")
    p, log = start(a, 4, ["--config", cfg, "--run-dir", d] + long)
    wait_for(log, r"iter 2/", p)
    p.send_signal(signal.SIGUSR2)
    wait_for(log, r"checkpoint \S+ \(SIGUSR2\)[^\n]*\n(.*\n)*.*\] iter \d+/", p)  # and training went on
    p.send_signal(signal.SIGUSR1)
    p.wait(120)
    text = read_log(log)
    if p.returncode != 0 or not re.search(r"SIGUSR1 received: stopped after iteration \d+ with checkpoint", text):
        fail(f"SIGUSR1: exit {p.returncode}", (text, ""))
    files = sorted(os.listdir(os.path.join(d, "checkpoints")))
    if len(files) != 2:
        fail(f"expected the SIGUSR2 and the SIGUSR1 checkpoints, got {files}", (text, ""))
    for f in files:
        verify(a, os.path.join(d, "checkpoints", f))
    # SIGTERM to every rank, as Slurm does, twice: the second while the checkpoint is written.
    d = os.path.join(a.workdir, "term")
    p, log = start(a, 4, ["--config", cfg, "--run-dir", d] + long, env={"GMI_DRL_FAULT": "slow-checkpoint@2"})
    wait_for(log, r"iter 2/", p)
    ranks = rank_pids(p)
    if len(ranks) != 4:
        fail(f"expected 4 rank processes under mpiexec, found {ranks}")
    for pid in ranks:
        os.kill(pid, signal.SIGTERM)
    time.sleep(1.0)  # inside the 2 s checkpoint write
    partial = [f for f in os.listdir(os.path.join(d, "checkpoints")) if f.endswith(".partial")]
    for pid in ranks:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    p.wait(120)
    text = read_log(log)
    if p.returncode != 0 or "SIGTERM received" not in text:
        fail(f"SIGTERM: exit {p.returncode}", (text, ""))
    if not partial:
        fail("the second SIGTERM did not arrive during the checkpoint write (no .partial file seen)", (text, ""))
    files = os.listdir(os.path.join(d, "checkpoints"))
    if len(files) != 1 or not files[0].endswith(".h5"):
        fail(f"expected one complete checkpoint, got {files}", (text, ""))
    verify(a, os.path.join(d, "checkpoints", files[0]))
    # SIGINT (Ctrl-C) to a single process.
    d = os.path.join(a.workdir, "int")
    p, log = start(a, 0, ["--config", cfg, "--run-dir", d] + long)
    wait_for(log, r"iter 2/", p)
    p.send_signal(signal.SIGINT)
    p.wait(120)
    text = read_log(log)
    if p.returncode != 0 or "SIGINT received" not in text:
        fail(f"SIGINT: exit {p.returncode}", (text, ""))
    verify(a, os.path.join(d, "checkpoints", os.listdir(os.path.join(d, "checkpoints"))[0]))


def mode_dead(a):
    cfg = config(a, "")
    for fault, rank, sig in [("kill@3:2", 2, "signal 9"), ("segv@3:1", 1, "signal 11")]:
        d = os.path.join(a.workdir, "dead-" + fault.split("@")[0])
        t0 = time.time()
        p = run(a, 4, ["--config", cfg, "--run-dir", d, "--set", "train.total_env_steps=100000000"],
                env={"GMI_DRL_FAULT": fault}, status=None, timeout=90)
        took = time.time() - t0
        out = p.stdout + p.stderr
        if p.returncode == 0:
            fail(f"{fault}: the job exited 0", p)
        if took > 60:
            fail(f"{fault}: the job took {took:.0f} s to end", p)
        if not re.search(rf"rank {rank}\b.*{sig}", out):
            fail(f"{fault}: the output does not name rank {rank} ({sig})", p)
        left = subprocess.run(["pgrep", "-f", d], capture_output=True, text=True).stdout.split()
        if left:
            fail(f"{fault}: processes left running: {left}", p)
        print(f"{fault}: job ended in {took:.1f} s, exit status {p.returncode}")


def mode_killwrite(a):
    cfg = config(a)
    ref = straight(a, cfg)
    d = os.path.join(a.workdir, "killwrite")
    p = run(a, 4, ["--config", cfg, "--run-dir", d], env={"GMI_DRL_FAULT": f"kill-in-checkpoint@{ITERS}:1"},
            status=None, timeout=90)
    if p.returncode == 0:
        fail("the run with a rank killed mid-checkpoint exited 0", p)
    files = sorted(os.listdir(os.path.join(d, "checkpoints")))
    if files != [f"ckpt-{ITERS // 2:09d}.h5", f"ckpt-{ITERS:09d}.h5.partial"]:
        fail(f"expected the previous checkpoint and a .partial file, got {files}", p)
    p = run(a, 4, ["--config", cfg, "--run-dir", d, "--resume", "latest"])
    if f"resumed from {ckpt(d, ITERS // 2)}" not in p.stdout or "removing" not in p.stdout + p.stderr:
        fail("--resume latest did not resume from the previous checkpoint and remove the partial file", p)
    same_checkpoints(ckpt(ref, ITERS), ckpt(d, ITERS))


def mode_diskfull(a):
    disk = os.path.join(a.workdir, "disk")
    os.makedirs(disk)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", disk], capture_output=True).returncode != 0:
        print("check_checkpoint diskfull: cannot mount a tmpfs (not root?): skipped")
        sys.exit(77)
    try:
        cfg = config(a)  # a checkpoint every 4 iterations
        ref = straight(a, cfg)
        for np_ in (0, 4):
            d = os.path.join(disk, f"run{np_}")
            p = run(a, np_, ["--config", cfg, "--run-dir", d], env={"GMI_DRL_FAULT": f"fill-in-checkpoint@{ITERS}"},
                    status=None, timeout=120)
            if p.returncode != 1 or "Segmentation" in p.stdout + p.stderr:
                fail(f"{np_ or 1} GMI(s), the disk filled during a checkpoint: expected exit status 1 and no crash, "
                     f"got {p.returncode}", p)
            err = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:") and "GMI_DRL_FAULT" not in l]
            if len(err) != 1 or not re.search(rf"^gmi_drl: fatal: writing .*ckpt-{ITERS:09d}\.h5\.partial failed", err[0]):
                fail(f"{np_ or 1} GMI(s): expected one line 'gmi_drl: fatal: writing ... failed', got {err}", p)
            files = sorted(f for f in os.listdir(os.path.join(d, "checkpoints")) if f.startswith("ckpt-"))
            if files != [f"ckpt-{ITERS // 2:09d}.h5"]:
                fail(f"{np_ or 1} GMI(s): expected only the previous checkpoint, got {files}", p)
            verify(a, ckpt(d, ITERS // 2))
            os.remove(os.path.join(d, "checkpoints", "fill-in-checkpoint.filler"))
            if np_:
                run(a, np_, ["--config", cfg, "--run-dir", d, "--resume", "latest"])
                same_checkpoints(ckpt(ref, ITERS), ckpt(d, ITERS))
            shutil.rmtree(d)
    finally:
        if subprocess.run(["umount", disk], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", disk], capture_output=True)


def mode_nan(a):
    cfg = config(a)
    d = os.path.join(a.workdir, "nan-go-on")
    p = run(a, 4, ["--config", cfg, "--run-dir", d], env={"GMI_DRL_FAULT": "nan@3:1"})
    if not re.search(r"iteration 3: 8 of 8 update\(s\) skipped for a NaN/Inf gradient or loss \(8 in a row\)", p.stdout + p.stderr):
        fail("no warning about the skipped updates", p)
    rows = list(csv.DictReader(open(os.path.join(d, "metrics.csv"))))
    if len(rows) != ITERS or rows[2]["grad_norm"] != "nan" or rows[3]["grad_norm"] == "nan":
        fail("metrics: expected a NaN grad_norm in iteration 3 only")
    verify(a, ckpt(d, ITERS))
    d = os.path.join(a.workdir, "nan-stop")
    p = run(a, 4, ["--config", cfg, "--run-dir", d, "--set", "train.max_nonfinite_updates=8",
                   "--set", "checkpoint.interval=2"], env={"GMI_DRL_FAULT": "nan@3:1"}, status=2)
    one_error_line(p, r"^gmi_drl: error: training stopped at iteration 3: 8 updates in a row had a NaN/Inf "
                      r"gradient or loss \(train.max_nonfinite_updates = 8\); last good checkpoint: "
                      + re.escape(ckpt(d, 2)) + "$")
    if sorted(os.listdir(os.path.join(d, "checkpoints"))) != [f"ckpt-{2:09d}.h5"]:
        fail("expected only the iteration-2 checkpoint", p)
    verify(a, ckpt(d, 2))


def mode_badfiles(a):
    cfg = config(a)
    ref = straight(a, cfg)
    good = ckpt(ref, ITERS)
    bad = os.path.join(a.workdir, "bad")
    os.makedirs(bad, exist_ok=True)

    def copy(name):
        path = os.path.join(bad, name)
        shutil.copy(good, path)
        return path

    cases = []
    cases.append((os.path.join(bad, "missing.h5"), r"missing\.h5: no such file$"))
    os.makedirs(os.path.join(bad, "dir.h5"), exist_ok=True)
    cases.append((os.path.join(bad, "dir.h5"), r"dir\.h5: is a directory, expected an HDF5 file$"))
    path = copy("truncated.h5")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    cases.append((path, r"truncated\.h5: (not an HDF5 file|cannot open as HDF5)"))
    path = copy("text.h5")
    open(path, "w").write("not a checkpoint\n")
    cases.append((path, r"text\.h5: not an HDF5 file"))
    path = copy("version.h5")
    with h5py.File(path, "r+") as f:
        f["meta"].attrs.modify("format_version", np.int64(99))
    cases.append((path, r"version\.h5: format version 99, this gmi_drl reads versions 1 to 3$"))
    path = copy("shape.h5")
    with h5py.File(path, "r+") as f:
        n = f["policy/params"].shape[0]
        del f["policy/params"]
        f.create_dataset("policy/params", data=np.zeros(n - 1, np.float32), chunks=True, fletcher32=True)
    cases.append((path, rf"shape\.h5: dataset /policy/params is float32 \[{n - 1}\], expected float32 \[{n}\]$"))
    path = copy("checksum.h5")
    with h5py.File(path, "r") as f:
        offset = f["policy/params"].id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as f:
        f.seek(offset + 400)
        b = f.read(1)
        f.seek(offset + 400)
        f.write(bytes([b[0] ^ 0xFF]))
    cases.append((path, r"checksum\.h5: dataset /policy/params: checksum mismatch"))
    for path, regex in cases:
        p = verify(a, path, status=2)
        one_error_line(p, "^gmi_drl: error: .*" + regex)
        p = run(a, 4, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "never"), "--resume", path], status=2)
        one_error_line(p, "^gmi_drl: error: .*" + regex)
    p = verify(a, good)
    if not re.search(r": ok \(format 3, iteration 8, 2048 env steps, 4 GMI\(s\) x 4 envs", p.stdout):
        fail("verify of a good checkpoint", p)
    p = run(a, 0, ["checkpoint", "inspect", good])
    for pat in [r"layout\s+1 node\(s\), 1 GPU\(s\), 4 GMI\(s\)", r"iteration 8, 2048 env steps",
                r"/policy/params\s+float32\s+\[\d+\]", r"/experience/obs\s+float32\s+\[16 x 4\]",
                r"/rng/env_episode\s+uint64\s+\[16\]", r"/metrics/table\s+float64\s+\[8 x \d+\]"]:
        if not re.search(pat, p.stdout):
            fail(f"inspect lacks /{pat}/", p)
    # A config that conflicts with the checkpoint's.
    p = run(a, 4, ["--config", cfg, "--set", "ppo.gamma=0.9", "--resume", good], status=2)
    one_error_line(p, r"^gmi_drl: error: .*ckpt-000000008\.h5: the config conflicts with the checkpoint's: "
                      r"ppo.gamma is 0.99 in the checkpoint but 0.9 now")
    # --resume latest: a damaged newest checkpoint is skipped with a warning.
    d = os.path.join(a.workdir, "fallback")
    shutil.copytree(ref, d)
    with open(ckpt(d, ITERS), "r+b") as f:
        f.truncate(1000)
    p = run(a, 4, ["--resume", "latest", "--run-dir", d, "--set", "checkpoint.at_end=false",
                   "--set", "checkpoint.interval=0"])
    if not re.search(r"skipping checkpoint .*ckpt-000000008\.h5", p.stdout + p.stderr) or \
            f"resumed from {ckpt(d, ITERS // 2)}" not in p.stdout:
        fail("--resume latest did not fall back to the previous checkpoint", p)
    # None valid: an error, not a new run.
    with open(ckpt(d, ITERS // 2), "r+b") as f:
        f.truncate(1000)
    p = run(a, 4, ["--resume", "latest", "--run-dir", d], status=2)
    one_error_line(p, r"^gmi_drl: error: .*checkpoints: none of the 2 checkpoint\(s\) is valid")
    # --resume latest with no run directory named.
    p = run(a, 4, ["--config", cfg, "--resume", "latest"], status=2)
    one_error_line(p, r"^gmi_drl: error: --resume latest: which run\? give --run-dir DIR")


def mode_cadence(a):
    cfg = config(a)
    names = lambda d: sorted(os.listdir(os.path.join(d, "checkpoints")))
    cases = [(["--set", "checkpoint.interval=3", "--set", "checkpoint.keep=10"], [3, 6, 8]),
             (["--set", "checkpoint.interval=3", "--set", "checkpoint.keep=10", "--set", "checkpoint.at_end=false"], [3, 6]),
             (["--set", "checkpoint.interval=1", "--set", "checkpoint.keep=2"], [7, 8]),
             (["--set", "checkpoint.interval=0", "--set", "checkpoint.interval_minutes=1e-6", "--set",
               "checkpoint.keep=3", "--set", "checkpoint.at_end=false"], [6, 7, 8])]
    for i, (args, want) in enumerate(cases):
        d = os.path.join(a.workdir, f"cadence{i}")
        p = run(a, 4, ["--config", cfg, "--run-dir", d] + args)
        if names(d) != [f"ckpt-{k:09d}.h5" for k in want]:
            fail(f"{args}: expected checkpoints of iterations {want}, got {names(d)}", p)
        if i == 3 and "(1e-06 minutes)" not in p.stdout:
            fail("no time-based checkpoint logged", p)


def mode_layout(a):
    cfg = config(a)
    ref = straight(a, cfg)
    d = os.path.join(a.workdir, "layout")
    p = run(a, 2, ["--config", cfg, "--run-dir", d, "--set", "env.num_envs=6", "--resume", ckpt(ref, ITERS // 2),
                   "--set", "train.total_env_steps=3072"])
    if not re.search(r"resuming \S+ \(4 GMI\(s\) x 4 envs\) on 2 GMI\(s\) x 6 envs: policy, optimizer and "
                     r"normalizers restored; environments re-seeded", p.stdout + p.stderr):
        fail("no layout-change warning", p)
    with h5py.File(ckpt(ref, ITERS // 2), "r") as f:
        params = f["policy/params"][()]
    # 4 x 4 x 16 x 4 = 1024 steps done -> iteration 1024 / (2 x 6 x 16) = 5 of 16 on the new layout
    rows = list(csv.DictReader(open(os.path.join(d, "metrics.csv"))))
    if [int(r["iteration"]) for r in rows][:5] != [1, 2, 3, 4, 6]:
        fail("metrics.csv: expected the old rows up to iteration 4, then iteration 6 on",
             (open(os.path.join(d, "metrics.csv")).read(), ""))
    files = sorted(os.listdir(os.path.join(d, "checkpoints")))
    last = os.path.join(d, "checkpoints", files[-1])
    with h5py.File(last, "r") as f:
        if f["meta"].attrs["num_gmis"] != 2 or f["experience/obs"].shape[0] != 12:
            fail("the new checkpoint does not have the new layout")
        if np.array_equal(f["policy/params"][()], params):
            fail("the policy did not train after the resume")
    verify(a, last)


def mode_finished(a):
    cfg = config(a)
    ref = straight(a, cfg)
    before = sorted(os.listdir(os.path.join(ref, "checkpoints")))
    metrics = open(os.path.join(ref, "metrics.csv")).read()
    p = run(a, 4, ["--resume", "latest", "--run-dir", ref])
    out = p.stdout + p.stderr
    if not re.search(rf"nothing to do: \S+ckpt-{ITERS:09d}\.h5 is at iteration {ITERS} of {ITERS} \(2048 env steps; "
                     r"train\.total_env_steps = 2048\); raise train\.total_env_steps to train further", out):
        fail("no 'nothing to do' line", p)
    if "best iteration return" in out or "-inf" in out:
        fail("a finished run resumed printed a return", p)
    if sorted(os.listdir(os.path.join(ref, "checkpoints"))) != before or \
            open(os.path.join(ref, "metrics.csv")).read() != metrics:
        fail("resuming a finished run changed its checkpoints or metrics", p)
    if open(os.path.join(ref, "status")).read() != "done\n":
        fail("status is not 'done'", p)


def resumed_equals_straight(a, cfg, iters, resume_args=()):
    """2 GMIs: `iters` iterations straight == resumed from the middle checkpoint into another
    directory (every checkpoint dataset and metrics column bit for bit); returns the straight run."""
    ref = os.path.join(a.workdir, "straight")
    run(a, 2, ["--config", cfg, "--run-dir", ref])
    b = os.path.join(a.workdir, "resumed")
    p = run(a, 2, ["--config", cfg, "--run-dir", b, "--resume", ckpt(ref, iters // 2)] + list(resume_args))
    if "resumed from" not in p.stdout:
        fail("no 'resumed from' line", p)
    same_checkpoints(ckpt(ref, iters), ckpt(b, iters))
    if learning_columns(ref) != learning_columns(b):
        fail("metrics.csv differs between the straight and the resumed run")
    return ref


def mode_mujoco(a):
    cfg = os.path.join(a.workdir, "hopper.yaml")
    with open(cfg, "w") as f:
        f.write("env:\n  name: Hopper-v5\n  num_envs: 4\n  threads: 2\nppo:\n  num_steps: 64\n  num_minibatches: 4\n"
                "  update_epochs: 2\n  normalize_obs: true\n  normalize_reward: true\n"
                "train:\n  total_env_steps: 3072\n  log_interval: 1\ncheckpoint:\n  interval: 3\n  keep: 10\n"
                "reduce:\n  strategy: har\n")
    iters = 6  # 3072 / (2 GMIs x 4 envs x 64 steps)
    ref = resumed_equals_straight(a, cfg, iters, ["--set", "env.threads=1"])
    header = open(os.path.join(ref, "metrics.csv")).readline()
    if "episode_reward_forward_mean" not in header:
        fail("metrics.csv has no reward-term columns: " + header)
    with h5py.File(ckpt(ref, iters), "r") as f:
        if f["experience/env/physics"].ndim != 2:
            fail("the checkpoint has no per-env simulator state")
    # Two halves stepped beside the policy (env.async_halves): the same training (the same actions
    # and random numbers); the policy's products over half the envs at a time may round
    # differently (BLAS picks kernels by size), so the last bits may differ.
    # The same for env.batch_size groups (4 envs in groups of 1, 3 threads, pinned).
    x = datasets(ckpt(ref, iters))
    for name, sets in [("halves", ["env.async_halves=true"]),
                       ("groups", ["env.batch_size=1", "env.threads=3", "env.pin_threads=true"])]:
        c = os.path.join(a.workdir, name)
        run(a, 2, ["--config", cfg, "--run-dir", c] + [w for s in sets for w in ("--set", s)])
        y = datasets(ckpt(c, iters))
        for k in ["policy/params", "experience/env/physics", "experience/obs", "experience/env/episode_return",
                  "rng/env_episode"]:
            if k in x and not np.allclose(x[k], y[k], rtol=1e-3, atol=1e-5):
                fail(f"{k}: training with {' '.join(sets)} differs from training in one batch")


def mode_physics(a):
    cfg = os.path.join(a.workdir, "ant.yaml")
    with open(cfg, "w") as f:
        f.write("env:\n  name: DeviceAnt-v5\n  num_envs: 4\npolicy:\n  actor_hidden: [32]\n  critic_hidden: [32]\n"
                "ppo:\n  num_steps: 16\n  num_minibatches: 2\n  update_epochs: 2\n  normalize_obs: true\n"
                "  normalize_reward: true\ntrain:\n  total_env_steps: 768\n  log_interval: 1\n"
                "checkpoint:\n  interval: 3\n  keep: 10\nreduce:\n  strategy: har\n")
    iters = 6  # 768 / (2 GMIs x 4 envs x 16 steps)
    ref = resumed_equals_straight(a, cfg, iters)
    with h5py.File(ckpt(ref, iters), "r") as f:
        for k, width in [("experience/env/qpos", 15), ("experience/env/qvel", 14), ("experience/env/cfrc_ext", 84)]:
            if k not in f or f[k].shape != (8, width):
                fail(f"the checkpoint's {k} is not 8 envs x {width}: {f[k].shape if k in f else 'missing'}")
        if "experience/env/anchor" not in f:
            fail("the checkpoint has no forward-reward anchor")


def mode_tag(a):
    cfg = os.path.join(a.workdir, "tag.yaml")
    with open(cfg, "w") as f:
        f.write("env:\n  name: TagContinuous-v0\n  num_envs: 4\n  num_runners: 6\n  episode_length: 30\n"
                "  tagging_distance: 0.1\n  use_full_observation: false\n  num_other_agents_observed: 3\n"
                "policy:\n  actor_hidden: [16]\n  critic_hidden: [16]\n"
                "ppo:\n  num_steps: 16\n  num_minibatches: 2\n  update_epochs: 2\n  normalize_obs: true\n"
                "  normalize_reward: true\ntrain:\n  total_env_steps: 768\n  log_interval: 1\n"
                "checkpoint:\n  interval: 3\n  keep: 10\nreduce:\n  strategy: har\n")
    iters = 6  # 768 / (2 GMIs x 4 envs x 16 steps)
    ref = resumed_equals_straight(a, cfg, iters)
    header = open(os.path.join(ref, "metrics.csv")).readline()
    for col in ["runner_policy_loss", "episode_tagger_return_mean", "episode_tag_rate_mean"]:
        if col not in header:
            fail(f"metrics.csv has no {col} column: " + header)
    with h5py.File(ckpt(ref, iters), "r") as f:
        for k in ["experience/env/loc_x", "experience/env/tagger_return_acc", "algo/runner_obs_rms"]:
            if k not in f:
                fail(f"the checkpoint has no {k}")


if __name__ == "__main__":
    harness.main("check_checkpoint", ["exact", "signals", "dead", "killwrite", "diskfull", "nan", "badfiles", "cadence", "layout", "finished",
                                      "mujoco", "physics", "tag"], globals())
