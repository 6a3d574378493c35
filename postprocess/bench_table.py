#!/usr/bin/env python3
"""Markdown table of `gmi_drl bench` results.

Usage: postprocess/bench_table.py RESULT.json [RESULT.json ...]
One row per (file, num_envs): env steps/s, time per iteration and per phase, launches.
"""
import json
import sys


def rows(path):
    with open(path) as f:
        d = json.load(f)
    for r in d["results"]:
        yield d, f"{r.get('kernels', '?')} / {d.get('matmul', 'fp32')}", r


def main(paths):
    if not paths:
        sys.exit(__doc__)
    print("| device | kernels / matmul | num_envs | env steps/s | ms / iteration | rollout ms | update ms "
          "| Kokkos kernels | BLAS calls |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in paths:
        for d, variant, r in rows(p):
            dev = d["device"]
            device = dev.split(": ", 1)[1].split(",")[0] if dev.startswith("CUDA") else dev
            print(f"| {device} | {variant} | {r['num_envs']} | {r['env_steps_per_s'] / 1e6:.1f} M "
                  f"| {r['iteration_ms']:.1f} | {r['rollout_ms']:.1f} | {r['update_ms']:.1f} "
                  f"| {r['kokkos_kernels_per_iteration']} | {r['blas_calls_per_iteration']} |")


if __name__ == "__main__":
    main(sys.argv[1:])
