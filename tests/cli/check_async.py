#!/usr/bin/env python3
"""Training under mapping.template async (src/gmi/async_training.hpp), under mpiexec.

Modes:
  run     the role table (the trainer on rank 0) and the async line; metrics.csv has one row per
          iteration with the async columns: policy_lag 0 for the first iteration (every rollout
          made with the first weights), and never above policy_lag_max or async.max_policy_lag;
          a run stopped at iteration 10 resumes from its checkpoint (the serving GMIs' envs
          restored) to iteration 20 with every iteration once, lag 0 again on the first resumed
          iteration; SIGTERM stops a free-running run, writes its checkpoint and exits within
          seconds, and the run resumes from it; a checkpoint resumes on another layout (more
          serving GMIs: new episodes, the policy kept); two trainers reduce among themselves (-n 6).
  lag     a trainer slowed down (GMI_DRL_FAULT slow@0.25:0) with async.max_policy_lag 0: the lag
          stays 0, rollouts older are dropped and counted, the serving GMIs wait (busy share
          below one half) and their peak memory stays where it was after 5 iterations.
  faults  a serving GMI that hangs ends the job (status 3) with the census line naming it, within
          reduce.timeout_s and a margin; a trainer that hangs likewise; a serving GMI killed ends the
          job; under ea-t, a hung trainer and a hung serving GMI likewise.
  errors  one line naming the key for what async cannot train: one GMI; async.transport device for an
          algorithm whose rollouts go through the host (SAC); rollouts in flight beyond the memory (their
          buffers and host copies are counted); and for bench, which measures training alone under async.
  lockstep  mapping.template ea-t (async's machinery in lockstep): PPO CartPole on 3 GMIs (2 serving
          GMIs x 4 envs) is bit for bit dp's run on one GMI with the 8 envs (metrics.csv's learning
          columns), policy lag 0 and nothing dropped, the trainer on rank 0, its rollouts through the
          shared buffers (async.transport auto; two per serving GMI, used in turn), and again
          through host messages (host); a run
          stopped at iteration 10 and resumed to 20 repeats the uninterrupted one.
  offpolicy  DQN CartPole under ea-t with one vector step per iteration is bit for bit dp's run on one
          GMI with the serving GMIs' envs (every learning column, epsilon included), also stopped and
          resumed to a longer run (the serving GMIs take the resumed run's epsilon schedule); SAC and TD3
          Pendulum under async fill the trainer's replay and learn from it, and a run stopped at
          iteration 10 resumes with its replay to 20, every iteration once.
  games   multi-agent PPO on Tag: gridworld Tag under ea-t (2 serving GMIs x 4 envs) is bit for bit
          dp's run on one GMI with the 8 envs (both roles' learning columns and the games' statistics),
          through the shared buffers and through host messages,
          also stopped mid-episode at iteration 5 and resumed to 10; again with both normalisers and
          the runners frozen; continuous Tag under async updates both roles every iteration and
          resumes from its checkpoint (the serving GMIs' games restored).
  learn   APPO under async: CartPole >= 475 within twice PPO's budget (-n 3, 2 serving GMIs x 8 envs),
          Pendulum >= -250 within twice pendulum_ppo.yaml's (-n 4, 3 serving GMIs); SAC Pendulum >= -250
          within pendulum_sac.yaml's 30 k steps (-n 3, 2 serving GMIs x 8 envs, 8 updates per vector
          step); DQN CartPole >= 475 within cartpole_dqn.yaml's 500 k steps and PPO CartPole >= 475
          (-n 3), under async and under ea-t.
"""
import csv
import math
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


def check_rows(d, last, lag_zero_at, what, max_lag=4):
    r = rows(d)
    its = [int(x["iteration"]) for x in r]
    if its != list(range(1, last + 1)):
        fail(f"{what}: iterations {its[:5]}..{its[-5:]} (expected 1..{last} once each)")
    for x in r:
        it, lag, top = int(x["iteration"]), float(x["policy_lag"]), float(x["policy_lag_max"])
        if it in lag_zero_at and top != 0.0:
            fail(f"{what}: policy_lag_max {top} at iteration {it} (expected 0: the first rollouts after a start)")
        if not 0.0 <= lag <= top <= max_lag:
            fail(f"{what}: policy_lag {lag}, policy_lag_max {top} at iteration {it} (expected 0 <= lag <= max <= "
                 f"{max_lag})")
        for col in ("pps", "ttp", "serving_busy", "trainer_busy", "serving_peak_rss_mib"):
            if not float(x[col]) > 0:
                fail(f"{what}: {col} {x[col]} at iteration {it} (expected > 0)")
    lags = sorted({float(x["policy_lag_max"]) for x in r})
    print(f"{what}: iterations 1..{last} once each; lag 0 at {sorted(lag_zero_at)}, maxima {lags}")
    return r


def mode_run(a):
    w = a.workdir
    # Stopped at iteration 10 (its end of training), resumed to 20.
    d = os.path.join(w, "resume")
    p = run(a, 3, small(d, "train.total_env_steps=2560", "checkpoint.interval=5"))
    if not re.search(r" 0     0    0     0  T      1,2", p.stdout) or \
            "1 trainer GMI(s), each learning from the rollouts of 2 serving GMI(s) x 4 envs" not in p.stdout:
        fail("the role table and the async line should be printed", p)
    check_rows(d, 10, {1}, "async on 3 GMIs, 10 iterations")
    p = run(a, 3, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=5120"])
    if "resumed from" not in p.stdout:
        fail("the async run should resume on its own layout", p)
    check_rows(d, 20, {1, 11}, "resumed at iteration 10 to 20")
    # SIGTERM while the serving GMIs roll out: a checkpoint, a stop, and a resume from it; with two
    # rollouts in flight per serving GMI.
    d = os.path.join(w, "sigterm")
    cmd = harness.mpi_command(a, 3, small(d, "train.total_env_steps=100000000", "checkpoint.interval=0",
                                          "async.rollouts_in_flight=2"))
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


def mode_lag(a):
    d = os.path.join(a.workdir, "slow")
    p = harness.run_mpi(a, 3, small(d, "train.total_env_steps=5120", "async.max_policy_lag=0"),
                        env={"GMI_DRL_FAULT": "slow@0.25:0"})
    r = check_rows(d, 20, {1}, "a slow trainer, async.max_policy_lag 0", max_lag=0)
    dropped = sum(float(x["dropped_samples"]) for x in r)
    busy = [float(x["serving_busy"]) for x in r[5:]]
    rss = [float(x["serving_peak_rss_mib"]) for x in r]
    print(f"slow trainer: {dropped:.0f} samples dropped; serving busy {min(busy):.3f}..{max(busy):.3f}; serving peak "
          f"RSS {rss[4]:.1f} MiB at iteration 5, {rss[-1]:.1f} at {len(r)}")
    if dropped <= 0:
        fail("a trainer slower than its serving GMIs with async.max_policy_lag 0 should drop rollouts", p)
    if max(busy) >= 0.5:
        fail(f"the serving GMIs of a slow trainer should mostly wait (busy share {max(busy):.3f})", p)
    if rss[-1] > rss[4] + 2.0:
        fail(f"the serving GMIs' peak memory grew from {rss[4]:.1f} to {rss[-1]:.1f} MiB under a slow trainer", p)


def mode_faults(a):
    w = a.workdir
    cases = [("hang@3:1", 3, r"rank 0 waited [\d.]+ s for a rollout from serving GMI 1 .*rank 1 did not answer"),
             ("hang@3:0", 3, r"for (a credit or letter from trainer GMI 0|the \d+ bytes of a mailbox message from "
                             r"rank 0)\b.*rank 0 did not answer"),
             ("kill@3:2", None, None),
             # ea-t: a hung trainer ends the job from its serving GMIs' wait for the weights, a hung
             # serving GMI from the trainer's wait for its rollout
             ("hang@3:0", 3, r"for (the weights of the next update from trainer GMI 0|the \d+ bytes of a mailbox "
                             r"message from rank 0)\b.*rank 0 did not answer", "ea-t"),
             ("hang@3:2", 3, r"rank 0 waited [\d.]+ s for a rollout from serving GMI 2 .*rank 2 did not answer",
              "ea-t")]
    for fault, status, pattern, *template in cases:
        d = os.path.join(w, fault.replace("@", "-").replace(":", "-") + "".join("-" + t for t in template))
        sets = ["train.total_env_steps=100000000", "reduce.timeout_s=4", "checkpoint.interval=0"]
        cmd = harness.mpi_command(a, 3, small(d, *sets, *("mapping.template=" + t for t in template)))
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                               env=harness.env_for({"GMI_DRL_FAULT": fault}))
        except subprocess.TimeoutExpired as e:
            out = lambda b: (b.decode(errors="replace") if isinstance(b, bytes) else (b or ""))[-3000:]
            print(out(e.stdout))
            print(out(e.stderr))
            fail(f"{fault}: the job did not end within 120 s")
        took = time.time() - t0
        print(f"{fault}: exit {p.returncode} after {took:.1f} s")
        if p.returncode == 0 or (status is not None and p.returncode != status) or took > 60:
            fail(f"{fault}: exit {p.returncode} after {took:.1f} s (expected {status or 'non-zero'} within 60 s)", p)
        if pattern and not re.search(pattern, p.stderr):
            fail(f"{fault}: expected a line matching {pattern!r}", p)


LEARNING = ["iteration", "env_steps", "episode_return_mean", "episode_length_mean", "episodes", "policy_loss",
            "value_loss", "entropy", "approx_kl", "clip_frac", "explained_variance", "grad_norm"]


def same_learning(d1, d2, what, columns=LEARNING, iterations=None):
    """The runs in d1 and d2 bit for bit alike in `columns` (and `iterations` rows each, if given);
    returns d1's rows."""
    r1, r2 = rows(d1), rows(d2)
    if len(r1) != len(r2) or iterations not in (None, len(r1)):
        fail(f"{what}: {len(r1)} and {len(r2)} iterations" + (f" (expected {iterations} each)" if iterations else ""))
    for x, y in zip(r1, r2):
        for c in columns:
            if x[c] != y[c]:
                fail(f"{what}: iteration {x['iteration']}: {c} {x[c]} and {y[c]} (expected bit for bit equal)")
    print(f"{what}: {len(r1)} iterations bit for bit equal")
    return r1


def mode_lockstep(a):
    w = a.workdir
    base = ["--config", cfg("cartpole_ppo.yaml"), "--set", "ppo.anneal_lr=false", "--set", "train.total_env_steps=20480"]
    eat = base + ["--set", "mapping.template=ea-t", "--set", "env.num_envs=4"]
    d_eat, d_dp = os.path.join(w, "ea-t"), os.path.join(w, "dp")
    # Two buffers per serving GMI: its rollouts alternate between them (still one in flight under ea-t).
    p = run(a, 3, eat + ["--set", "async.rollouts_in_flight=2", "--run-dir", d_eat])
    if not re.search(r" 0     0    0     0  T      1,2", p.stdout) or \
            "1 trainer GMI(s), each learning from the rollouts of 2 serving GMI(s) x 4 envs; each rollout is made " \
            "with the newest update's weights (lockstep)" not in p.stdout:
        fail("ea-t: the role table (the trainer on rank 0) and the ea-t line should be printed", p)
    for x in rows(d_eat):
        if (x["policy_lag"], x["policy_lag_max"], x["dropped_samples"]) != ("0", "0", "0"):
            fail(f"ea-t: iteration {x['iteration']}: policy lag {x['policy_lag']} (max {x['policy_lag_max']}), "
                 f"{x['dropped_samples']} dropped (expected 0, 0, 0)")
    if "rollouts through device buffers its trainer copies from (async.transport)" not in p.stdout:
        fail("ea-t: PPO's rollouts should go through the shared buffers (async.transport auto)", p)
    run(a, 1, base + ["--set", "env.num_envs=8", "--run-dir", d_dp])
    same_learning(d_eat, d_dp, "ea-t on 3 GMIs (2 x 4 envs) and dp on one GMI (8 envs)")
    # The host transport (MPI messages of host memory) delivers the same rollouts.
    d_host = os.path.join(w, "ea-t-host")
    p = run(a, 3, eat + ["--set", "async.transport=host", "--run-dir", d_host])
    if "rollouts through host messages (async.transport)" not in p.stdout:
        fail("ea-t with async.transport host: the description should say so", p)
    same_learning(d_host, d_dp, "ea-t through host messages and dp on one GMI")
    # Stopped at iteration 10 (its end of training, a checkpoint), resumed to 20.
    d = os.path.join(w, "ea-t-resumed")
    first = ["--config", cfg("cartpole_ppo.yaml"), "--set", "ppo.anneal_lr=false", "--set", "train.total_env_steps=10240",
             "--set", "mapping.template=ea-t", "--set", "env.num_envs=4", "--set", "checkpoint.interval=5"]
    run(a, 3, first + ["--run-dir", d])
    p = run(a, 3, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=20480"])
    if "resumed from" not in p.stdout:
        fail("the ea-t run should resume on its own layout", p)
    same_learning(d, d_eat, "ea-t stopped at iteration 10 and resumed, and uninterrupted")


def mode_errors(a):
    w = a.workdir
    cases = [
        (1, ["--config", cfg("cartpole_appo.yaml"), "--set", "mapping.template=async"],
         r"^gmi_drl: error: mapping\.trainers_per_gpu: 1 \(expected at most 0, half of the 1 GMI\(s\) of GPU 0"),
        (3, ["--config", cfg("pendulum_sac.yaml"), "--set", "mapping.template=async", "--set", "env.num_envs=2",
             "--set", "async.transport=device"],
         r"^gmi_drl: error: async\.transport: device, but algo sac keeps no rollout in place \(PPO, APPO and "
         r"multi-agent PPO do\) \(expected auto or host here\)$"),
        # 64 rollouts of 8192 envs x 2048 steps in flight per serving GMI: their buffers and host
        # copies are counted before anything is allocated.
        (3, ["--config", cfg("cartpole_ppo.yaml"), "--set", "mapping.template=async", "--set", "env.num_envs=8192",
             "--set", "ppo.num_steps=2048", "--set", "async.rollouts_in_flight=64"],
         r"^gmi_drl: error: not enough (host|device) memory for .*async\.rollouts_in_flight = 64: "),
    ]
    bench = (3, ["bench", "--config", cfg("cartpole_appo.yaml"), "--num-envs", "8", "--set", "mapping.template=async",
                 "--mode", "serve"],
             r"^gmi_drl: error: mapping\.template: async: bench measures training under it \(--mode train\); --mode "
             r"serve runs under dp$")
    for i, (n, args, pattern) in enumerate(cases + [bench]):
        if args[0] != "bench":
            args = args + ["--run-dir", os.path.join(w, f"e{i}")]
        p = run(a, n, args, status=2)
        lines = [l for l in p.stderr.splitlines() if l.startswith("gmi_drl: error:")]
        if not lines or not re.search(pattern, lines[0]):
            fail(f"expected one error line matching {pattern!r}", p)
        print(f"error: {lines[0]}")


OFFPOLICY_LEARNING = ["iteration", "env_steps", "episode_return_mean", "episode_length_mean", "episodes", "td_loss",
                      "q_values", "epsilon", "grad_norm", "updates"]


def mode_offpolicy(a):
    w = a.workdir
    # DQN under ea-t, one vector step per iteration: each step acts with the weights of every update
    # before it, as dp's does, so the run is dp's on one GMI with the serving GMIs' envs, bit for bit.
    base = ["--config", cfg("cartpole_dqn.yaml"), "--set", "dqn.num_steps=1", "--set", "train.total_env_steps=1200",
            "--set", "dqn.learning_starts=200", "--set", "dqn.batch_size=32", "--set", "replay.capacity=2000",
            "--set", "policy.q_hidden=[16, 16]", "--set", "dqn.target_network_frequency=50"]
    d_eat, d_dp = os.path.join(w, "dqn-ea-t"), os.path.join(w, "dqn-dp")
    p = run(a, 3, base + ["--set", "mapping.template=ea-t", "--set", "env.num_envs=2", "--run-dir", d_eat])
    if "1 trainer GMI(s), each learning from the rollouts of 2 serving GMI(s) x 2 envs" not in p.stdout:
        fail("dqn under ea-t: the ea-t line should be printed", p)
    run(a, 1, base + ["--set", "env.num_envs=4", "--run-dir", d_dp])
    r1 = same_learning(d_eat, d_dp, "dqn under ea-t on 3 GMIs (2 x 2 envs) and dp on one GMI (4 envs)",
                       OFFPOLICY_LEARNING, 300)
    learnt = sum(1 for x in r1 if int(x["updates"]) > 0)
    if learnt < 50:
        fail(f"dqn under ea-t: {learnt} iterations with updates (expected the schedule's, more than 50)")
    print(f"dqn under ea-t: {learnt} iterations with updates")
    # A resume that extends the run keeps the epsilon schedule of the run it resumes (the checkpoint's),
    # on the serving GMIs as on dp's GMI: ea-t stopped at 600 env steps and resumed to 1200 is dp's
    # run stopped and resumed the same way, bit for bit (epsilon decays over all 600 steps first).
    ext = [x if x != "train.total_env_steps=1200" else "train.total_env_steps=600" for x in base]
    ext += ["--set", "dqn.exploration_fraction=1.0"]
    for tmpl, n, envs in (("ea-t", 3, 2), ("dp", 1, 4)):
        d = os.path.join(w, f"dqn-{tmpl}-resumed")
        run(a, n, ext + ["--set", f"mapping.template={tmpl}", "--set", f"env.num_envs={envs}", "--run-dir", d])
        p = run(a, n, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=1200"])
        if "resumed from" not in p.stdout:
            fail(f"dqn under {tmpl} should resume", p)
    same_learning(os.path.join(w, "dqn-ea-t-resumed"), os.path.join(w, "dqn-dp-resumed"),
                  "dqn stopped at 600 env steps and resumed to 1200 under ea-t and dp", OFFPOLICY_LEARNING, 300)
    # SAC and TD3 under async: the serving GMIs' transitions fill the trainer's replay; stopped at
    # iteration 10 and resumed (the replay from the checkpoint) to 20, every iteration once.
    for algo in ("sac", "td3"):
        d = os.path.join(w, f"{algo}-async")
        small_off = ["--config", cfg(f"pendulum_{algo}.yaml"), "--set", "mapping.template=async", "--set",
                     "env.num_envs=2", "--set", f"{algo}.num_steps=10", "--set", f"{algo}.learning_starts=100",
                     "--set", f"{algo}.batch_size=32", "--set", "replay.capacity=1000", "--set",
                     "policy.actor_hidden=[16, 16]", "--set", "policy.q_hidden=[16, 16]", "--set",
                     "checkpoint.interval=5", "--run-dir", d]
        p = run(a, 3, small_off + ["--set", "train.total_env_steps=400"])
        r = check_rows(d, 10, {1}, f"{algo} under async on 3 GMIs, 10 iterations")
        if not any(x["qf1_loss"] != "nan" and float(x["updates"]) > 0 for x in r[3:]):
            fail(f"{algo} under async: no updates after learning_starts ({[x['updates'] for x in r]})")
        p = run(a, 3, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=800"])
        if "resumed from" not in p.stdout or "refilling" in p.stdout + p.stderr:
            fail(f"{algo} under async should resume with its replay", p)
        check_rows(d, 20, {1, 11}, f"{algo} under async resumed at iteration 10 to 20")


GAME_LEARNING = ["iteration", "env_steps", "episode_return_mean", "episode_length_mean", "episodes", "grad_norm",
                 "updates", "episode_tag_rate_mean"] + \
    [f"{role}_{c}" for role in ("tagger", "runner") for c in ("policy_loss", "value_loss", "entropy", "approx_kl",
                                                             "clip_frac", "explained_variance")] + \
    ["episode_tagger_return_mean", "episode_runner_return_mean"]


def mode_games(a):
    w = a.workdir
    # Gridworld Tag under ea-t: each role's rows from the serving GMIs' games, the run dp's on one GMI
    # with their envs, bit for bit; stopped at iteration 5 (mid-episode) and resumed to 10, the
    # uninterrupted run. Once as configured, once with both normalisers (each role's observation
    # statistics go to the serving GMIs with its weights; its return accumulators stay with the
    # trainer's checkpoint) and the runners frozen.
    base = ["--config", cfg("tag_gridworld_ppo.yaml"), "--set", "ppo.num_steps=20", "--set", "ppo.anneal_lr=false",
            "--set", "env.episode_length=30", "--set", "train.log_interval=1"]
    variants = [("grid", []),
                ("grid-normalised", ["--set", "ppo.normalize_obs=true", "--set", "ppo.normalize_reward=true",
                                     "--set", "ppo.frozen_roles=[runner]"])]
    for name, extra in variants:
        grid = base + extra
        d_eat, d_dp, d_res = (os.path.join(w, f"{name}-{x}") for x in ("ea-t", "dp", "ea-t-resumed"))
        p = run(a, 3, grid + ["--set", "mapping.template=ea-t", "--set", "env.num_envs=4", "--set",
                              "train.total_env_steps=1600", "--run-dir", d_eat])
        if "1 trainer GMI(s), each learning from the rollouts of 2 serving GMI(s) x 4 envs" not in p.stdout:
            fail(f"{name} under ea-t: the ea-t line should be printed", p)
        run(a, 1, grid + ["--set", "env.num_envs=8", "--set", "train.total_env_steps=1600", "--run-dir", d_dp])
        r = same_learning(d_eat, d_dp, f"{name} under ea-t on 3 GMIs (2 x 4 envs) and dp on one GMI (8 envs)",
                          GAME_LEARNING, 10)
        if not sum(float(x["episodes"]) for x in r) > 0:
            fail(f"{name} under ea-t: no episode ended (the test compares nothing of the games' statistics)")
        if not extra:  # the roles' rows through host messages (interleaved per env) instead of the buffers
            d_host = os.path.join(w, f"{name}-ea-t-host")
            run(a, 3, grid + ["--set", "mapping.template=ea-t", "--set", "env.num_envs=4", "--set",
                              "train.total_env_steps=1600", "--set", "async.transport=host", "--run-dir", d_host])
            same_learning(d_host, d_dp, f"{name} under ea-t through host messages and dp on one GMI", GAME_LEARNING, 10)
        run(a, 3, grid + ["--set", "mapping.template=ea-t", "--set", "env.num_envs=4", "--set",
                          "train.total_env_steps=800", "--set", "checkpoint.interval=5", "--run-dir", d_res])
        p = run(a, 3, ["--resume", "latest", "--run-dir", d_res, "--set", "train.total_env_steps=1600"])
        if "resumed from" not in p.stdout:
            fail(f"{name} under ea-t should resume on its own layout", p)
        same_learning(d_res, d_eat, f"{name} under ea-t stopped at iteration 5 and resumed, and uninterrupted",
                      GAME_LEARNING, 10)
    # Continuous Tag (MultiDiscrete heads, shared hidden layers) under async: both roles update in
    # every iteration (4 epochs x 4 minibatches each) on the serving GMIs' rollouts; stopped at
    # iteration 5 and resumed (their games restored) to 10.
    d = os.path.join(w, "continuous-async")
    cont = ["--config", cfg("tag_continuous_ppo.yaml"), "--set", "mapping.template=async", "--set", "env.num_envs=4",
            "--set", "env.num_taggers=2", "--set", "env.num_runners=5", "--set", "env.num_other_agents_observed=3",
            "--set", "policy.actor_hidden=[32, 32]", "--set", "policy.critic_hidden=[32, 32]", "--set",
            "env.episode_length=30", "--set", "ppo.num_steps=20", "--set", "checkpoint.interval=5", "--run-dir", d]
    run(a, 3, cont + ["--set", "train.total_env_steps=800"])
    check_rows(d, 5, {1}, "continuous Tag under async on 3 GMIs, 5 iterations")
    p = run(a, 3, ["--resume", "latest", "--run-dir", d, "--set", "train.total_env_steps=1600"])
    if "resumed from" not in p.stdout:
        fail("continuous Tag under async should resume on its own layout", p)
    r = check_rows(d, 10, {1, 6}, "continuous Tag under async resumed at iteration 5 to 10")
    for x in r:
        losses = [float(x[f"{role}_{c}"]) for role in ("tagger", "runner") for c in ("policy_loss", "value_loss")]
        if int(float(x["updates"])) != 32 or not all(math.isfinite(v) for v in losses):
            fail(f"continuous Tag under async: iteration {x['iteration']}: {x['updates']} updates, losses {losses} "
                 f"(expected 32: 2 roles x 4 epochs x 4 minibatches, every loss finite)")


def mode_learn(a):
    w = a.workdir
    cases = [("appo", 3, cfg("cartpole_appo.yaml"), ["train.total_env_steps=1000000"], 475, "async"),
             ("sac", 3, cfg("pendulum_sac.yaml"), ["env.num_envs=8", "sac.num_steps=32", "sac.batch_size=512",
                                                   "sac.updates_per_step=8"], -250, "async"),
             ("dqn", 3, cfg("cartpole_dqn.yaml"), [], 475, "async"),
             ("dqn", 3, cfg("cartpole_dqn.yaml"), [], 475, "ea-t"),
             ("appo", 4, cfg("pendulum_appo.yaml"), [], -250, "async"),
             ("ppo", 3, cfg("cartpole_ppo.yaml"), ["env.num_envs=4"], 475, "async"),
             ("ppo", 3, cfg("cartpole_ppo.yaml"), ["env.num_envs=4"], 475, "ea-t")]
    for algo, n, c, sets, target, template in cases:
        d = os.path.join(w, f"{algo}-{template}-{os.path.basename(c)}")
        args = ["--config", c, "--run-dir", d, "--set", f"mapping.template={template}"]
        for s in sets:
            args += ["--set", s]
        run(a, n, args, timeout=1800)
        r = rows(d)
        best = max((float(x["episode_return_mean"]) for x in r if x["episode_return_mean"] != "nan"),
                   default=float("-inf"))
        print(f"{algo} {os.path.basename(c)} under {template} on {n} GMIs: best iteration return {best:.1f} in "
              f"{r[-1]['env_steps']} env steps (target {target})")
        if best < target:
            fail(f"{algo} under {template} did not reach {target}: best {best:.1f}")


if __name__ == "__main__":
    harness.main("check_async", ["run", "lag", "faults", "errors", "lockstep", "offpolicy", "games", "learn"], globals())
