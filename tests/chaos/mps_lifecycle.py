#!/usr/bin/env python3
"""The MPS life cycle, back to back on one GPU (issue 32): JOBS short training jobs of 1, 2, 4 or 8
GMIs in a seeded random order, each right after the last one ended, with the daemon each job starts
and stops; every few jobs a job of the user kind that exports CUDA_MPS_PIPE_DIRECTORY with no daemon
there (as site MPS wrappers do), a one-GMI job, a `gmi_drl sweep` of 4 runs, or a plain CUDA process.
Every job must start and finish (exit 0), each GMI must see the SMs its share gives it (the layout
table's "SMs seen"), and no MPS daemon or gmi_drl process may be left at the end.

  mps_lifecycle.py --gmi build/cuda/bin/gmi_drl --jobs 50 --seed 1 [--mpirun mpirun] [--json out.json]

Exit 0 when every job passed, 1 otherwise; 77 (skipped) without a GPU or nvidia-cuda-mps-control.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CFG = ("env:\n  name: CartPole-v1\n  num_envs: 1024\nppo:\n  num_steps: 16\n  num_minibatches: 2\n"
       "train:\n  total_env_steps: 81920\n  log_interval: 100\ncheckpoint:\n  interval: 0\n")


def daemons():
    p = subprocess.run(["pgrep", "-f", "nvidia-cuda-mps"], capture_output=True, text=True)
    return [l for l in p.stdout.split() if l]


def sms_seen(text):
    """The "SMs seen" column of every row of the layout table(s) in a log."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s*$", line.split("] ")[-1])
        if m:
            out.append(int(m.group(6)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--json", default="")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a job may take before it counts as hung")
    a = ap.parse_args()
    if not shutil.which("nvidia-cuda-mps-control") or not os.path.exists("/proc/driver/nvidia/gpus"):
        print("mps_lifecycle: skipped (needs a GPU and nvidia-cuda-mps-control)")
        sys.exit(77)
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="gmi_mps_lifecycle_")
    cfg = os.path.join(work, "c.yaml")
    open(cfg, "w").write(CFG)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for k in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "GMI_DRL_FAULT"):
        env.pop(k, None)
    full = None
    results, t_all = [], time.time()
    for j in range(a.jobs):
        kind = rng.choice(["gmis"] * 6 + ["user_pipe", "sweep", "plain"])
        gmis = rng.choice([1, 2, 4, 8])
        e = dict(env)
        run_dir = os.path.join(work, f"job{j}")
        if kind == "plain":  # a CUDA process that is not gmi_drl's: the GPU must be free of MPS for it
            cmd = [sys.executable, "-c", "import ctypes; c = ctypes.CDLL('libcudart.so'); n = ctypes.c_int(); "
                   "r = c.cudaGetDeviceCount(ctypes.byref(n)); print('cudaGetDeviceCount', r, n.value); "
                   "raise SystemExit(0 if r == 0 and n.value > 0 else 1)"]
            gmis = 0
        elif kind == "sweep":
            gmis = max(gmis, 2)
            cmd = [a.gmi, "sweep", "--config", cfg, "--seeds", "1..4", "--per-gpu", str(gmis), "--sweep-dir", run_dir]
        else:
            if kind == "user_pipe":  # the trap of issue 32: a daemonless pipe directory in the environment
                e["CUDA_MPS_PIPE_DIRECTORY"] = os.path.join(work, "user-mps")
                os.makedirs(e["CUDA_MPS_PIPE_DIRECTORY"], exist_ok=True)
            cmd = ([a.mpirun, "--bind-to", "none", "--oversubscribe", "-np", str(gmis)] if gmis > 1 else []) + \
                  [a.gmi, "--config", cfg, "--run-dir", run_dir, "--set", f"gmi.per_gpu={gmis}"]
        t0 = time.time()
        out_path = os.path.join(work, f"job{j}.out")
        with open(out_path, "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=e, start_new_session=True)
            try:
                rc = proc.wait(timeout=a.timeout)
            except subprocess.TimeoutExpired:
                rc = -1
                print(f"job {j}: still running after {a.timeout} s; processes:\n" +
                      subprocess.run(["ps", "-eo", "pid,ppid,pgid,stat,etime,args", "--forest"], capture_output=True,
                                     text=True).stdout[-6000:], flush=True)
                for log in [out_path] + sorted(glob.glob(os.path.join(run_dir, "**", "*.log"), recursive=True)):
                    print(f"--- {log} (tail)\n" + "".join(open(log, errors="replace").readlines()[-15:]), flush=True)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        p = subprocess.CompletedProcess(cmd, rc, open(out_path).read(), "")
        text = p.stdout
        if kind == "sweep":
            for f in sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []:
                log = os.path.join(run_dir, f, "train.log")
                if os.path.exists(log):
                    text += open(log).read()
        seen = sms_seen(text)
        if gmis == 1 and kind != "sweep" and seen and full is None:
            full = seen[0]
        ok = p.returncode == 0
        why = "" if ok else ("hung" if p.returncode == -1 else f"exit {p.returncode}") + ": " + " | ".join(l for l in text.splitlines() if "error" in l.lower())[:300]
        # A GMI sharing its GPU with others sees fewer SMs than the whole GPU; one alone sees them all.
        if ok and full and kind in ("gmis", "user_pipe") and seen:
            want_share = gmis > 1
            if any((s < full) != want_share for s in seen):
                ok, why = False, f"SMs seen {seen} with {gmis} GMI(s) (whole GPU: {full})"
        # A sweep's runs share the SMs at twice their fair share, at most all of them (src/runtime/sweep.cpp:
        # 100 % each with 2 per GPU, 50 % with 4, 25 % with 8).
        share = min(100, 200 // gmis) if kind == "sweep" else 0
        if ok and kind == "sweep" and full and seen and any((s >= full) != (share >= 100) for s in seen):
            ok, why = False, f"sweep runs with {gmis} per GPU ({share} % of the SMs each) saw {seen} of {full} SMs"
        results.append(dict(job=j, kind=kind, gmis=gmis, rc=p.returncode, ok=ok, why=why, sms_seen=seen,
                            seconds=round(time.time() - t0, 2)))
        print(f"job {j:3d} {kind:9s} {gmis} GMI(s): {'ok' if ok else 'FAILED ' + why} "
              f"({time.time() - t0:.1f} s, SMs seen {seen})", flush=True)
    time.sleep(3)  # the daemons' watchers send `quit` once their jobs' processes are gone
    left = daemons()
    gmi_left = subprocess.run(["pgrep", "-f", work], capture_output=True, text=True).stdout.split()
    summary = dict(jobs=a.jobs, seed=a.seed, passed=sum(r["ok"] for r in results), daemons_left=len(left),
                   processes_left=len(gmi_left), seconds=round(time.time() - t_all, 1), whole_gpu_sms=full,
                   results=results)
    print(f"mps_lifecycle: {summary['passed']} of {a.jobs} jobs passed, {len(left)} MPS daemon process(es) and "
          f"{len(gmi_left)} job process(es) left, {summary['seconds']} s (seed {a.seed})")
    if a.json:
        json.dump(summary, open(a.json, "w"), indent=1)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if summary["passed"] == a.jobs and not left and not gmi_left else 1)


if __name__ == "__main__":
    main()
