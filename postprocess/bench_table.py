#!/usr/bin/env python3
"""Markdown tables of `gmi_drl bench` results.

Usage: postprocess/bench_table.py [--phases] RESULT.json [RESULT.json ...]
One row per (file, num_envs): env steps/s, time per iteration and per phase, launches, and how
busy the GPU was (NVML's utilisation over the timed iterations, `-` where the JSON has none: host
builds, JSON of earlier versions, windows shorter than the driver's sample period).
--phases: the per-phase roofline instead, one row per (file, num_envs, phase): ms per profiled
iteration, share, GFLOP/s, GB/s and the fractions of the device's peaks (the JSON's "peaks"); the
phase furthest from its limit is marked with *.
"""
import json
import sys


def rows(path):
    with open(path) as f:
        d = json.load(f)
    if not isinstance(d, dict) or not isinstance(d.get("results"), list) or "device" not in d:
        sys.exit(f"bench_table.py: {path} is not a `gmi_drl bench --json` result (no device and results)")
    for r in d["results"]:
        yield d, f"{r.get('kernels', '?')} / {d.get('matmul', 'fp32')}", r


def device_name(d):
    dev = d["device"]
    return dev.split(": ", 1)[1].split(",")[0] if dev.startswith("CUDA") else dev


def pct(x):
    return f"{100 * x:.1f} %"


def phases(paths):
    print("| device | kernels / matmul | num_envs | phase | ms / iteration | share | GFLOP/s | GB/s "
          "| % FLOP peak | % bandwidth peak |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    found = False
    for p in paths:
        for d, variant, r in rows(p):
            ph = r.get("phases")
            if not ph:
                continue
            found = True
            total = sum(x["ms"] for x in ph)
            for x in ph:
                mark = " *" if x["phase"] == r.get("furthest_from_limit") else ""
                print(f"| {device_name(d)} | {variant} | {r['num_envs']} | {x['phase']}{mark} | {x['ms']:.3f} "
                      f"| {pct(x['ms'] / total)} | {x['flops_per_s'] / 1e9:.0f} | {x['bytes_per_s'] / 1e9:.1f} "
                      f"| {pct(x['flop_peak_fraction'])} | {pct(x['bandwidth_peak_fraction'])} |")
    if not found:
        sys.exit("bench_table.py: no per-phase results in " + ", ".join(paths) +
                 " (gmi_drl bench --phase-iterations, ppo train mode)")


def main(args):
    paths = [a for a in args if a != "--phases"]
    if not paths:
        sys.exit(__doc__)
    if "--phases" in args:
        return phases(paths)
    print("| device | kernels / matmul | num_envs | env steps/s | ms / iteration | rollout ms | update ms "
          "| Kokkos kernels | BLAS calls | GPU busy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in paths:
        for d, variant, r in rows(p):
            busy = r.get("gpu_util_pct")
            print(f"| {device_name(d)} | {variant} | {r['num_envs']} | {r['env_steps_per_s'] / 1e6:.1f} M "
                  f"| {r['iteration_ms']:.1f} | {r['rollout_ms']:.1f} | {r['update_ms']:.1f} "
                  f"| {r['kokkos_kernels_per_iteration']} | {r['blas_calls_per_iteration']} "
                  f"| {'-' if busy is None else f'{busy:.0f} %'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
