#!/usr/bin/env python3
"""Every shipped config of a MuJoCo task (host-simulated, or on the device pipeline) trains one
iteration as it is in the repository: from a clean clone after README's first command (cmake/deps-debian.sh installs MuJoCo and
Gymnasium, whose model files the build finds at run time), `gmi_drl --config config/<file>` must
run, with only the run's length and the thread count overridden (and a device physics config's
envs: 64 of its thousands, which take minutes on a CPU).

  check_configs.py --gmi PATH/TO/gmi_drl --env-list PATH/TO/gmi_env_list --workdir DIR
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--env-list", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.gmi, a.env_list = os.path.abspath(a.gmi), os.path.abspath(a.env_list)
    listed = subprocess.run([a.env_list], capture_output=True, text=True, check=True).stdout.splitlines()
    kinds = {line.split("\t")[0]: line.split("\t")[1] for line in listed}
    host = {name for name, kind in kinds.items() if kind in ("mujoco", "physics")}
    if not host:
        sys.exit("check_configs: the registry lists no MuJoCo task (a build without MuJoCo runs no such config)")
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    ran, failed = [], []
    for name in sorted(os.listdir(os.path.join(ROOT, "config"))):
        path = os.path.join(ROOT, "config", name)
        if not name.endswith(".yaml"):
            continue
        m = re.search(r"^\s+name:\s*(\S+)", open(path).read(), re.M)
        if not m or m.group(1) not in host:
            continue
        run_dir = os.path.join(a.workdir, name[:-5])
        # the device physics configs' thousands of envs take minutes on a CPU: 64 of them say as much
        fewer = ["--set", "env.num_envs=64"] if kinds[m.group(1)] == "physics" else []
        p = subprocess.run([a.gmi, "--config", path, "--run-dir", run_dir, "--set", "train.total_env_steps=1",
                            "--set", "env.threads=2"] + fewer, capture_output=True, text=True, timeout=300, cwd=a.workdir)
        metrics = os.path.join(run_dir, "metrics.csv")
        rows = list(csv.DictReader(open(metrics))) if os.path.exists(metrics) else []
        if p.returncode != 0 or not rows:
            failed.append(name)
            print(f"FAIL {name}: exit {p.returncode}, {len(rows)} metrics row(s)\n{p.stderr[-2000:]}")
        else:
            ran.append(name)
            print(f"ok   {name}: {rows[-1]['env_steps']} env steps")
    if len(ran) + len(failed) < 8:
        failed.append(f"only {len(ran) + len(failed)} MuJoCo configs found in config/")
    if failed:
        sys.exit("check_configs: " + ", ".join(failed))
    print(f"check_configs: {len(ran)} MuJoCo configs trained one iteration each")


if __name__ == "__main__":
    main()
