#!/usr/bin/env python3
"""jobs/scaling_study.sh --local (no Slurm): the elements run here one after another over GPU
counts (one "GPU" on a host build), --set and --cores-per-gpu reach every element (the config's
num_steps, env.threads = N / GMIs per GPU, each run confined to N x GPUs CPUs), postprocess/scaling.py
reads the results, and bad options are one error line each.

  check_scaling_local.py --gmi PATH/TO/gmi_drl --workdir DIR
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STUDY = os.path.join(ROOT, "jobs", "scaling_study.sh")


def fail(msg, out=""):
    print("check_scaling_local: " + msg)
    if out:
        print(out)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    w = os.path.abspath(a.workdir)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    env = dict(os.environ, GMI_DRL=os.path.abspath(a.gmi), MPS="off", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    study = os.path.join(w, "s")
    p = subprocess.run([STUDY, study, "--local", "--gpus", "1", "--gmis", "1,2", "--envs-per-gpu", "8",
                        "--iterations", "1", "--warmup", "0", "--set", "ppo.num_steps=16", "--cores-per-gpu", "1"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    out = p.stdout + p.stderr
    if p.returncode != 0 or "2 element(s), 0 failed" not in out:
        fail(f"the study: exit {p.returncode}", out + "".join(open(f).read() for f in glob.glob(study + "/logs/*")))
    files = sorted(glob.glob(os.path.join(study, "results", "*.json")))
    names = [os.path.basename(f) for f in files]
    if names != ["n1_gpus1_g1_bench_cartpole_ppo_s1.json", "n1_gpus1_g2_bench_cartpole_ppo_s1.json"]:
        fail(f"results: {names}")
    for f in files:
        d = json.load(open(f))
        if d["num_steps"] != 16 or d["gpus"] != 1:
            fail(f"{f}: num_steps {d['num_steps']}, gpus {d['gpus']} (expected the --set value 16, 1 GPU)")
    logs = "".join(open(f).read() for f in sorted(glob.glob(study + "/logs/*.log")))
    if logs.count("confined to CPUs 0") != 2:
        fail("--cores-per-gpu 1: every run confined to CPU 0", logs)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "postprocess", "scaling.py"), study],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    if p.returncode != 0 or p.stdout.count("| bench_cartpole_ppo | 8 |") != 2:
        fail("scaling.py on the study", p.stdout + p.stderr)
    # Bad options: one line, status 2, nothing run.
    have = int(os.cpu_count() or 1)
    cases = [(["--gpus", "64"], "--gpus: 64 GPU(s) asked for"),
             (["--emulate-nodes"], "--local runs here"),
             (["--set", "ppo.num_steps"], "--set: expected KEY=VALUE"),
             (["--cores-per-gpu", str(have + 1)], f"--cores-per-gpu: {have + 1} CPUs needed")]
    for extra, want in cases:
        p = subprocess.run([STUDY, os.path.join(w, "bad"), "--local"] + extra, capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=60)
        if p.returncode != 2 or want not in p.stderr or len(p.stderr.strip().split("\n")) != 1:
            fail(f"{extra}: expected status 2 and one line with '{want}', got {p.returncode}", p.stdout + p.stderr)
    print("check_scaling_local: ok")


if __name__ == "__main__":
    main()
