#!/usr/bin/env python3
"""Sample Factory 2.1.1 (APPO family) on a Gymnasium MuJoCo v5 task, with a JSON result for peer comparison.

Run from anywhere (no network needed; everything but torch/numpy comes from .peers/sf/site):

    MUJOCO_GL=disable PYTHONPATH=<abs>/.peers/sf/site python3 .peers/sf/sf_mujoco.py \
        --env Hopper-v5 --num-workers 16 --train-for-seconds 120 --out DIR

Arguments (all optional except --out; defaults = Sample Factory's sf_examples/mujoco settings):
  --env ID                    Gymnasium id (Hopper-v5, Ant-v5, Humanoid-v5, HalfCheetah-v5, ...). Default Hopper-v5.
  --out DIR                   where result.json goes (only that file is written there).
  --train-for-seconds S       stop after S s counted from the start of the worker processes (SF's train_for_seconds,
                              which SF 2.1.1 never checks by itself: this script feeds it). Default 120.
  --train-for-env-steps N     stop after N env steps (SF's train_for_env_steps). Default 1e10 (= time-limited).
  --num-workers N             rollout worker processes. Default: os.cpu_count() (16 on the GPU machine).
  --num-envs-per-worker N     envs per worker. Default 8 (SF example), but in sync mode (the example's
                              async_rl=False) it is lowered, when needed, to the largest even value <= 8 for which
                              num_workers*envs*rollout divides batch_size*num_batches_per_epoch (4096): 16 workers
                              -> 4 envs each = 64 envs, exactly the example's 8 workers x 8 envs.
  --worker-num-splits N       double-buffered sampling splits per worker. Default 2 (SF example; 1 if envs is odd).
  --hidden 64,64              MLP encoder layers (SF encoder_mlp_layers); e.g. 256,256. Default 64,64.
  --nonlinearity tanh         tanh | relu | elu. Default tanh.
  --device gpu|cpu            learner/inference device. Default gpu.
  --async-rl 0|1              SF async mode (APPO with policy lag). Default 0 (SF's MuJoCo example is sync).
  --batched-sampling 0|1      SF batched sampling. Default 0 (SF example).
  --seed N                    Default 0.
  --target-return R           optional: also report env steps / wall seconds at which the mean return first >= R.
  --return-window N           episodes averaged in the return curve (SF's stats_avg is 100). Default 100.
  --curve-interval S          min seconds between curve points. Default 1.0.
  --tail-frac F               env-steps/s "tail" rate is measured over the last F of the training time. Default 0.5.
  --max-wall S                watchdog: write a completed=false result.json and kill everything after S seconds
                              of wall time (SF hangs if a worker dies). Default train_for_seconds + 300.
  --train-dir DIR             SF's train_dir (checkpoints, tensorboard, sf_log.txt). Default: a fresh /tmp dir,
                              deleted at exit unless --keep-train-dir 1 (keeps $OUT to one file).
  -- ARGS...                  anything after a lone "--" goes to Sample Factory verbatim, e.g.
                              -- --batch_size=2048 --learning_rate=3e-4 (these win over the settings above).

result.json (wall times are seconds since this script started; env steps are what SF's learner has received,
i.e. SF's env_steps = frames * env_frameskip, and env_frameskip = 1 here, so frames == env steps):
  frames / env_steps                 SF's final count ("Collected {0: N}" in its log).
  wall_s                             script start -> result written (imports, env probe, spawn, shutdown included).
  startup_s                          script start -> first learner env-step report.
  env_steps_per_s_overall            env steps at the last report / its wall time (start-up included).
  env_steps_per_s_after_first_step   between the first and last learner reports (start-up excluded).
  env_steps_per_s_tail               over the last --tail-frac of that window (tail_window gives the two points).
  env_steps_per_s_sf_main_loop       SF's own "FPS" (steps / runner main loop incl. process start and shutdown).
  return_curve                       [[env_steps, wall_s, mean raw episode return over the last --return-window
                                     episodes], ...] every --curve-interval s; return_curve_episodes: episodes so far.
  final_mean_return, episodes, time_to_target ({env_steps, wall_s, mean_return} or null), versions, settings,
  sf_argv, sf_cfg (SF's full config).
A one-line summary is printed as "SF_RESULT {...}". Exit code 0 when training ran and collected frames.

Sample Factory 2.1.1 fixes (site/ is built by assemble.sh, which applies patches/):
  - patches/sf_numpy2_tensor_dict.patch: NumPy >= 2.4 refuses to write a size-1 array into a scalar slot
    (rollout workers died with "setting an array element with a sequence"); the patch reshapes it.
  - here: runner.total_train_seconds is fed by an observer (SF never updates it, so train_for_seconds never
    stopped a run); the env-step recorder is appended to runner.policy_msg_handlers directly (SF's
    register_policy_msg_handler replaces the handler list with a bare function and breaks its own runner).
  - env ids: SF's example registers *-v4 ids under mujoco_* names; here the Gymnasium id itself (e.g. Hopper-v5) is
    registered as the SF env name and built with gymnasium.make(id). SF's metadata pins gymnasium<1.0 and
    numpy<2.0; it runs with gymnasium 1.4.0 / numpy 2.4 with the patch above (not needed: wandb, opencv,
    huggingface-hub, pyglet, filelock; they are only imported by enjoy/hub/wandb/atari code).
"""
import time

T_SCRIPT0 = time.time()  # wall reference: script start (includes imports, env probe, process spawn)

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
from collections import deque


def make_gym_env(full_env_name, cfg=None, env_config=None, render_mode=None, **kwargs):
    """SF env factory (module level so that spawned worker processes can unpickle it)."""
    import gymnasium as gym

    return gym.make(full_env_name, render_mode=render_mode)


def parse_args(argv):
    if "--" in argv:
        i = argv.index("--")
        argv, passthrough = argv[:i], argv[i + 1 :]
    else:
        passthrough = []
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Hopper-v5")
    p.add_argument("--out", required=True)
    p.add_argument("--train-for-seconds", type=float, default=120)
    p.add_argument("--train-for-env-steps", type=int, default=10_000_000_000)
    p.add_argument("--num-workers", type=int, default=os.cpu_count() or 8)
    p.add_argument("--num-envs-per-worker", type=int, default=None)
    p.add_argument("--worker-num-splits", type=int, default=None)
    p.add_argument("--hidden", default="64,64")
    p.add_argument("--nonlinearity", default="tanh", choices=["tanh", "relu", "elu"])
    p.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    p.add_argument("--async-rl", type=int, default=0, choices=[0, 1])
    p.add_argument("--batched-sampling", type=int, default=0, choices=[0, 1])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target-return", type=float, default=None)
    p.add_argument("--return-window", type=int, default=100)
    p.add_argument("--curve-interval", type=float, default=1.0)
    p.add_argument("--tail-frac", type=float, default=0.5)
    p.add_argument("--train-dir", default=None)
    p.add_argument("--keep-train-dir", type=int, default=0, choices=[0, 1])
    p.add_argument("--experiment", default=None)
    p.add_argument("--max-wall", type=float, default=None)
    return p.parse_args(argv), passthrough


def pick_envs_per_worker(args, rollout=64, samples_per_iter=1024 * 4):
    """Keep SF's sync-mode invariant: samples_per_iter % (workers*envs*rollout) == 0."""
    if args.num_envs_per_worker is not None:
        return args.num_envs_per_worker
    if args.async_rl:
        return 8
    for e in (8, 6, 4, 2, 1):
        per_rollout = args.num_workers * e * rollout
        if samples_per_iter % per_rollout == 0 and samples_per_iter >= per_rollout:
            return e
    return 8  # let SF report the config error


def rate_between(points, t_from, t_to):
    """env-steps/s between the recorded (wall, env_steps) points nearest to t_from and t_to."""
    if len(points) < 2:
        return None
    a = min(points, key=lambda p: abs(p[0] - t_from))
    b = min(points, key=lambda p: abs(p[0] - t_to))
    if b[0] - a[0] <= 0:
        return None
    return (b[1] - a[1]) / (b[0] - a[0]), a, b


def main():
    args, passthrough = parse_args(sys.argv[1:])
    os.environ.setdefault("MUJOCO_GL", "disable")  # never touch GL/EGL
    os.makedirs(args.out, exist_ok=True)
    hidden = [int(h) for h in args.hidden.split(",") if h.strip()]

    import numpy as np
    import torch
    from importlib.metadata import version

    from sample_factory.algo.runners.runner import AlgoObserver
    from sample_factory.algo.utils.misc import LEARNER_ENV_STEPS, ExperimentStatus
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import make_runner
    from sf_examples.mujoco.mujoco_params import mujoco_override_defaults

    train_dir = args.train_dir or tempfile.mkdtemp(prefix="sf_train_")
    experiment = args.experiment or f"sf_{args.env}_{int(T_SCRIPT0)}"
    envs_per_worker = pick_envs_per_worker(args)
    splits = args.worker_num_splits or (2 if envs_per_worker % 2 == 0 else 1)

    register_env(args.env, make_gym_env)
    sf_argv = [
        f"--env={args.env}",
        "--algo=APPO",
        f"--experiment={experiment}",
        f"--train_dir={train_dir}",
        "--restart_behavior=overwrite",
        f"--device={args.device}",
        f"--seed={args.seed}",
        f"--num_workers={args.num_workers}",
        f"--num_envs_per_worker={envs_per_worker}",
        f"--worker_num_splits={splits}",
        f"--train_for_seconds={int(round(args.train_for_seconds))}",
        f"--train_for_env_steps={args.train_for_env_steps}",
        "--encoder_mlp_layers", *[str(h) for h in hidden],
        f"--nonlinearity={args.nonlinearity}",
        f"--async_rl={bool(args.async_rl)}",
        f"--batched_sampling={bool(args.batched_sampling)}",
        f"--stats_avg={args.return_window}",
        "--with_wandb=False",
        "--log_to_file=False",
    ] + passthrough
    parser, partial_cfg = parse_sf_args(argv=sf_argv, evaluation=False)
    mujoco_override_defaults(partial_cfg.env, parser)  # SF's own MuJoCo example settings
    cfg = parse_full_cfg(parser, sf_argv)

    rec = {
        "returns": deque(maxlen=args.return_window),
        "episodes": 0,
        "points": [],  # (wall_s, env_steps) at training steps, thinned to curve_interval
        "curve": [],  # [env_steps, wall_s, mean_return]
        "curve_episodes": [],
        "t_first_step": None,
        "t_last_step": None,
        "steps_last": 0,
        "t_start": None,
        "target": None,
    }

    def episodic_handler(runner, msg, policy_id):
        s = msg.get("episodic", msg)
        r = s.get("reward") if isinstance(s, dict) else None
        if r is None:
            return
        for v in np.atleast_1d(np.asarray(r, dtype=np.float64)):
            rec["returns"].append(float(v))
            rec["episodes"] += 1

    class Recorder(AlgoObserver):
        def on_start(self, runner):
            rec["t_start"] = time.time() - T_SCRIPT0

        def on_training_step(self, runner, training_iteration_since_resume):
            # SF 2.1.1 never advances runner.total_train_seconds, so its train_for_seconds never fires; feed it
            # here (seconds since the worker processes were started), SF checks it right after this call.
            now = time.time() - T_SCRIPT0
            runner.total_train_seconds = now - (rec["t_start"] if rec["t_start"] is not None else 0.0)

        def on_stop(self, runner):
            record(runner, force=True)

    def record(runner, force=False):
        """Called after SF's own handler has applied a learner's env-step report (runner.env_steps is fresh)."""
        now = time.time() - T_SCRIPT0
        steps = int(sum(runner.env_steps.values()))
        if rec["t_first_step"] is None:
            rec["t_first_step"], rec["steps_first"] = now, steps
        elif steps <= rec["steps_last"]:
            return  # repeated report (e.g. at shutdown): no progress, keep the time of the last advance
        rec["t_last_step"], rec["steps_last"] = now, steps
        last = rec["points"][-1] if rec["points"] else None
        if last is None or (now - last[0] >= args.curve_interval) or (force and steps != last[1]):
            rec["points"].append((now, steps))
            if rec["returns"]:
                m = float(np.mean(rec["returns"]))
                rec["curve"].append([steps, round(now, 3), m])
                rec["curve_episodes"].append(rec["episodes"])
                if args.target_return is not None and rec["target"] is None and m >= args.target_return:
                    rec["target"] = {"env_steps": steps, "wall_s": now, "mean_return": m}

    def learner_steps_handler(runner, msg, policy_id):
        record(runner)

    cfg, runner = make_runner(cfg)

    def watchdog():  # SF hangs (rather than exits) when a worker process dies: give up after --max-wall
        deadline = args.max_wall if args.max_wall else args.train_for_seconds + 300
        while time.time() - T_SCRIPT0 < deadline:
            time.sleep(1.0)
        print(f"SF_WATCHDOG: {deadline:.0f}s wall exceeded, frames={rec['steps_last']}; killing workers", flush=True)
        import multiprocessing

        with open(os.path.join(args.out, "result.json"), "w") as f:
            json.dump({"peer": "sample-factory", "env": args.env, "completed": False, "watchdog_s": deadline,
                       "frames": rec["steps_last"], "return_curve": rec["curve"]}, f, indent=1)
        for ch in multiprocessing.active_children():
            ch.kill()
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    runner.register_episodic_stats_handler(episodic_handler)
    # (not runner.register_policy_msg_handler: in SF 2.1.1 it replaces the handler list with a bare function)
    runner.policy_msg_handlers[LEARNER_ENV_STEPS].append(learner_steps_handler)
    runner.register_observer(Recorder())
    status = runner.init()
    if status == ExperimentStatus.SUCCESS:
        status = runner.run()
    t_end = time.time() - T_SCRIPT0

    frames = max(int(sum(runner.env_steps.values())), int(rec["steps_last"]))  # SF's final count
    sf_total = int(runner.total_env_steps_since_resume or 0)
    main_loop = float(getattr(runner.timing, "main_loop", 0.0) or 0.0)
    res = {
        "peer": "sample-factory",
        "env": args.env,
        "status": int(status),
        "completed": int(status) == 0 and frames > 0,
        "frames": frames,
        "env_steps": frames,
        "wall_s": round(t_end, 3),
        "wall_s_to_last_training_step": rec["t_last_step"],
        "startup_s": rec["t_first_step"],
        "t_processes_started_s": rec["t_start"],
        "env_steps_per_s_overall": rec["steps_last"] / rec["t_last_step"] if rec["t_last_step"] else None,
        "env_steps_per_s_sf_main_loop": sf_total / main_loop if main_loop > 0 else None,
        "sf_main_loop_s": main_loop,
    }
    if rec["t_first_step"] is not None and rec["t_last_step"] > rec["t_first_step"]:
        res["env_steps_per_s_after_first_step"] = (rec["steps_last"] - rec["steps_first"]) / (
            rec["t_last_step"] - rec["t_first_step"]
        )
        t0, t1 = rec["t_first_step"], rec["t_last_step"]
        rb = rate_between(rec["points"], t1 - args.tail_frac * (t1 - t0), t1)
        if rb:
            res["env_steps_per_s_tail"] = rb[0]
            res["tail_window"] = {"from": list(rb[1]), "to": list(rb[2]), "tail_frac": args.tail_frac}
    res.update(
        {
            "final_mean_return": float(np.mean(rec["returns"])) if rec["returns"] else None,
            "return_window_episodes": args.return_window,
            "episodes": rec["episodes"],
            "target_return": args.target_return,
            "time_to_target": rec["target"],
            "return_curve": rec["curve"],
            "return_curve_episodes": rec["curve_episodes"],
            "versions": {
                "sample_factory": version("sample-factory"),
                "gymnasium": version("gymnasium"),
                "mujoco": version("mujoco"),
                "torch": torch.__version__,
                "numpy": np.__version__,
                "python": sys.version.split()[0],
            },
            "device": args.device,
            "cuda_device": torch.cuda.get_device_name() if args.device == "gpu" and torch.cuda.is_available() else None,
            "cpu_count": os.cpu_count(),
            "settings": {
                "num_workers": cfg.num_workers,
                "num_envs_per_worker": cfg.num_envs_per_worker,
                "total_envs": cfg.num_workers * cfg.num_envs_per_worker,
                "worker_num_splits": cfg.worker_num_splits,
                "encoder_mlp_layers": list(cfg.encoder_mlp_layers),
                "nonlinearity": cfg.nonlinearity,
                "async_rl": cfg.async_rl,
                "batched_sampling": cfg.batched_sampling,
                "rollout": cfg.rollout,
                "batch_size": cfg.batch_size,
                "num_batches_per_epoch": cfg.num_batches_per_epoch,
                "num_epochs": cfg.num_epochs,
                "learning_rate": cfg.learning_rate,
                "env_frameskip": cfg.env_frameskip,
                "train_for_seconds": cfg.train_for_seconds,
                "train_for_env_steps": cfg.train_for_env_steps,
                "passthrough": passthrough,
            },
            "sf_argv": sf_argv,
            "sf_cfg": {k: v for k, v in vars(cfg).items() if isinstance(v, (int, float, str, bool, list, type(None)))},
        }
    )
    path = os.path.join(args.out, "result.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    brief = {k: res.get(k) for k in ("env", "completed", "frames", "wall_s", "startup_s", "env_steps_per_s_overall",
                                    "env_steps_per_s_after_first_step", "env_steps_per_s_tail",
                                    "env_steps_per_s_sf_main_loop", "final_mean_return", "episodes", "time_to_target")}
    brief["settings"] = {k: res["settings"][k] for k in ("num_workers", "num_envs_per_worker", "encoder_mlp_layers",
                                                         "async_rl")}
    brief["device"] = res["device"]
    print("SF_RESULT " + json.dumps(brief), flush=True)
    if not res["completed"]:  # SF leaves its worker processes up after a failure: end them
        import multiprocessing

        for ch in multiprocessing.active_children():
            ch.kill()
    if not args.keep_train_dir and args.train_dir is None:
        shutil.rmtree(train_dir, ignore_errors=True)
    return 0 if res["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
