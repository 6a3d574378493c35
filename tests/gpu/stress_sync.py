#!/usr/bin/env python3
"""Stress the GMIs' synchronisation on one GPU: run GoogleTest binaries (test_data_parallel,
test_reducers) under mpiexec again and again over GMI counts and sharing modes, and count what
passes, fails, ends with a timeout line (reduce.timeout_s ran out) or hangs (killed at the
launch's time limit).  Prints a table and writes JSON.  For the GPU machine (issue 21); the
per-run limit is generous, so a "hang" here is a real one.

  stress_sync.py --bin DIR --tests test_data_parallel,test_reducers --gmis 2,4,8
                 --modes mps-shares,mps,none --runs 200 --per-launch 50 --json out.json

Modes: mps-shares (an MPS daemon, each GMI CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / GMIs),
mps (the daemon, no SM limit), none (no daemon: time-sliced contexts).  A launch runs a binary
with --gtest_repeat=PER_LAUNCH; runs = launches x PER_LAUNCH.  On a hang the script records
nvidia-smi's view and each rank's stack (gdb, when present) before killing the launch.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def sh(cmd, env=None, timeout=60):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env, timeout=timeout)


class Mps:
    def __init__(self, base):
        self.pipe = tempfile.mkdtemp(prefix="stress-mps-", dir=base)
        self.log = self.pipe + "-log"
        os.makedirs(self.log, exist_ok=True)
        self.env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.pipe, CUDA_MPS_LOG_DIRECTORY=self.log)
        r = sh("nvidia-cuda-mps-control -d", env=self.env)
        if r.returncode != 0:
            sys.exit(f"stress_sync: cannot start MPS: {r.stdout}{r.stderr}")
        time.sleep(0.5)

    def stop(self):
        sh("echo quit -t 10 | nvidia-cuda-mps-control", env=self.env, timeout=120)
        shutil.rmtree(self.pipe, ignore_errors=True)
        shutil.rmtree(self.log, ignore_errors=True)


def diagnose(p, out_dir, tag):
    """Stacks of every rank of a hung launch, and the GPU's view."""
    path = os.path.join(out_dir, f"hang-{tag}.txt")
    with open(path, "w") as f:
        f.write(sh("nvidia-smi").stdout)
        pids = sh(f"pgrep -P {p.pid}").stdout.split()
        for pid in pids:
            f.write(f"\n==== rank process {pid}\n")
            dbg = shutil.which("gdb") or shutil.which("cuda-gdb")
            if dbg:
                r = sh(f"{dbg} -p {pid} -batch -ex 'thread apply all bt 20'", timeout=90)
                f.write((r.stdout + r.stderr)[-30000:])
            else:
                f.write(open(f"/proc/{pid}/status").read() if os.path.exists(f"/proc/{pid}/status") else "")
    return path


def launch(a, binary, gmis, env, repeat, tag):
    cmd = [a.mpiexec, "--bind-to", "none", "-n", str(gmis), "--oversubscribe", os.path.join(a.bin, binary),
           f"--gtest_repeat={repeat}", "--gtest_brief=1"]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=a.launch_timeout)
    except subprocess.TimeoutExpired:
        where = diagnose(p, a.out, tag)
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "hang", time.time() - t0, out, where
    took = time.time() - t0
    if p.returncode == 0:
        return "pass", took, out, ""
    if "reduce.timeout_s" in out or "no progress for" in out:
        return "timeout-line", took, out, ""
    return "fail", took, out, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="directory of the test binaries")
    ap.add_argument("--tests", default="test_data_parallel,test_reducers")
    ap.add_argument("--gmis", default="2,4,8")
    ap.add_argument("--modes", default="mps-shares,mps,none")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--per-launch", type=int, default=50)
    ap.add_argument("--launch-timeout", type=float, default=240)
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting new launches after this")
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=".")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    base = os.environ.get("TMPDIR", "/tmp")
    sh("pkill -f nvidia-cuda-mps")  # no stray daemon: 'none' must mean none
    t_start = time.time()
    results = []
    for mode in a.modes.split(","):
        for gmis in [int(g) for g in a.gmis.split(",")]:
            mps = Mps(base) if mode.startswith("mps") else None
            env = dict(mps.env if mps else os.environ)
            env.pop("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", None)
            if mode == "mps-shares":
                env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(100 // gmis)
            for test in a.tests.split(","):
                r = {"label": a.label, "test": test, "gmis": gmis, "mode": mode, "runs": 0, "pass": 0, "fail": 0,
                     "timeout_line": 0, "hang": 0, "seconds": 0.0, "notes": []}
                while r["runs"] < a.runs and time.time() - t_start < a.budget_s:
                    k = min(a.per_launch, a.runs - r["runs"])
                    tag = f"{a.label}{test}-{mode}-{gmis}-{r['runs']}"
                    status, took, out, where = launch(a, test, gmis, env, k, tag)
                    r["seconds"] += took
                    if status == "pass":
                        r["runs"] += k
                        r["pass"] += k
                    else:
                        # The launch's repeats up to the failure passed; count the failing one.
                        done = out.count("[  PASSED  ]") if status == "fail" else 0
                        r["runs"] += max(1, done)
                        r["pass"] += max(0, done - 1)
                        r["timeout_line" if status == "timeout-line" else status] += 1
                        r["notes"].append({"status": status, "after_s": round(took, 1), "stacks": where,
                                           "tail": out[-3000:]})
                    print(f"{a.label}{test:<20} {mode:<11} {gmis} GMIs: {r['runs']:>4} runs, {r['pass']} pass, "
                          f"{r['fail']} fail, {r['timeout_line']} timeout, {r['hang']} hang ({r['seconds']:.0f} s)",
                          flush=True)
                results.append(r)
            if mps:
                mps.stop()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "sync_stress", "results": results}, f, indent=1)
    bad = sum(r["fail"] + r["hang"] + r["timeout_line"] for r in results)
    print(f"stress_sync: {sum(r['runs'] for r in results)} runs, {bad} not passing, {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
