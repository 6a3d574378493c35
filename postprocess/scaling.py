#!/usr/bin/env python3
"""The table and plots of a scaling study written by jobs/scaling_study.sh.

    postprocess/scaling.py STUDY_DIR [--out DIR]

Reads STUDY_DIR/results/*.json (`gmi_drl bench` results, every env count in each) and prints,
per config, environments per GPU and GMIs per GPU, the throughput of every layout (nodes, GPUs,
reduction strategy) normalised to the fewest GPUs of the study (as paper 003's Table 5 does for
1, 2, 4 and 8 nodes), the ideal (linear) value and the efficiency (normalised / ideal); repeated
measurements (seeds) are averaged; `step` is the efficiency of each doubling (against the next
fewer GPUs).  Writes to DIR (default STUDY_DIR):
    scaling.md                  the table (Markdown)
    throughput_vs_gmis.png      env steps/s against GMIs per GPU, one line per node count
    efficiency_vs_nodes.png     scaling efficiency against nodes, one line per GMIs per GPU
    phase_times.png             rollout / update / rest of an iteration, per layout
"""
import argparse
import glob
import json
import os
import statistics
import sys
from collections import defaultdict


def error(msg):
    print(f"scaling.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(study):
    files = sorted(glob.glob(os.path.join(study, "results", "*.json")))
    if not files:
        error(f"{study}: no results (expected {os.path.join(study, 'results', '*.json')} from jobs/scaling_study.sh)")
    rows = []
    for f in files:
        try:
            d = json.load(open(f))
            per_gpu = d["gmis_per_gpu"]
            if not d["results"]:
                raise ValueError("no results")
            for r in d["results"]:
                rows.append({
                    "file": f,
                    "config": os.path.splitext(os.path.basename(d.get("config", d["env"])))[0],
                    "seed": d.get("seed", 0),
                    "nodes": int(d["nodes"]),
                    "gpus": int(d["gpus"]),
                    "gmis": int(d["gmis"]),
                    "gmis_per_gpu": max(per_gpu) if isinstance(per_gpu, list) else int(per_gpu),
                    "envs_per_gpu": int(r["num_envs"]) // int(d["gpus"]),
                    "sps": float(r["env_steps_per_s"]),
                    "iteration_ms": float(r["iteration_ms"]),
                    "rollout_ms": float(r["rollout_ms"]),
                    "update_ms": float(r["update_ms"]),
                    "reduce": d.get("reduce", ""),
                })
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            error(f"{f}: not a gmi_drl bench result ({type(e).__name__}: {e})")
    return rows


def summarise(rows):
    """One entry per layout (config, envs per GPU, GMIs per GPU, nodes, GPUs, strategy), repeated
    measurements averaged; normalised to the same config, envs and GMIs per GPU on the fewest GPUs."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["config"], r["envs_per_gpu"], r["gmis_per_gpu"], r["nodes"], r["gpus"], r["reduce"])].append(r)
    table = []
    for (config, e, g, n, gpus, red), rs in sorted(groups.items()):
        sps = [r["sps"] for r in rs]
        table.append({
            "config": config, "envs_per_gpu": e, "gmis_per_gpu": g, "nodes": n, "gpus": gpus, "gmis": rs[0]["gmis"],
            "sps": statistics.mean(sps), "sps_std": statistics.stdev(sps) if len(sps) > 1 else 0.0,
            "seeds": len(rs), "reduce": red,
            "rollout_ms": statistics.mean(r["rollout_ms"] for r in rs),
            "update_ms": statistics.mean(r["update_ms"] for r in rs),
            "iteration_ms": statistics.mean(r["iteration_ms"] for r in rs),
        })
    base = {}  # (config, envs per GPU, GMIs per GPU) -> (fewest GPUs, mean throughput there)
    for t in table:
        key = (t["config"], t["envs_per_gpu"], t["gmis_per_gpu"])
        if key not in base or t["gpus"] < base[key][0]:
            base[key] = (t["gpus"], [])
    for t in table:
        b = base[(t["config"], t["envs_per_gpu"], t["gmis_per_gpu"])]
        if t["gpus"] == b[0]:
            b[1].append(t["sps"])
    for t in table:
        gpus, sps = base[(t["config"], t["envs_per_gpu"], t["gmis_per_gpu"])]
        t["normalized"] = t["sps"] / statistics.mean(sps)
        t["ideal"] = t["gpus"] / gpus
        t["efficiency"] = t["normalized"] / t["ideal"]
    # Per scaling step: against the next fewer GPUs of the same config, envs and GMIs per GPU.
    for t in table:
        key = (t["config"], t["envs_per_gpu"], t["gmis_per_gpu"])
        fewer = [u for u in table if (u["config"], u["envs_per_gpu"], u["gmis_per_gpu"]) == key and u["gpus"] < t["gpus"]]
        if not fewer:
            t["step_efficiency"] = None
            continue
        prev = max(u["gpus"] for u in fewer)
        prev_sps = statistics.mean(u["sps"] for u in fewer if u["gpus"] == prev)
        t["step_efficiency"] = (t["sps"] / prev_sps) / (t["gpus"] / prev)
    return table


def markdown(table):
    out = ["| config | envs/GPU | GMIs/GPU | nodes | GPUs | GMIs | reduce | env steps/s | runs | normalized | ideal | efficiency | step |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in table:
        sd = f" ± {t['sps_std']:.3g}" if t["seeds"] > 1 else ""
        step = "-" if t["step_efficiency"] is None else f"{100 * t['step_efficiency']:.0f} %"
        out.append(f"| {t['config']} | {t['envs_per_gpu']} | {t['gmis_per_gpu']} | {t['nodes']} | {t['gpus']} | {t['gmis']} | {t['reduce']} | "
                   f"{t['sps']:.4g}{sd} | {t['seeds']} | {t['normalized']:.2f} | {t['ideal']:.0f} | "
                   f"{100 * t['efficiency']:.0f} % | {step} |")
    scaled = [t["efficiency"] for t in table if t["ideal"] > 1]
    if scaled:
        out.append("")
        out.append(f"mean efficiency over the {len(scaled)} scaled point(s): {100 * statistics.mean(scaled):.0f} % of linear")
    return "\n".join(out) + "\n"


def plots(table, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def save(fig, ax, title, name, grid=True):
        ax.set_title(title)
        ax.legend(fontsize=7)
        if grid:
            ax.grid(alpha=0.3)
        paths.append(os.path.join(out, name))
        fig.tight_layout()
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)

    configs = sorted({(t["config"], t["envs_per_gpu"]) for t in table})
    paths = []
    fig, ax = plt.subplots(figsize=(6, 4))
    def best(ts):  # one point per x: the best strategy measured there
        out = {}
        for x, y in ts:
            out[x] = max(out.get(x, y), y)
        return sorted(out.items())

    for c, e in configs:
        sel = [t for t in table if (t["config"], t["envs_per_gpu"]) == (c, e)]
        for n in sorted({(t["nodes"], t["gpus"]) for t in sel}):
            pts = best((t["gmis_per_gpu"], t["sps"]) for t in sel if (t["nodes"], t["gpus"]) == n)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{c}, {e} envs/GPU, {n[0]} node(s) x {n[1] // n[0]} GPU(s)")
    ax.set_xlabel("GMIs per GPU")
    ax.set_ylabel("env steps / s")
    save(fig, ax, "Throughput against GMIs per GPU", "throughput_vs_gmis.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    multi_node = len({t["nodes"] for t in table}) > 1
    xkey = "nodes" if multi_node else "gpus"
    xs = sorted({t[xkey] for t in table})
    ax.plot(xs, [100] * len(xs), "k--", lw=1, label="linear")
    for c, e in configs:
        sel = [t for t in table if (t["config"], t["envs_per_gpu"]) == (c, e)]
        for g in sorted({t["gmis_per_gpu"] for t in sel}):
            pts = best((t[xkey], 100 * t["efficiency"]) for t in sel if t["gmis_per_gpu"] == g)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{c}, {e} envs/GPU, {g} GMI(s)/GPU")
    ax.set_xlabel(xkey if multi_node else "GPUs (one node)")
    ax.set_ylabel("scaling efficiency (%)")
    ax.set_xticks(xs)
    ax.set_ylim(bottom=0)
    save(fig, ax, f"Scaling efficiency against {'nodes' if multi_node else 'GPUs'} (best strategy)",
         "efficiency_vs_nodes.png")

    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(table)), 4))
    labels = [f"{t['gpus']}GPU x {t['gmis_per_gpu']}\n{t['reduce']}" for t in table]
    roll = [t["rollout_ms"] for t in table]
    upd = [t["update_ms"] for t in table]
    rest = [max(0.0, t["iteration_ms"] - t["rollout_ms"] - t["update_ms"]) for t in table]
    x = range(len(table))
    ax.bar(x, roll, label="rollout")
    ax.bar(x, upd, bottom=roll, label="update (incl. gradient reduction)")
    ax.bar(x, rest, bottom=[a + b for a, b in zip(roll, upd)], label="other")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel("ms per iteration")
    save(fig, ax, "Time per phase", "phase_times.png", grid=False)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study_dir")
    ap.add_argument("--out", help="where to write scaling.md and the plots (default: STUDY_DIR)")
    a = ap.parse_args()
    if not os.path.isdir(a.study_dir):
        error(f"{a.study_dir}: not a directory")
    out = a.out or a.study_dir
    os.makedirs(out, exist_ok=True)
    table = summarise(load(a.study_dir))
    md = markdown(table)
    print(md, end="")
    with open(os.path.join(out, "scaling.md"), "w") as f:
        f.write(md)
    for p in plots(table, out):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
