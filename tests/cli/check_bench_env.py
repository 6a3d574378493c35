#!/usr/bin/env python3
"""`gmi_drl bench-env --repeats R` through the real command line: every point keeps its R timed
runs and reports their median, for a device environment (CartPole-v1), a multi-agent game (Tag)
and, in MuJoCo builds, a host-simulated one at two thread counts.

  check_bench_env.py --gmi PATH/TO/gmi_drl --workdir DIR [--mujoco]
Exit status 0 when every JSON holds what it should, 1 with one line per problem otherwise.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--mujoco", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    cases = [("CartPole-v1", ["--num-envs", "16"], 1, None), ("TagContinuous-v0", ["--num-envs", "2"], 1, "agents")]
    if a.mujoco:
        cases.append(("Hopper-v5", ["--num-envs", "4", "--threads", "1,2"], 2, None))
    problems = []
    for name, args, points, ma in cases:
        out = os.path.join(a.workdir, name + ".json")
        cmd = [a.gmi, "bench-env", "--name", name, *args, "--steps", "20", "--warmup", "2", "--repeats", "3",
               "--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        if p.returncode != 0:
            problems.append(f"{name}: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
            continue
        if "median of 3" not in p.stdout + p.stderr:
            problems.append(f"{name}: the log line does not say 'median of 3'")
        d = json.load(open(out))
        if d.get("repeats") != 3:
            problems.append(f"{name}: repeats {d.get('repeats')}, expected 3")
        rows = [d] if ma else d.get("results", [])
        if len(rows) != points:
            problems.append(f"{name}: {len(rows)} points, expected {points}")
        for r in rows:
            runs = r.get("runs", [])
            if len(runs) != 3 or min(runs) <= 0:
                problems.append(f"{name}: runs {runs}, expected 3 positive rates")
            elif abs(r["env_steps_per_s"] - statistics.median(runs)) > 0.11:
                problems.append(f"{name}: env_steps_per_s {r['env_steps_per_s']} is not the median of {runs}")
    for line in problems:
        print("check_bench_env: " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
