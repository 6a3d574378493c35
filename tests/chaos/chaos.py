#!/usr/bin/env python3
"""Chaos soak: training jobs (PPO, DQN, SAC; 1-4 GMIs) hit by faults at times drawn from a seeded
schedule, each resumed with `--resume latest`, must end exactly where an uninterrupted run ends.

For every job: an uninterrupted run first; then the chaos run, which starts, takes a fault,
checks how the job ended against the failure table (src/checkpoint/README.md: exit status and
message), checks that no process is left, and resumes, until it has taken its share of faults;
a last resume runs to the end.  Then metrics.csv (its learning columns: every iteration once, none
lost or repeated) and the final checkpoint (every dataset) must equal the uninterrupted run's bit
for bit.  Faults, each at an iteration a few ahead of the newest checkpoint, on a random GMI:

  kill9         the driver sends SIGKILL to a GMI once the run reaches that iteration
  kill          GMI_DRL_FAULT=kill@N:R (the GMI kills itself before iteration N)
  sigterm       the driver sends SIGTERM to every GMI (a stop: checkpoint, exit 0)
  sigusr1       the same with SIGUSR1 (Slurm's warning before the time limit)
  hang          GMI_DRL_FAULT=hang@N:R: exit 3 naming the rank (1 GMI: the watchdog, exit 4)
  hang-kernel   GMI_DRL_FAULT=hang-kernel@N:R: the same
  nan           GMI_DRL_FAULT=nan@N:R with train.max_nonfinite_updates 1: exit 2 at iteration N
  kill-write    GMI_DRL_FAULT=kill-in-checkpoint@N:R: a .partial file, removed by the resume
  truncate      after a fault, the newest checkpoint cut to half: the resume skips it
  disk-full     the run directory is on a small tmpfs (root only; else this kind is left out),
                filled to less than a checkpoint once the run reaches N: exit 2 before the write
                (or 1 when the write itself ran out, or 4 when parallel HDF5 stalled in it and the
                watchdog ended the job), the older checkpoints intact; freed before the resume

  chaos.py --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR [--seed S] [--faults N]
           [--jobs ppo,dqn,sac] [--max-gmis G] [--minutes M] [--set KEY=VALUE ...] [--run-timeout S]

--faults are spread over the jobs of one round; with --minutes the rounds repeat (each job with a
new GMI count from 1..--max-gmis) while another round's job still fits in the time (a GPU soak:
`--max-gmis 8 --set gmi.backend=mps`).  --set goes to every run, straight or chaos.  At the end no
MPS daemon may be left (15 s after the last job) that was not running at the start.  A run that
outlives --run-timeout (120 s; the uninterrupted run twice that) is a hang: the driver prints its
processes (state, kernel wait channel) and the end of its output, and fails.

Prints every fault and its outcome, then `N faults injected, N survived (seed S)`.  Exit 0 when
every fault was survived and every job ended equal to its uninterrupted run.
"""
import argparse
import errno
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import numpy as np  # noqa: E402

from harness import ckpt, datasets, env_for, learning_columns  # noqa: E402

TIMEOUT = 3  # reduce.timeout_s
STALL = 3  # train.stall_timeout_s with one GMI (nobody waits for it)
STALL_MANY = 10  # with several: above the reduction's timeout and census (hangs end with exit 3)
COMMON = ("train:\n  total_env_steps: {steps}\n  log_interval: 1\n  max_nonfinite_updates: 1\n{stall}"
          "checkpoint:\n  interval: 1\n  keep: 3\nreduce:\n  timeout_s: {timeout}\n")
JOBS = {
    # name: (config body, env steps per iteration per GMI)
    "ppo": ("env: {name: CartPole-v1, num_envs: 4}\npolicy: {actor_hidden: [16], critic_hidden: [16]}\n"
            "ppo: {num_steps: 16, num_minibatches: 2, update_epochs: 2, normalize_obs: true}\n", 64),
    "dqn": ("algo: dqn\nenv: {name: CartPole-v1, num_envs: 2}\npolicy: {q_hidden: [16, 16]}\n"
            "replay: {capacity: 400}\ndqn: {num_steps: 16, learning_starts: 16, train_frequency: 2, "
            "target_network_frequency: 8, batch_size: 8}\n", 32),
    "sac": ("algo: sac\nenv: {name: Pendulum-v1, num_envs: 2}\npolicy: {actor_hidden: [16], q_hidden: [16, 16]}\n"
            "replay: {capacity: 400}\nsac: {num_steps: 8, learning_starts: 16, batch_size: 8}\n", 16),
}
ITERS = 40
KINDS = ["kill9", "kill", "sigterm", "sigusr1", "hang", "hang-kernel", "nan", "kill-write", "truncate", "disk-full"]


class Failed(Exception):
    pass


def newest_iteration(run_dir):
    d = os.path.join(run_dir, "checkpoints")
    its = [int(m.group(1)) for f in (os.listdir(d) if os.path.isdir(d) else [])
           if (m := re.fullmatch(r"ckpt-(\d{9})\.h5", f))]
    return max(its, default=0)


def metrics_rows(run_dir):
    try:
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            return max(0, sum(1 for _ in f) - 1)
    except OSError:
        return 0


def rank_pids(p):
    out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout
    return sorted(int(x) for x in out.split())


def unmount(m, mounts):
    """Unmounts a job's tmpfs (lazily when a process killed a moment ago still holds a file there)."""
    if not m or m not in mounts:
        return
    if subprocess.run(["umount", m], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", m], capture_output=True)
    mounts.remove(m)


def left_running(tag):
    return subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split()


class Job:
    def __init__(self, a, name, gmis, rng, tmpfs, label=None):
        self.a, self.gmis, self.rng = a, gmis, rng
        self.name = label or name  # its files' names (a job of a later round: name and round)
        body, per_iter = JOBS[name]
        stall = f"  stall_timeout_s: {STALL if gmis == 1 else STALL_MANY}\n"
        self.cfg = os.path.join(a.workdir, f"{self.name}.yaml")
        with open(self.cfg, "w") as f:
            f.write(body + COMMON.format(steps=ITERS * per_iter * gmis, stall=stall, timeout=TIMEOUT))
        self.straight = os.path.join(a.workdir, f"{self.name}-straight")
        self.tmpfs = tmpfs
        base = tmpfs or a.workdir
        self.run_dir = os.path.join(base, f"{self.name}-chaos")
        self.filler = os.path.join(base, "filler")

    def launch(self):
        sets = [x for kv in self.a.set for x in ("--set", kv)]
        return ([self.a.mpiexec, "-n", str(self.gmis), "--oversubscribe", "--bind-to", "none", self.a.gmi]
                if self.gmis > 1 else [self.a.gmi]) + sets

    def cmd(self, fresh):
        return self.launch() + (["--config", self.cfg, "--run-dir", self.run_dir] if fresh else
                                ["--resume", "latest", "--run-dir", self.run_dir])

    def spawn(self, cmd, env, log_name):
        """The run in a session of its own, its output into a log file of the work directory."""
        log = open(os.path.join(self.a.workdir, log_name), "w+")
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=env_for(env),
                             start_new_session=True)
        return p, log

    def run_straight(self):
        p, log = self.spawn(self.launch() + ["--config", self.cfg, "--run-dir", self.straight], None,
                            f"{self.name}-straight.log")
        rc, out = self.finish(p, log, timeout=2 * self.a.run_timeout, what="the uninterrupted run")
        if rc != 0:
            raise Failed(f"{self.name}: the uninterrupted run failed ({rc}):\n{out}")

    def start(self, fault_env=None):
        # Every checkpoint write of the chaos run takes 0.1 s more (GMI_DRL_FAULT slow-checkpoint),
        # so that the driver's signals and the full disk land while the run is still going.
        fault = ",".join(x for x in ((fault_env or {}).get("GMI_DRL_FAULT", ""), "slow-checkpoint@0.1") if x)
        fault_env = {"GMI_DRL_FAULT": fault}
        fresh = not os.path.isdir(os.path.join(self.run_dir, "checkpoints"))
        return self.spawn(self.cmd(fresh), fault_env, f"{self.name}-{time.time_ns()}.log")

    def finish(self, p, log, timeout=None, what="the run"):
        timeout = timeout or self.a.run_timeout
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.hung(p, log, f"{what} did not end within {timeout} s (a hang)")
        log.flush()
        log.seek(0)
        out = log.read()
        log.close()
        return p.returncode, out

    def hung(self, p, log, why):
        """Raises Failed with what a hang left to see: the processes and the run's last output."""
        procs = subprocess.run(["ps", "-o", "pid,stat,etime,wchan:24,args", "--forest", "-g", str(p.pid)],
                               capture_output=True, text=True).stdout
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        log.flush()
        log.seek(0)
        tail = "\n".join(log.read().splitlines()[-40:])
        log.close()
        raise Failed(f"{self.name}: {why}; its processes then:\n{procs}its output's end:\n{tail}")

    def wait_checkpoint(self, p, it, log=None, timeout=None):
        """Until the checkpoint of iteration `it` is complete; False when the run ended first."""
        timeout = timeout or self.a.run_timeout
        t0 = time.time()
        while time.time() - t0 < timeout:
            if newest_iteration(self.run_dir) >= it:
                return True
            if p.poll() is not None:
                return False
            time.sleep(0.02)
        self.hung(p, log, f"the checkpoint of iteration {it} not written within {timeout} s")

    def fault(self, kind):
        """One faulted run; returns (injected, description).  Raises Failed when the job did not
        end as the failure table says."""
        cur = newest_iteration(self.run_dir)
        at = cur + self.rng.randint(2, 4)
        rank = self.rng.randrange(self.gmis)
        env = {}
        if kind in ("kill", "hang", "hang-kernel", "nan"):
            env = {"GMI_DRL_FAULT": f"{kind}@{at}:{rank}"}
        elif kind == "kill-write":
            env = {"GMI_DRL_FAULT": f"kill-in-checkpoint@{at}:{rank}"}
        p, log = self.start(env)
        injected = True
        if kind in ("kill9", "sigterm", "sigusr1", "disk-full"):
            if self.wait_checkpoint(p, at - 1, log):
                if kind == "disk-full":
                    st = os.statvfs(self.run_dir)
                    sizes = [os.path.getsize(os.path.join(self.run_dir, "checkpoints", f))
                             for f in os.listdir(os.path.join(self.run_dir, "checkpoints")) if f.endswith(".h5")]
                    leave = max(sizes, default=0) // 2
                    fill = max(0, st.f_bavail * st.f_frsize - leave)
                    try:
                        with open(self.filler, "wb") as f:
                            f.truncate(fill)  # a sparse file does not take the room: write it
                            f.seek(0)
                            chunk = b"\0" * (1 << 20)
                            left = fill
                            while left > 0:
                                n = f.write(chunk[:min(left, len(chunk))])
                                left -= n
                    except OSError as e:  # the running job wrote too (its logs): the disk is full sooner
                        if e.errno != errno.ENOSPC:
                            raise
                else:
                    pids = rank_pids(p) if self.gmis > 1 else [p.pid]
                    if kind == "kill9":
                        os.kill(pids[rank % len(pids)], signal.SIGKILL)
                    else:
                        for pid in pids:
                            os.kill(pid, signal.SIGTERM if kind == "sigterm" else signal.SIGUSR1)
            else:
                injected = False
        rc, out = self.finish(p, log)
        if os.path.exists(self.filler):
            os.remove(self.filler)
        if rc == 0 and metrics_rows(self.run_dir) >= ITERS and kind not in ("sigterm", "sigusr1"):
            injected = False  # the run ended before the fault's iteration
        if not injected:
            return False, f"{kind}@{at}: not reached (the run ended first)"
        time.sleep(0.3)
        left = left_running(self.run_dir)
        if left:
            raise Failed(f"{self.name} {kind}: processes left running: {left}\n{out}")
        errors = [l for l in out.split("\n") if l.startswith("gmi_drl: error:") or l.startswith("gmi_drl: fatal:")]
        first = errors[0] if errors else ""
        expect = {
            "kill9": (lambda: rc != 0, "a nonzero status"),
            "kill": (lambda: rc != 0, "a nonzero status"),
            "kill-write": (lambda: rc != 0, "a nonzero status"),
            "sigterm": (lambda: rc == 0 and re.search(r"SIGTERM received: stopped after iteration \d+ with checkpoint", out),
                        "status 0 and 'SIGTERM received: stopped after iteration N with checkpoint'"),
            "sigusr1": (lambda: rc == 0 and re.search(r"SIGUSR1 received: stopped after iteration \d+ with checkpoint", out),
                        "status 0 and 'SIGUSR1 received: stopped after iteration N with checkpoint'"),
            "nan": (lambda: rc == 2 and re.search(rf"training stopped at iteration {at}: .*NaN/Inf", first),
                    f"status 2 and 'training stopped at iteration {at}'"),
            # Filled before the write: exit 2.  During it: the write fails (exit 1), or parallel
            # HDF5 stalls in its collective clean-up and the watchdog ends the job (exit 4).
            "disk-full": (lambda: (rc == 2 and "the disk is full" in first) or (rc == 1 and "writing " in first and
                                                                             "failed" in first) or
                          (rc == 4 and "no progress" in first),
                          "status 2 and 'the disk is full' (or 1 and 'writing ... failed', or 4 and the watchdog)"),
        }
        if kind in ("hang", "hang-kernel"):
            if self.gmis == 1:
                expect[kind] = (lambda: rc == 4 and re.search(rf"no progress .*rank 0 .* at iteration {at}", first),
                                f"status 4 and the watchdog's line for iteration {at}")
            else:
                expect[kind] = (lambda: rc == 3 and re.search(rf"rank {rank} did not answer", first),
                                f"status 3 and 'rank {rank} did not answer'")
        ok, want = expect[kind]
        if not ok():
            raise Failed(f"{self.name} {kind}@{at}:{rank}: expected {want}, got status {rc}: {first}\n{out[-3000:]}")
        if kind == "disk-full":
            # The older checkpoints are intact.
            n = newest_iteration(self.run_dir)
            v = subprocess.run([self.a.gmi, "checkpoint", "verify", ckpt(self.run_dir, n)], capture_output=True, text=True)
            if n < at - 1 or v.returncode != 0:
                raise Failed(f"{self.name} disk-full: the newest checkpoint (iteration {n}) does not verify: {v.stdout}{v.stderr}")
        return True, f"{kind}@{at}:{rank} -> status {rc}{': ' + first[:110] if first else ''}"

    def truncate_newest(self):
        n = newest_iteration(self.run_dir)
        if n <= 1:
            return False, "truncate: too few checkpoints"
        path = ckpt(self.run_dir, n)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        return True, f"truncate ckpt-{n:09d}.h5"

    def resume_to_end(self):
        p, log = self.start()
        rc, out = self.finish(p, log, timeout=600)
        if rc != 0:
            raise Failed(f"{self.name}: the last resume failed ({rc}):\n{out[-3000:]}")
        return out

    def compare(self):
        if learning_columns(self.straight) != learning_columns(self.run_dir):
            a, b = learning_columns(self.straight), learning_columns(self.run_dir)
            its = [r.get("iteration") for r in b]
            raise Failed(f"{self.name}: metrics.csv differs from the uninterrupted run's ({len(a)} rows there, {len(b)} "
                         f"here; iterations here: {its})")
        x, y = datasets(ckpt(self.straight, ITERS)), datasets(ckpt(self.run_dir, ITERS))
        if sorted(x) != sorted(y):
            raise Failed(f"{self.name}: the final checkpoints hold different datasets")
        for k in x:
            if not np.array_equal(x[k], y[k], equal_nan=True):
                raise Failed(f"{self.name}: {k} differs from the uninterrupted run's final checkpoint")


def mount_tmpfs(path, mib):
    os.makedirs(path, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", path],
                          capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--faults", type=int, default=33, help="faults over all jobs")
    ap.add_argument("--jobs", default="ppo,dqn,sac")
    ap.add_argument("--max-gmis", type=int, default=4, help="GMIs of a job: 1..this")
    ap.add_argument("--minutes", type=float, default=0, help="repeat rounds of jobs for about this long")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for every run (repeatable)")
    ap.add_argument("--run-timeout", type=float, default=120,
                    help="seconds a run may take (the uninterrupted one twice that) before it counts as hung")
    a = ap.parse_args()
    started = time.time()
    if a.max_gmis < 1:
        print(f"chaos: error: --max-gmis: {a.max_gmis} (expected 1 or more)")
        return 2
    a.gmi = os.path.abspath(a.gmi)
    seed = a.seed if a.seed is not None else int(time.time()) % 100000
    rng = random.Random(seed)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    names = a.jobs.split(",")
    for n in names:
        if n not in JOBS:
            print(f"chaos: error: --jobs: unknown job '{n}' (expected {', '.join(JOBS)})")
            return 2
    injected = survived = 0
    faulting = False  # a Failed raised inside a fault's run counts that fault as injected
    mounts = []
    daemons = set(left_running("nvidia-cuda-mps"))
    deadline = time.time() + 60 * a.minutes if a.minutes else None
    took = []  # seconds per job
    try:
        for rnd in range(1, 1000000):
            for i, name in enumerate(names):
                if deadline and took and time.time() + sum(took) / len(took) > deadline:
                    break
                t0 = time.time()
                label = name if rnd == 1 else f"{name}{rnd}"
                gmis = rng.choice(range(1, a.max_gmis + 1))
                tmpfs = os.path.join(a.workdir, f"{label}-disk")
                if mount_tmpfs(tmpfs, 64):
                    mounts.append(tmpfs)
                else:
                    tmpfs = None
                job = Job(a, name, gmis, rng, tmpfs, label)
                kinds = [k for k in KINDS if k != "disk-full" or tmpfs]
                print(f"== {label}, {gmis} GMI(s), {ITERS} iterations{'' if tmpfs else ' (no tmpfs: disk-full left out)'}",
                      flush=True)
                job.run_straight()
                quota = a.faults // len(names) + (1 if i < a.faults % len(names) else 0)
                done = 0
                while done < quota and newest_iteration(job.run_dir) < ITERS - 5:
                    kind = rng.choice(kinds)
                    if kind == "truncate":
                        if not os.path.isdir(os.path.join(job.run_dir, "checkpoints")):
                            continue
                        ok, what = job.truncate_newest()
                    else:
                        faulting = True
                        ok, what = job.fault(kind)
                        faulting = False
                    print(f"  {what}", flush=True)
                    if ok:
                        done += 1
                        injected += 1
                        survived += 1  # job.fault raised otherwise
                out = job.resume_to_end()
                if "skipping checkpoint" in out:
                    print("  the last resume skipped a damaged checkpoint")
                job.compare()
                took.append(time.time() - t0)
                print(f"  {label}: {done} fault(s), final state equal to the uninterrupted run's ({took[-1]:.0f} s)",
                      flush=True)
                if deadline:  # a long soak keeps no finished job's files
                    unmount(tmpfs, mounts)
                    for d in (job.straight, job.run_dir):
                        shutil.rmtree(d, ignore_errors=True)
            else:
                if deadline and time.time() < deadline:
                    continue
            break
        # A job's daemon is stopped by a watcher once the job's processes are gone (a `quit` that
        # waits up to 10 s for the server's clients): give it that long.
        for _ in range(30):
            left = sorted(set(left_running("nvidia-cuda-mps")) - daemons)
            if not left:
                break
            time.sleep(0.5)
        if left:
            raise Failed(f"MPS daemon process(es) left running after the jobs: {', '.join(left)}")
    except Failed as e:
        print(f"chaos: FAILED: {e}")
        print(f"{injected + faulting} faults injected, {survived} survived (seed {seed}); rerun with --seed {seed}")
        return 1
    finally:
        for m in list(mounts):
            unmount(m, mounts)
    minutes = f" in {(time.time() - started) / 60:.1f} min" if a.minutes else ""
    print(f"{injected} faults injected, {survived} survived{minutes} (seed {seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
