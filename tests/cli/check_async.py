#!/usr/bin/env python3
"""Training under mapping.template async (src/gmi/async_training.hpp), under mpiexec.

Modes:
  run     the role table and the async line; metrics.csv has one row per iteration and the
          policy_lag column: 0 for the first iteration's rollout (made before it), 1 after; a run
          stopped at iteration 10 resumes from its checkpoint (the serving GMIs' envs restored)
          to iteration 20 with every iteration once, lag 0 again on the first resumed iteration;
          SIGTERM stops a run with a rollout in flight (channels.max_in_flight 1), writes its
          checkpoint and exits within seconds, and the run resumes from it; a checkpoint resumes on another layout (more serving GMIs: new
          episodes, the policy kept); two trainers reduce among themselves (-n 6).
  errors  one line naming the key for what async cannot train: dqn, a multi-agent game, one GMI;
          and for bench, which does not measure async.
  learn   APPO under async: CartPole >= 475 within PPO's budget (-n 3, 2 serving GMIs x 8 envs),
          Pendulum >= -250 within twice pendulum_ppo.yaml's (-n 4, 3 serving GMIs); PPO CartPole
          >= 475 (-n 3).
"""
import csv
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cfg(name):
    return os.path.join(ROOT, "config", name)


run, fail = harness.run_mpi, harness.fail


def rows(run_dir):
    return list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))


def small(run_dir, *sets):
    out = ["--config", cfg("cartpole_appo.yaml"), "--run-dir", run_dir, "--set", "mapping.template=async",
           "--set", "env.num_envs=4", "--set", "ppo.num_steps=32"]
    for s in sets:
        out += ["--set", s]
    return out


def check_rows(d, last, lag_zero_at, what):
    r = rows(d)
    its = [int(x["iteration"]) for x in r]
    if its != list(range(1, last + 1)):
        fail(f"{what}: iterations {its[:5]}..{its[-5:]} (expected 1..{last} once each)")
    lags = {int(x["iteration"]): float(x["policy_lag"]) for x in r}
    for it, lag in lags.items():
        want = 0.0 if it in lag_zero_at else 1.0
        if lag != want:
            fail(f"{what}: policy_lag {lag} at iteration {it} (expected {want})")
    print(f"{what}: iterations 1..{last} once each; policy_lag 0 at {sorted(lag_zero_at)}, 1 elsewhere")


def mode_run(a):
    w = a.workdir
    # Stopped at iteration 10 (its end of training), resumed to 20.
    d = os.path.join(w, "resume")
    p = run(a, 3, small(d, "train.total_env_steps=2560", "checkpoint.interval=5"))
    if not re.search(r" 2     0    0     2  T      0,1", p.stdout) or \
            "1 trainer GMI(s), each learning from the rollouts of 2 serving GMI(s) x 4 envs" not in p.stdout:
        fail("the role table and the async line should be printed", p)
    check_rows(d, 10, {1}, "async on 3 GMIs, 10 iterations")
    p = run(a, 3, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=5120"])
    if "resumed from" not in p.stdout:
        fail("the async run should resume on its own layout", p)
    check_rows(d, 20, {1, 11}, "resumed at iteration 10 to 20")
    # SIGTERM with the next rollout in flight: a checkpoint, a stop, and a resume from it; with one
    # batch in flight per channel (the least the channels allow).
    d = os.path.join(w, "sigterm")
    cmd = harness.mpi_command(a, 3, small(d, "train.total_env_steps=100000000", "checkpoint.interval=0",
                                          "channels.max_in_flight=1"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=harness.env_for())
    t0 = time.time()
    while time.time() - t0 < 60 and not os.path.exists(os.path.join(d, "metrics.csv")):
        time.sleep(0.2)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    t1 = time.time()
    out, err = proc.communicate(timeout=60)
    status = open(os.path.join(d, "status")).read().split()
    if status[:2] != ["stopped", "SIGTERM"]:
        fail(f"SIGTERM: status {status} (expected 'stopped SIGTERM N')")
    stopped = int(status[2])
    took = time.time() - t1
    print(f"SIGTERM: stopped after iteration {stopped} in {took:.1f} s")
    if proc.returncode == 0 or took > 30:
        fail(f"SIGTERM: exit {proc.returncode} after {took:.1f} s (expected a stop within seconds)")
    p = run(a, 3, ["--resume", "latest", "--run-dir", d, "--set", f"train.total_env_steps={(stopped + 3) * 256}"])
    check_rows(d, stopped + 3, {1, stopped + 1}, "resumed after SIGTERM")
    # Another layout: 3 serving GMIs instead of 2 resume the policy with new episodes.
    d = os.path.join(w, "resume")
    p = run(a, 4, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=7680"])
    if "environments re-seeded" not in p.stdout + p.stderr:
        fail("a resume on another layout should say the environments start anew", p)
    # Two trainers, each with two serving GMIs: the trainers' reducer.
    d = os.path.join(w, "two-trainers")
    p = run(a, 6, small(d, "train.total_env_steps=5120", "mapping.trainers_per_gpu=2"))
    if not re.search(r"gradient reduction: .* over 2 GMI\(s\)", p.stdout + p.stderr):
        fail("the trainers should reduce among themselves", p)
    check_rows(d, 10, {1}, "two trainers on 6 GMIs")


def mode_errors(a):
    w = a.workdir
    cases = [
        (3, ["--config", cfg("cartpole_dqn.yaml"), "--set", "mapping.template=async"],
         r"^gmi_drl: error: mapping\.template: async trains ppo and appo \(serving GMIs send whole rollouts\); "
         r"algo is dqn$"),
        (3, ["--config", cfg("tag_gridworld_ppo.yaml"), "--set", "mapping.template=async"],
         r"^gmi_drl: error: mapping\.template: async trains single-agent environments so far; TagGridworld-v0 is a "
         r"multi-agent game \(use dp or e-at\)$"),
        (1, ["--config", cfg("cartpole_appo.yaml"), "--set", "mapping.template=async"],
         r"^gmi_drl: error: mapping\.trainers_per_gpu: 1 \(expected at most 0, half of the 1 GMI\(s\) of GPU 0"),
    ]
    bench = (3, ["bench", "--config", cfg("cartpole_appo.yaml"), "--num-envs", "8", "--set", "mapping.template=async"],
             r"^gmi_drl: error: mapping\.template: async: bench measures dp and e-at; train under async and read the "
             r"samples_per_s column of its metrics\.csv$")
    for i, (n, args, pattern) in enumerate(cases + [bench]):
        if args[0] != "bench":
            args = args + ["--run-dir", os.path.join(w, f"e{i}")]
        p = run(a, n, args, status=2)
        lines = [l for l in p.stderr.splitlines() if l.startswith("gmi_drl: error:")]
        if not lines or not re.search(pattern, lines[0]):
            fail(f"expected one error line matching {pattern!r}", p)
        print(f"error: {lines[0]}")


def mode_learn(a):
    w = a.workdir
    cases = [("appo", 3, cfg("cartpole_appo.yaml"), [], 475),
             ("appo", 4, cfg("pendulum_appo.yaml"), [], -250),
             ("ppo", 3, cfg("cartpole_ppo.yaml"), ["env.num_envs=4"], 475)]
    for algo, n, c, sets, target in cases:
        d = os.path.join(w, f"{algo}-{os.path.basename(c)}")
        args = ["--config", c, "--run-dir", d, "--set", "mapping.template=async"]
        for s in sets:
            args += ["--set", s]
        run(a, n, args, timeout=1800)
        r = rows(d)
        best = max((float(x["episode_return_mean"]) for x in r if x["episode_return_mean"] != "nan"),
                   default=float("-inf"))
        print(f"{algo} {os.path.basename(c)} under async on {n} GMIs: best iteration return {best:.1f} in "
              f"{r[-1]['env_steps']} env steps (target {target})")
        if best < target:
            fail(f"{algo} under async did not reach {target}: best {best:.1f}")


if __name__ == "__main__":
    harness.main("check_async", ["run", "errors", "learn"], globals())
