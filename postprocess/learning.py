#!/usr/bin/env python3
"""Learning curves of several runs.

    postprocess/learning.py RUN_DIR... [--labels A,B,...] [--smooth N] [--out DIR]
                            [--reference R1,R2,...] [--threshold X]

Reads RUN_DIR/metrics.csv of every run (gmi_drl's run directories) and prints, per run, the
iterations, env steps, wall time, final return (mean of the last 10 % of iterations with
finished episodes) and best iteration return.  --reference gives one return per run (or '-' for
none), e.g. a published result, drawn as a dashed line in the run's colour and printed beside
its final return.  --threshold X adds the time to return: per run, the wall time and env steps
where the return smoothed over --smooth iterations first reaches X, and the first wall time where
the mean of the runs' smoothed curves (each at its latest iteration) does.  Writes to DIR (default
the current directory):
    learning_steps.png    episode return against env steps
    learning_time.png     episode return against wall time
"""
import argparse
import csv
import math
import os
import sys


def error(msg):
    print(f"learning.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(run_dir):
    path = os.path.join(run_dir, "metrics.csv")
    if not os.path.isfile(path):
        error(f"{run_dir}: no metrics.csv (not a gmi_drl run directory?)")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    need = ["env_steps", "wall_time_s", "episode_return_mean"]
    if not rows or any(k not in rows[0] for k in need):
        error(f"{path}: expected columns {', '.join(need)} and at least one row")
    try:
        steps = [float(r["env_steps"]) for r in rows]
        wall = [float(r["wall_time_s"]) for r in rows]
        ret = [float(r["episode_return_mean"]) for r in rows]
    except ValueError as e:
        error(f"{path}: {e}")
    return steps, wall, ret


def smooth(values, n):
    """Mean over the last n finite values (NaN where an iteration finished no episode)."""
    out, window = [], []
    for v in values:
        if math.isfinite(v):
            window.append(v)
            window = window[-n:]
        out.append(sum(window) / len(window) if window else math.nan)
    return out


def time_to_return(labels, runs, n, threshold):
    """When each run's smoothed return, and the mean of the runs' smoothed curves, first reach
    `threshold` (the curves are step functions of wall time: a run keeps its latest value)."""
    curves = [(wall, smooth(ret, n)) for _, wall, ret in runs]
    print(f"\n| run | seconds to {threshold:g} | env steps to {threshold:g} |")
    print("|---|---|---|")
    for label, (steps, wall, _), (_, sm) in zip(labels, runs, curves):
        hit = next((i for i, v in enumerate(sm) if math.isfinite(v) and v >= threshold), None)
        shown = ("not reached", "-") if hit is None else (f"{wall[hit]:.1f}", f"{steps[hit]:.0f}")
        print(f"| {label} | {shown[0]} | {shown[1]} |")
    end = min(w[-1] for w, _ in curves)
    times = sorted({t for w, _ in curves for t in w if t <= end})
    for t in times:
        values = []
        for w, sm in curves:
            i = max((k for k, x in enumerate(w) if x <= t), default=None)
            values.append(math.nan if i is None else sm[i])
        if all(math.isfinite(v) for v in values) and sum(values) / len(values) >= threshold:
            print(f"mean of the {len(runs)} runs' curves reaches {threshold:g} at {t:.1f} s")
            return
    print(f"mean of the {len(runs)} runs' curves does not reach {threshold:g} (within the shortest run, {end:.1f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--labels", help="comma-separated, one per run (default: the directory names)")
    ap.add_argument("--smooth", type=int, default=10, help="moving average over N iterations (default 10)")
    ap.add_argument("--out", default=".", help="where to write the plots")
    ap.add_argument("--reference", help="comma-separated returns, one per run ('-': none), drawn as dashed lines")
    ap.add_argument("--threshold", type=float, help="report when each run (and the runs' mean) first reaches this return")
    a = ap.parse_args()
    labels = a.labels.split(",") if a.labels else [os.path.basename(os.path.normpath(d)) for d in a.run_dirs]
    if len(labels) != len(a.run_dirs):
        error(f"--labels: {len(labels)} label(s) for {len(a.run_dirs)} run(s)")
    if a.smooth < 1:
        error("--smooth: expected an integer >= 1")
    refs = [None] * len(a.run_dirs)
    if a.reference:
        parts = a.reference.split(",")
        if len(parts) != len(a.run_dirs):
            error(f"--reference: {len(parts)} value(s) for {len(a.run_dirs)} run(s)")
        try:
            refs = [None if p.strip() == "-" else float(p) for p in parts]
        except ValueError:
            error(f"--reference: expected numbers or '-', got '{a.reference}'")
    runs = [load(d) for d in a.run_dirs]

    print("| run | iterations | env steps | wall s | final return | best return | reference |")
    print("|---|---|---|---|---|---|---|")
    for label, (steps, wall, ret), ref in zip(labels, runs, refs):
        finite = [v for v in ret if math.isfinite(v)]
        tail = finite[-max(1, len(finite) // 10):] if finite else []
        final = sum(tail) / len(tail) if tail else math.nan
        best = max(finite) if finite else math.nan
        shown = "-" if ref is None else f"{ref:.2f}"
        print(f"| {label} | {len(steps)} | {steps[-1]:.0f} | {wall[-1]:.1f} | {final:.2f} | {best:.2f} | {shown} |")

    if a.threshold is not None:
        time_to_return(labels, runs, a.smooth, a.threshold)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(a.out, exist_ok=True)
    for name, xlabel, idx in [("learning_steps.png", "env steps", 0), ("learning_time.png", "wall time (s)", 1)]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, run, ref in zip(labels, runs, refs):
            line, = ax.plot(run[idx], smooth(run[2], a.smooth), label=label)
            if ref is not None:
                ax.axhline(ref, color=line.get_color(), linestyle="--", linewidth=1, label=f"{label}: reference")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"episode return (mean over {a.smooth} iterations)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(a.out, name)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
