#!/usr/bin/env python3
"""Raw environment steps per second of the peers gmi_drl's host-simulated environments are
compared with (issue 16): EnvPool (`pip install envpool`) with N envs on T threads, and
Gymnasium's vector environments (AsyncVectorEnv: one process per env; SyncVectorEnv: one thread),
random actions, the same N and T as `gmi_drl bench-env`.  Prints a table and writes JSON.

  bench_env_peers.py --name Hopper-v5 --num-envs 8 --threads 1,2 --steps 2000 --json out.json
"""
import argparse
import json
import time

import numpy as np


def timed(env, low, high, n, steps, warmup):
    """Env steps per second of `steps` vector steps with random actions (64 batches, cycled)."""
    rng = np.random.default_rng(7)
    acts = rng.uniform(low, high, size=(64, n, low.size)).astype(np.float32)
    for i in range(warmup):
        env.step(acts[i % 64])
    t0 = time.perf_counter()
    for i in range(steps):
        env.step(acts[i % 64])
    sec = time.perf_counter() - t0
    env.close()
    return steps * n / sec


def bench_envpool(name, n, threads, steps, warmup):
    import envpool
    env = envpool.make(name, env_type="gymnasium", num_envs=n, batch_size=n, num_threads=threads, seed=1)
    env.reset()
    return timed(env, env.action_space.low, env.action_space.high, n, steps, warmup)


def bench_gymnasium(name, n, steps, warmup, kind):
    import gymnasium as gym
    env = gym.make_vec(name, num_envs=n, vectorization_mode=kind)
    env.reset(seed=1)
    return timed(env, env.single_action_space.low, env.single_action_space.high, n, steps, warmup)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--num-envs", type=int, default=8)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    out = {"benchmark": "env_steps_peers", "env": a.name, "num_envs": a.num_envs, "steps": a.steps, "results": []}
    for kind in ("sync", "async"):
        r = bench_gymnasium(a.name, a.num_envs, a.steps, a.warmup, kind)
        procs = 1 if kind == "sync" else a.num_envs
        out["results"].append({"peer": f"gymnasium-{kind}", "threads": procs, "env_steps_per_s": round(r, 1)})
        print(f"{a.name} | {a.num_envs} envs | Gymnasium {kind} ({procs} process(es)) | {r:.0f} env steps/s", flush=True)
    for t in [int(x) for x in a.threads.split(",")]:
        r = bench_envpool(a.name, a.num_envs, t, a.steps, a.warmup)
        out["results"].append({"peer": "envpool", "threads": t, "env_steps_per_s": round(r, 1)})
        print(f"{a.name} | {a.num_envs} envs | EnvPool {t} thread(s) | {r:.0f} env steps/s", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
