#!/usr/bin/env python3
"""The job scripts against a real single-node Slurm (tests/slurm/local-slurm.sh; needs root and
Debian's slurm-wlm and munge, else the test is skipped with status 77):

  1. `sbatch jobs/ppo_dgx.sh CONFIG 2` with MPS on (a stand-in nvidia-cuda-mps-control,
     tests/cli/fake-mps): the job completes, status done, metrics, a checkpoint that verifies,
     one MPS daemon started and stopped by the script and used by gmi_drl (srun --mpi=pmix)
  2. a chain: --time=1 with SBATCH_SIGNAL=B:USR1@45 under mpirun: each job is signalled,
     checkpoints, resubmits itself; the chain finishes training with every iteration in
     metrics.csv once
  3. srun without PMI fails instead of starting N singleton runs; a missing CONFIG: one line
  4. jobs/scaling_study.sh on 1 and 2 (emulated) nodes x 1 and 2 GMIs per GPU, then
     postprocess/scaling.py on it: the table and the plots
  5. a stuck GMI (GMI_DRL_FAULT=hang@6:1): the job ends with exit 3 and resubmits itself
     (GMI_MAX_RETRIES 1) without the fault; the retry resumes from the newest checkpoint and
     finishes with every iteration once; with GMI_MAX_RETRIES 0 the job says so and stops
  6. `sbatch jobs/sweep.sh CONFIG 2 -- --seeds 1..4` (srun, 2 GMIs): USR1 to the job while its
     runs train: every running run checkpoints and stops, the job resubmits itself, and the next
     job's `gmi_drl sweep --resume` finishes all 4 runs, each with every iteration once

  check_slurm.py --gmi PATH/TO/gmi_drl --workdir DIR
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CFG = ("env:\n  name: CartPole-v1\n  num_envs: 4\nppo:\n  num_steps: 16\n  num_minibatches: 2\n"
       "train:\n  total_env_steps: {steps}\n  log_interval: 100\n")


def fail(msg, out=""):
    print("check_slurm: " + msg)
    if out:
        print(out)
    sys.exit(1)


def sh(args, env, cwd, timeout=600, check=True):
    p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    if check and p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}", p.stdout + p.stderr)
    return p


def job_log(workdir, job):
    path = os.path.join(workdir, f"gmi_drl-{job}.out")
    return open(path).read() if os.path.exists(path) else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("slurmctld") or not shutil.which("munged"):
        print("check_slurm: skipped (needs root, slurm-wlm and munge: cmake/deps-debian.sh --test)")
        sys.exit(77)
    gmi = os.path.abspath(a.gmi)
    w = os.path.abspath(a.workdir)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    start = sh([os.path.join(ROOT, "tests", "slurm", "local-slurm.sh"), "start"], dict(os.environ), w, timeout=120)
    conf = re.search(r"export SLURM_CONF=(\S+)", start.stdout).group(1)
    env = dict(os.environ, SLURM_CONF=conf, GMI_DRL=gmi, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    for k in ["SBATCH_SIGNAL", "RUN_DIR", "GMI_DRL_RESUBMIT_COUNT", "GMI_DRL_RETRY_COUNT", "GMI_MAX_RETRIES", "LAUNCHER",
              "MPS", "GMI_DRL_FAULT"]:
        env.pop(k, None)
    ppo = os.path.join(ROOT, "jobs", "ppo_dgx.sh")
    small = os.path.join(w, "small.yaml")
    open(small, "w").write(CFG.format(steps=2048))

    # 1. one job, MPS started and stopped by the script, srun
    mps_log = os.path.join(w, "mps.log")
    e1 = dict(env, PATH=os.path.join(ROOT, "tests", "cli", "fake-mps") + os.pathsep + env["PATH"],
              GMI_FAKE_MPS_LOG=mps_log, MPS="on", RUN_DIR=os.path.join(w, "run1"))
    p = sh(["sbatch", "--parsable", "--wait", ppo, small, "2"], e1, w, check=False)
    job = p.stdout.strip().split(";")[0]
    out = job_log(w, job)
    if p.returncode != 0:
        fail(f"job {job} failed ({p.returncode})", p.stderr + out)
    for pat in [r"ppo_dgx.sh: job \d+ \(resubmission 0, retry 0\): 1 node\(s\) x 1 GPU\(s\) x 2 GMI\(s\) = 2 GMIs.*srun; MPS on",
                r"2 GMI\(s\) on 1 GPU\(s\) of 1 node\(s\), backend mps", r"done: 2048 env steps",
                r"run status: done", r"stopping MPS on 1 node"]:
        if not re.search(pat, out):
            fail(f"job output lacks /{pat}/", out)
    if open(os.path.join(w, "run1", "status")).read() != "done\n":
        fail("status is not done", out)
    rows = list(csv.DictReader(open(os.path.join(w, "run1", "metrics.csv"))))
    if len(rows) != 16:
        fail(f"metrics.csv has {len(rows)} rows, expected 16", out)
    sh([gmi, "checkpoint", "verify", os.path.join(w, "run1", "checkpoints", "ckpt-000000016.h5")], env, w)
    got = open(mps_log).read().split("\n")[:-1]
    if len(got) != 2 or got[0] != f"start /tmp/gmi_drl-mps-{job}" or not got[1].startswith("quit "):
        fail(f"expected the script to start and stop one MPS daemon, got {got}", out)
    print(f"1. job {job}: done, checkpoint verified, MPS started and stopped by the script")

    # 2. a chain of jobs: signalled before the time limit, checkpoint, resubmission
    # Long enough for ~70 s of training on this machine (job 1's iteration time), so that the
    # signals (Slurm checks time limits every 30 s) stop it at least once.
    t_it = sorted(float(r["time_iteration_s"]) for r in rows)[len(rows) // 2]
    iters = max(200, min(20000, int(70 / max(t_it, 1e-4))))
    chain = os.path.join(w, "chain")
    big = os.path.join(w, "big.yaml")
    open(big, "w").write(CFG.format(steps=iters * 128))
    e2 = dict(env, SBATCH_SIGNAL="B:USR1@45", RUN_DIR=chain, LAUNCHER="mpirun", MPS="off")
    t0 = time.time()
    first = sh(["sbatch", "--parsable", "--time=1", ppo, big, "2"], e2, w).stdout.strip().split(";")[0]
    status = ""
    while time.time() - t0 < 600:
        time.sleep(3)
        status = open(os.path.join(chain, "status")).read() if os.path.exists(os.path.join(chain, "status")) else ""
        queue = sh(["squeue", "-h", "-o", "%i"], env, w).stdout.split()
        if status == "done\n" and not queue:
            break
    logs = "".join(job_log(w, j) for j in range(int(first), int(first) + 50))
    if status != "done\n":
        fail(f"the chain did not finish within 600 s (status {status!r})", logs)
    jobs = re.findall(r"resubmitted as job (\d+)", logs)
    resumed = re.findall(r"resumed from \S+ckpt-(\d+)\.h5", logs)
    if not jobs or len(resumed) != len(jobs):
        fail(f"expected at least one resubmission, each resuming: {jobs} / {resumed}", logs)
    its = [int(r["iteration"]) for r in csv.DictReader(open(os.path.join(chain, "metrics.csv")))]
    if its != list(range(1, iters + 1)):
        fail(f"metrics.csv iterations are not 1..{iters} once each", logs)
    print(f"2. chain of {len(jobs) + 1} jobs finished training in {time.time() - t0:.0f} s "
          f"(resumed at iterations {', '.join(str(int(r)) for r in resumed)})")

    # 3. srun without PMI; a missing config
    p = sh(["srun", "-n", "2", "--mpi=none", gmi, "--config", small, "--run-dir", os.path.join(w, "nopmi")],
           env, w, check=False)
    # Open MPI refuses to start as N singletons under srun without PMI (it would train N times).
    if p.returncode == 0 or "PMI" not in p.stdout + p.stderr or os.path.exists(os.path.join(w, "nopmi", "metrics.csv")):
        fail("srun --mpi=none: expected Open MPI's PMI error and no run", p.stdout + p.stderr)
    p = sh(["sbatch", "--parsable", "--wait", ppo, os.path.join(w, "missing.yaml")], env, w, check=False)
    out = job_log(w, p.stdout.strip().split(";")[0])
    if p.returncode == 0 or not re.search(r"^ppo_dgx.sh: error: CONFIG: \S+missing.yaml does not exist$", out, re.M):
        fail("a missing CONFIG: expected one error line", out)
    print("3. srun without PMI fails; a missing config: one error line")

    # 4. a scaling study and its table
    study = os.path.join(w, "study")
    sh([os.path.join(ROOT, "jobs", "scaling_study.sh"), study, "--nodes", "1,2", "--gmis", "1,2", "--envs-per-gpu", "32",
        "--iterations", "2", "--warmup", "1", "--configs", os.path.join(ROOT, "config", "bench_cartpole_ppo.yaml"),
        "--emulate-nodes", "--wait", "--", "--time=10"], env, w, timeout=600)
    results = sorted(os.listdir(os.path.join(study, "results")))
    if results != [f"n{n}_g{g}_bench_cartpole_ppo_s1.json" for n in (1, 2) for g in (1, 2)]:
        fail(f"study results: {results}")
    p = sh([sys.executable, os.path.join(ROOT, "postprocess", "scaling.py"), study], env, w)
    rows = [l for l in p.stdout.splitlines() if l.startswith("| bench_cartpole_ppo")]
    if len(rows) != 4 or not re.search(r"\| 32 \| 2 \| 2 \| 2 \| 4 \|", p.stdout):
        fail("scaling.py table", p.stdout)
    for png in ["throughput_vs_gmis.png", "efficiency_vs_nodes.png", "phase_times.png"]:
        if os.path.getsize(os.path.join(study, png)) < 1000:
            fail(f"{png} missing or empty")
    print("4. scaling study: 4 elements, table and plots")

    # 5. a stuck GMI: exit 3, resubmitted from the newest checkpoint at most GMI_MAX_RETRIES times
    stuck = ["--", "--set", "reduce.timeout_s=3", "--set", "checkpoint.interval=1"]
    for retries in (1, 0):
        d = os.path.join(w, f"retry{retries}")
        e5 = dict(env, RUN_DIR=d, LAUNCHER="mpirun", MPS="off", GMI_DRL_FAULT="hang@6:1", GMI_MAX_RETRIES=str(retries))
        t0 = time.time()
        first = sh(["sbatch", "--parsable", ppo, small, "2"] + stuck, e5, w).stdout.strip().split(";")[0]
        while time.time() - t0 < 240:
            time.sleep(2)
            if not sh(["squeue", "-h", "-o", "%i"], env, w).stdout.split():
                break
        logs = "".join(job_log(w, j) for j in range(int(first), int(first) + 5))
        status = open(os.path.join(d, "status")).read() if os.path.exists(os.path.join(d, "status")) else ""
        if not re.search(r"rank 1 did not answer", logs) or "exited with status 3" not in logs:
            fail(f"GMI_MAX_RETRIES={retries}: expected the stuck rank named and exit 3", logs)
        if retries == 1:
            if not re.search(r"exit 3: a wait on other GMIs ran out\): retry 1 of 1, resubmitted as job \d+", logs) or \
                    not re.search(r"resumed from \S+ckpt-00000000[45]\.h5", logs) or status != "done\n":
                fail("expected a retry that resumes from the newest checkpoint and finishes", logs)
            its = [int(r["iteration"]) for r in csv.DictReader(open(os.path.join(d, "metrics.csv")))]
            if its != list(range(1, 17)):
                fail(f"metrics.csv iterations after the retry: {its}", logs)
        elif "not resubmitting: GMI_MAX_RETRIES=0 reached" not in logs or "resubmitted as job" in logs:
            fail("GMI_MAX_RETRIES=0: expected no resubmission, said so", logs)
    print(f"5. a stuck GMI: exit 3, one retry from the newest checkpoint finished the run; with no retries left it stops")

    # 6. a sweep: signalled, stopped with checkpoints, resubmitted, finished by --resume
    d = os.path.join(w, "sweep")
    runs = os.path.join(w, "sweep_runs.yaml")
    open(runs, "w").write(CFG.format(steps=4096) + "checkpoint:\n  interval: 4\n")
    e6 = dict(env, SWEEP_DIR=d, MPS="off", GMI_DRL_FAULT="slow-checkpoint@0.2")
    t0 = time.time()
    first = sh(["sbatch", "--parsable", os.path.join(ROOT, "jobs", "sweep.sh"), runs, "2", "--", "--seeds", "1..4"],
               e6, w).stdout.strip().split(";")[0]
    while time.time() - t0 < 120 and not os.path.exists(os.path.join(d, "seed1", "checkpoints")):
        time.sleep(0.5)
    time.sleep(1)
    sh(["scancel", "--signal=USR1", "--batch", first], env, w)
    while time.time() - t0 < 400:
        time.sleep(2)
        if not sh(["squeue", "-h", "-o", "%i"], env, w).stdout.split():
            break
    logs = "".join(open(os.path.join(w, f)).read() for f in sorted(os.listdir(w)) if f.startswith("gmi_sweep-"))
    status = open(os.path.join(d, "status")).read() if os.path.exists(os.path.join(d, "status")) else ""
    if not re.search(r"sweep.sh: job \d+ \(resubmission 0\): 1 node\(s\) x 1 GPU\(s\) x 2 GMI\(s\) = 2 GMIs", logs) or \
            "sweep status: stopped SIGUSR1" not in logs or not re.search(r"resubmitted as job \d+", logs) or status != "done\n":
        fail(f"the sweep chain: expected a stop, a resubmission and a finished sweep (status {status!r})", logs)
    sweep_rows = list(csv.DictReader(open(os.path.join(d, "sweep.csv"))))
    if [r["status"] for r in sweep_rows] != ["done"] * 4:
        fail(f"sweep.csv: {[r['status'] for r in sweep_rows]}", logs)
    for s in range(1, 5):
        its = [int(r["iteration"]) for r in csv.DictReader(open(os.path.join(d, f"seed{s}", "metrics.csv")))]
        if its != list(range(1, 65)):
            fail(f"seed{s}: metrics.csv iterations are not 1..64 once each", logs)
    print(f"6. a sweep of 4 runs on 2 GMIs: stopped by USR1 with checkpoints, resubmitted, finished by --resume")
    sh([os.path.join(ROOT, "tests", "slurm", "local-slurm.sh"), "stop"], env, w, check=False)
    print("check_slurm: ok")


if __name__ == "__main__":
    main()
