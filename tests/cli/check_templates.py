#!/usr/bin/env python3
"""Training under mapping.template e-at (src/gmi/split_training.hpp), under mpiexec.

Modes:
  same    a trainer GMI with S simulator GMIs of E envs steps the episodes one GMI with S x E
          envs steps, so the two runs' metrics (timing aside) are identical: PPO, DQN, SAC and
          multi-agent PPO on TagGridworld on -n 3 (2 simulators) against dp on -n 1; PPO with mapping.trainers_per_gpu 2 on -n 6
          against dp on -n 2 (the trainers reduce their gradients among themselves); PPO whose
          minibatches divide the trainer's batch but not one simulator's; a run
          stopped and resumed under e-at repeats the uninterrupted one (SAC, Tag), and so does its
          checkpoint (which has the layout of dp's); the checkpoint resumes under dp on another
          layout and serves under gmi_drl eval (dp unless --set says otherwise).
  errors  one line naming the key for what e-at training cannot do: a serving template,
          a batch that even the trainer's S x E envs cannot split into the minibatches (under dp
          E envs' batch is checked at once),
          env.batch_size, halves of an odd number of simulators, trainers with
          different numbers of simulators, a reduction the trainers' own layout cannot run (the
          trainers' error reaches every GMI).
  halves  Hopper PPO with env.async_halves under e-at on 5 GMIs (the trainer acts for two
          simulators while the other two step) equals dp with 4 x E envs in halves on one GMI.
  learn   the shipped configs reach their targets under e-at: PPO CartPole >= 475 (-n 3), DQN
          CartPole >= 475 (-n 3, one env per simulator), SAC Pendulum >= -250 (-n 4, one env per
          simulator) within the budgets of the dp learning tests.
"""
import csv
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cfg(name):
    return os.path.join(ROOT, "config", name)


run, fail = harness.run_mpi, harness.fail


def same_metrics(a_dir, b_dir, what):
    x, y = harness.learning_columns(a_dir), harness.learning_columns(b_dir)
    if not x or x != y:
        for i, (r, s) in enumerate(zip(x, y)):
            if r != s:
                fail(f"{what}: metrics differ at row {i}: {r} vs {s}")
        fail(f"{what}: {len(x)} vs {len(y)} metrics rows")
    print(f"{what}: {len(x)} iterations identical")


SMALL = {
    "ppo": [cfg("cartpole_ppo.yaml"), "train.total_env_steps=12000", "ppo.num_steps=64"],
    "dqn": [cfg("cartpole_dqn.yaml"), "train.total_env_steps=3000", "dqn.learning_starts=600", "dqn.num_steps=100"],
    "tag": [cfg("tag_gridworld_ppo.yaml"), "train.total_env_steps=3000", "ppo.num_steps=20"],
    "sac": [cfg("pendulum_sac.yaml"), "train.total_env_steps=1600", "sac.learning_starts=400", "sac.num_steps=50",
            "policy.actor_hidden=[32,32]", "policy.q_hidden=[32,32]"],
}


def args_of(algo, run_dir, *sets):
    c, *kv = SMALL[algo]
    out = ["--config", c, "--run-dir", run_dir]
    for s in list(kv) + list(sets):
        out += ["--set", s]
    return out


def mode_same(a):
    w = a.workdir
    for algo in ("ppo", "dqn", "sac", "tag"):
        e_at, dp = os.path.join(w, algo + "-e-at"), os.path.join(w, algo + "-dp")
        p = run(a, 3, args_of(algo, e_at, "mapping.template=e-at", "env.num_envs=2"))
        if not re.search(r" 2  A\+T\s+0,1", p.stdout) or "1 trainer GMI(s), each acting and learning for 2 " \
                "simulator GMI(s) x 2 envs" not in p.stdout:
            fail("the role table and the e-at line should be printed", p)
        run(a, 1, args_of(algo, dp, "env.num_envs=4"))
        same_metrics(e_at, dp, f"{algo}: e-at on 3 GMIs vs dp on 1 GMI with 4 envs")
    # Two trainers, each with two simulators: their gradients are averaged among them.
    e_at, dp = os.path.join(w, "ppo-e-at-6"), os.path.join(w, "ppo-dp-2")
    p = run(a, 6, args_of("ppo", e_at, "mapping.template=e-at", "mapping.trainers_per_gpu=2", "env.num_envs=2"))
    if not re.search(r"rank [1-5]\] \[info\] gradient reduction: .* over 2 GMI\(s\)", p.stderr):
        fail("the first trainer GMI should say how the trainers reduce (rank 0 is a simulator)", p)
    run(a, 2, args_of("ppo", dp, "env.num_envs=4"))
    same_metrics(e_at, dp, "ppo: e-at on 6 GMIs (2 trainers) vs dp on 2 GMIs with 4 envs")
    # The algorithm's checks count the trainer's envs: 48 steps of one env do not split into 32
    # minibatches, 48 steps of the trainer's two simulators' envs do.
    e_at, dp = os.path.join(w, "ppo-e-at-mb"), os.path.join(w, "ppo-dp-mb")
    mb = ["train.total_env_steps=3000", "ppo.num_steps=48", "ppo.num_minibatches=32"]
    run(a, 3, args_of("ppo", e_at, "mapping.template=e-at", "env.num_envs=1", *mb))
    run(a, 1, args_of("ppo", dp, "env.num_envs=2", *mb))
    same_metrics(e_at, dp, "ppo: e-at with 2 x 1 envs per trainer vs dp with 2 envs (32 minibatches of 3)")
    # Stop and resume under e-at: the same run, and checkpoints with dp's content.
    full, half = os.path.join(w, "sac-e-at"), os.path.join(w, "sac-half")
    run(a, 3, args_of("sac", half, "mapping.template=e-at", "env.num_envs=2", "train.total_env_steps=800"))
    p = run(a, 3, args_of("sac", half, "mapping.template=e-at", "env.num_envs=2") + ["--resume", "latest"])
    if "resumed from" not in p.stdout:
        fail("the e-at run should resume exactly (same layout)", p)
    same_metrics(half, full, "sac: e-at stopped at 800 steps and resumed vs uninterrupted")
    # The multi-agent game's state (every role's rows) travels too: from iteration 20's checkpoint
    # of a run with checkpoints every 20 iterations (PPO anneals over the whole run).
    full, again = os.path.join(w, "tag-every-20"), os.path.join(w, "tag-resumed")
    run(a, 3, args_of("tag", full, "mapping.template=e-at", "env.num_envs=2", "checkpoint.interval=20"))
    run(a, 3, args_of("tag", again, "mapping.template=e-at", "env.num_envs=2") + ["--resume", harness.ckpt(full, 20)])
    same_metrics(again, full, "tag: e-at resumed from iteration 20 vs uninterrupted")
    full = os.path.join(w, "sac-e-at")
    last = sorted(os.listdir(os.path.join(full, "checkpoints")))[-1]
    x = harness.datasets(os.path.join(full, "checkpoints", last))
    y = harness.datasets(os.path.join(w, "sac-dp", "checkpoints", last))
    def equal(u, v):
        u, v = np.asarray(u), np.asarray(v)
        return np.array_equal(u, v, equal_nan=u.dtype.kind == "f" and v.dtype.kind == "f")
    for k in y:
        if k not in x or not equal(x[k], y[k]):
            fail(f"the e-at checkpoint's {k} differs from dp's")
    print(f"sac: the e-at checkpoint {last} holds what dp's does ({len(y)} datasets and attributes)")
    # Under dp on two GMIs (another layout: the shared state carries over) and under eval.
    ck = os.path.join(full, "checkpoints", last)
    p = run(a, 2, ["--resume", ck, "--set", "mapping.template=dp", "--set", "train.total_env_steps=2000",
                   "--run-dir", os.path.join(w, "sac-dp-resumed")])
    if not re.search(r"resuming .* \(1 GMI\(s\) x 4 envs\) on 2 GMI\(s\) x 2 envs", p.stdout + p.stderr):
        fail("an e-at checkpoint should resume under dp on another layout", p)
    p = run(a, 1, ["eval", "--checkpoint", ck, "--episodes", "2"])
    if not re.search(r"eval: 2 episodes: return -?[0-9.]+", p.stdout + p.stderr):
        fail("gmi_drl eval should serve an e-at checkpoint under dp", p)


def expect_error(a, n, args, pattern):
    p = run(a, n, args, status=2)
    if not re.search(pattern, p.stderr):
        fail(f"expected an error matching {pattern!r}", p)


def mode_errors(a):
    w = a.workdir
    r = os.path.join(w, "r")
    expect_error(a, 2, args_of("ppo", r, "mapping.template=mp-dp"),
                 r"gmi_drl: error: mapping\.template: mp-dp is a serving template \(gmi_drl eval\)")
    if os.environ.get("GMI_TEST_MUJOCO") == "1":  # groups are for host-simulated envs
        hopper = ["--config", cfg("hopper_ppo.yaml"), "--run-dir", r, "--set", "mapping.template=e-at",
                  "--set", "env.num_envs=4"]
        expect_error(a, 3, hopper + ["--set", "env.batch_size=2"],
                     r"gmi_drl: error: env\.batch_size: 2: under mapping\.template e-at a trainer steps its simulator")
        expect_error(a, 4, hopper + ["--set", "env.async_halves=true"],
                     r"gmi_drl: error: env\.async_halves: under mapping\.template e-at the halves are of a trainer's "
                     r"simulator GMIs, and each trainer has 3 \(expected an even number\)")
    expect_error(a, 5, args_of("ppo", r, "mapping.template=e-at", "mapping.trainers_per_gpu=2"),
                 r"gmi_drl: error: mapping\.trainers_per_gpu: 2: trainer GMI \d has 2 simulator GMI\(s\) but "
                 r"trainer GMI \d has 1")
    # An error of the trainers alone (their reduction's layout: 1 GMI per GPU) is every GMI's line.
    expect_error(a, 4, args_of("ppo", r, "mapping.template=e-at", "gmi.gpus_per_node=2", "reduce.strategy=hybrid",
                               "reduce.hybrid_k=2"),
                 r"gmi_drl: error: reduce\.hybrid_k: 2 exceeds the 1 GMIs per GPU of this layout")
    expect_error(a, 3, args_of("ppo", r, "mapping.template=e-at", "env.num_envs=1", "ppo.num_steps=48",
                               "ppo.num_minibatches=7"),
                 r"gmi_drl: error: under mapping\.template e-at each trainer GMI steps its 2 simulator GMIs' envs, "
                 r"2 x env\.num_envs = 2: .*ppo\.num_minibatches: 7 does not divide the batch .* = 96")
    # A check that no simulator count can satisfy is the config's own error, at once.
    p = run(a, 3, args_of("dqn", r, "mapping.template=e-at", "dqn.start_e=0.5", "dqn.end_e=0.9"), status=2)
    if not re.search(r"gmi_drl: error: config .*dqn\.end_e: 0\.9 is above dqn\.start_e", p.stderr) or \
            "under mapping.template e-at" in p.stderr:
        fail("an e-at config error that S cannot cure should be the config's own line", p)
    expect_error(a, 1, args_of("ppo", r, "env.num_envs=1", "ppo.num_steps=48", "ppo.num_minibatches=32"),
                 r"gmi_drl: error: .*ppo\.num_minibatches: 32 does not divide the batch .* = 48")
    expect_error(a, 3, args_of("ppo", r, "mapping.template=e-at", "mapping.trainers_per_gpu=2"),
                 r"gmi_drl: error: mapping\.trainers_per_gpu: 2 \(expected at most 1")


def mode_halves(a):
    if os.environ.get("GMI_TEST_MUJOCO") != "1":
        print("check_templates halves: built without MuJoCo, nothing to check")
        return
    w = a.workdir
    common = ["--config", cfg("hopper_ppo.yaml"), "--set", "train.total_env_steps=3000", "--set", "ppo.num_steps=64",
              "--set", "env.async_halves=true", "--set", "env.threads=1"]
    e_at, dp = os.path.join(w, "e-at"), os.path.join(w, "dp")
    run(a, 5, common + ["--run-dir", e_at, "--set", "mapping.template=e-at", "--set", "env.num_envs=2"])
    run(a, 1, common + ["--run-dir", dp, "--set", "env.num_envs=8"])
    same_metrics(e_at, dp, "hopper ppo in halves: e-at on 5 GMIs vs dp on 1 GMI with 8 envs")


def best_return(run_dir, key="episode_return_mean"):
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    vals = [float(r[key]) for r in rows if r[key] != "nan"]
    return max(vals, default=float("-inf")), rows


def mode_learn(a):
    w = a.workdir
    cases = [("ppo", 3, cfg("cartpole_ppo.yaml"), ["env.num_envs=4", "train.total_env_steps=500000"], 475),
             ("dqn", 3, cfg("cartpole_dqn.yaml"), ["train.total_env_steps=500000"], 475),
             ("sac", 4, cfg("pendulum_sac.yaml"), ["train.total_env_steps=30000"], -250)]
    for algo, n, c, sets, target in cases:
        d = os.path.join(w, algo)
        args = ["--config", c, "--run-dir", d, "--set", "mapping.template=e-at"]
        for s in sets:
            args += ["--set", s]
        run(a, n, args, timeout=1800)
        best, rows = best_return(d)
        print(f"{algo} under e-at on {n} GMIs: best iteration return {best:.1f} in {rows[-1]['env_steps']} env steps "
              f"(target {target})")
        if best < target:
            fail(f"{algo} under e-at did not reach {target}: best {best:.1f}")


if __name__ == "__main__":
    harness.main("check_templates", ["same", "errors", "halves", "learn"], globals())
