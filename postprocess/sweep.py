#!/usr/bin/env python3
"""The results of a `gmi_drl sweep` (many independent training runs) read at a glance.

    postprocess/sweep.py DIR [--out-dir D] [--metric episode_return_mean] [--boot 2000] [--seed 0]

Reads DIR/sweep.csv (one row per run: run,config,seed,status,final_return,best_return,env_steps,
wall_time_s,attempts,error) and DIR/<run>/metrics.csv of every run (a run without one, e.g. failed
before its first iteration, is skipped with a note; of rows written again after a restart from a
checkpoint, the newest count).  Runs are grouped by `config` (the overrides
other than the seed; every seed of the same overrides is one configuration).  The statistics of a
configuration use its runs that did not fail and have a final return: the last finite value of
--metric in metrics.csv (for episode_return_mean, sweep.csv's final_return when metrics.csv has
none).  Per configuration:
  - the curve of --metric against env steps and against wall time: each run's curve linearly
    interpolated (NaN rows ignored) on a grid of 100 points from the latest first finite point to
    the smallest final x among the configuration's runs; the mean over seeds and a 95 % bootstrap
    confidence interval of the mean (--boot resamples of the seeds with replacement, percentile
    interval);
  - the mean final return and the interquartile mean (IQM, Agarwal et al. 2021, "Deep RL at the
    edge of the statistical precipice": the mean after dropping floor(n/4) seeds from each end,
    i.e. the plain mean below 4 seeds), each with its 95 % bootstrap CI; the mean best return,
    env steps and wall time (sweep.csv's, else metrics.csv's last row).
Each configuration's resamples come from a numpy Generator seeded by --seed, so its interval does
not depend on the other configurations.  Prints a Markdown table ranked by mean final return, the
failed runs with their error text below it, and writes to D (default DIR):
    sweep_return_vs_steps.png   mean --metric against env steps, CI shaded, one line per config
    sweep_return_vs_time.png    the same against wall time
    sweep_summary.json          the table's numbers, the curves and the runs of every config
"""
import argparse
import csv
import json
import math
import os
import sys

import numpy as np

SWEEP_COLUMNS = ["run", "config", "seed", "status", "final_return", "best_return", "env_steps", "wall_time_s",
                 "attempts", "error"]
GRID_POINTS = 100


def error(msg):
    print(f"sweep.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def note(msg):
    print(f"sweep.py: note: {msg}", file=sys.stderr)


def number(text, where):
    """A float from a CSV cell; NaN for an empty cell or 'nan'."""
    s = (text or "").strip()
    if not s:
        return math.nan
    try:
        return float(s)
    except ValueError:
        error(f"{where}: expected a number, got '{s}'")


def read_sweep(d):
    if not os.path.isdir(d):
        error(f"{d}: not a directory")
    path = os.path.join(d, "sweep.csv")
    if not os.path.isfile(path):
        error(f"{d}: no sweep.csv (not a gmi_drl sweep directory?)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in SWEEP_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            error(f"{path}: missing column(s) {', '.join(missing)}")
        rows = list(reader)
    runs = []
    for i, r in enumerate(rows, 2):
        where = f"{path}:{i}"
        if not (r["run"] or "").strip():
            error(f"{where}: empty run")
        seed = (r["seed"] or "").strip()
        runs.append({
            "run": r["run"].strip(), "config": (r["config"] or "").strip(),
            "seed": int(seed) if seed.lstrip("-").isdigit() else seed,
            "status": (r["status"] or "").strip(), "attempts": (r["attempts"] or "").strip(),
            "error": " ".join((r["error"] or "").split()),
            "sweep": {k: number(r[k], f"{where}: {k}") for k in ["final_return", "best_return", "env_steps",
                                                                  "wall_time_s"]},
        })
    return path, runs


def read_metrics(path, metric):
    """(env steps, wall time, metric) arrays of a run's metrics.csv; None when it has none."""
    if not os.path.isfile(path):
        return None
    need = ["env_steps", "wall_time_s", metric]
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        missing = [c for c in need if c not in cols]
        if missing:
            error(f"{path}: no column(s) {', '.join(missing)} (has: {', '.join(cols) or 'nothing'})")
        vals = [[number(r[k], f"{path}:{i}: {k}") for k in need]
                for i, r in enumerate(reader, 2) if all(r.get(k) is not None for k in need)]  # skip a cut-off last line
    a = np.array(vals, dtype=float).reshape(-1, 3)
    # A run restarted from a checkpoint writes its rows again from there: the newest row of each env
    # step counts (a row drops every earlier row at as many env steps or more).
    keep = []
    for i, steps in enumerate(a[:, 0]):
        while keep and a[keep[-1], 0] >= steps:
            keep.pop()
        keep.append(i)
    a = a[keep]
    return a[:, 0], a[:, 1], a[:, 2]


def last_finite(values):
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else math.nan


def load_runs(d, runs, metric):
    """Adds to every run its final and best return, env steps, wall time and curves."""
    no_metrics = []
    for r in runs:
        m = read_metrics(os.path.join(d, r["run"], "metrics.csv"), metric)
        s = r["sweep"]
        fallback = metric == "episode_return_mean"  # sweep.csv's returns are episode returns
        r["final_return"] = s["final_return"] if fallback else math.nan
        r["best_return"] = s["best_return"] if fallback else math.nan
        r["env_steps"], r["wall_time_s"] = s["env_steps"], s["wall_time_s"]
        r["curves"] = {}
        if m is None:
            if r["status"] not in ("pending", ""):
                no_metrics.append(f"{r['run']} ({r['status']})")
            continue
        steps, wall, y = m
        ok = np.isfinite(y)
        if ok.any():
            r["final_return"], r["best_return"] = float(y[ok][-1]), float(np.max(y[ok]))
        if not math.isfinite(r["env_steps"]):
            r["env_steps"] = last_finite(steps)
        if not math.isfinite(r["wall_time_s"]):
            r["wall_time_s"] = last_finite(wall)
        for axis, x in [("env_steps", steps), ("wall_time_s", wall)]:
            good = ok & np.isfinite(x)
            if good.any() and np.isfinite(x).any():
                order = np.argsort(x[good], kind="stable")
                r["curves"][axis] = (x[good][order], y[good][order], last_finite(x))
    if no_metrics:
        note(f"no metrics.csv, skipped: {', '.join(no_metrics)}")


def resample_counts(rng, n, boot):
    """boot x n: how often each of the n seeds is drawn in each resample (with replacement)."""
    idx = rng.integers(0, n, size=(boot, n))
    counts = np.zeros((boot, n))
    np.add.at(counts, (np.repeat(np.arange(boot), n), idx.ravel()), 1.0)
    return idx, counts


def iqm(values, axis=-1):
    """Interquartile mean: the mean after dropping floor(n/4) values from each end."""
    v = np.sort(values, axis=axis)
    n = v.shape[axis]
    k = n // 4
    return np.take(v, np.arange(k, n - k), axis=axis).mean(axis=axis)


def ci(samples):
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    return lo, hi


def curve_stats(curves, rng, boot):
    """Mean and 95 % bootstrap CI over runs of curves (x, y, final x) on a common grid."""
    if not curves:
        return None
    hi = min(c[2] for c in curves)
    lo = min(max(c[0][0] for c in curves), hi)
    grid = np.linspace(lo, hi, GRID_POINTS)
    ys = np.array([np.interp(grid, x, y) for x, y, _ in curves])
    _, counts = resample_counts(rng, len(curves), boot)
    low, high = ci(counts @ ys / len(curves))
    return {"x": grid.tolist(), "mean": ys.mean(axis=0).tolist(), "ci_low": low.tolist(), "ci_high": high.tolist(),
            "runs": len(curves)}


def summarise(runs, boot, seed):
    configs = {}
    for r in runs:
        configs.setdefault(r["config"], []).append(r)
    table = []
    for config, rs in configs.items():
        rng = np.random.default_rng(seed)
        used = [r for r in rs if r["status"] != "failed" and math.isfinite(r["final_return"])]
        finals = np.array([r["final_return"] for r in used])
        t = {"config": config, "label": config or "all seeds", "seeds_total": len(rs),
             "seeds_done": sum(r["status"] == "done" for r in rs),
             "status_counts": {s: sum(r["status"] == s for r in rs) for s in sorted({r["status"] for r in rs})},
             "n": len(used), "final_return_mean": math.nan, "final_return_ci": [math.nan, math.nan],
             "iqm": math.nan, "iqm_ci": [math.nan, math.nan]}
        if used:
            idx, _ = resample_counts(rng, len(used), boot)
            t["final_return_mean"] = float(finals.mean())
            t["final_return_ci"] = [float(v) for v in ci(finals[idx].mean(axis=1))]
            t["iqm"] = float(iqm(finals))
            t["iqm_ci"] = [float(v) for v in ci(iqm(finals[idx], axis=1))]
        for key in ["best_return", "env_steps", "wall_time_s"]:
            vals = [r[key] for r in used if math.isfinite(r[key])]
            t[f"{key}_mean"] = float(np.mean(vals)) if vals else math.nan
        t["curves"] = {axis: curve_stats([r["curves"][axis] for r in used if axis in r["curves"]], rng, boot)
                       for axis in ["env_steps", "wall_time_s"]}
        t["runs"] = [{k: r[k] for k in ["run", "seed", "status", "attempts", "final_return", "best_return",
                                        "env_steps", "wall_time_s", "error"]} | {"in_statistics": any(r is u for u in used)}
                     for r in rs]
        table.append(t)
    table.sort(key=lambda t: (not math.isfinite(t["final_return_mean"]),
                              -t["final_return_mean"] if math.isfinite(t["final_return_mean"]) else 0.0, t["config"]))
    for rank, t in enumerate(table, 1):
        t["rank"] = rank
    return table


def fmt(v, digits=2):
    return f"{v:.{digits}f}" if math.isfinite(v) else "-"


def with_ci(v, interval):
    return "-" if not math.isfinite(v) else f"{fmt(v)} [{fmt(interval[0])}, {fmt(interval[1])}]"


def markdown(table, runs):
    out = ["| rank | configuration | seeds (done/total) | final return [95 % CI] | IQM [95 % CI] | best return | "
           "env steps | wall s |",
           "|---|---|---|---|---|---|---|---|"]
    for t in table:
        others = ", ".join(f"{c} {s or '?'}" for s, c in t["status_counts"].items() if s != "done" and c)
        seeds = f"{t['seeds_done']}/{t['seeds_total']}" + (f", {others}" if others else "")
        out.append(f"| {t['rank']} | {t['label']} | {seeds} | {with_ci(t['final_return_mean'], t['final_return_ci'])} | "
                   f"{with_ci(t['iqm'], t['iqm_ci'])} | {fmt(t['best_return_mean'])} | {fmt(t['env_steps_mean'], 0)} | "
                   f"{fmt(t['wall_time_s_mean'], 1)} |")
    failed = [r for r in runs if r["status"] == "failed"]
    if failed:
        out += ["", f"failed runs ({len(failed)}):"]
        for r in failed:
            tries = f", {r['attempts']} attempt(s)" if r["attempts"] else ""
            err = r["error"] if len(r["error"]) <= 300 else r["error"][:297] + "..."
            out.append(f"- {r['run']} ({r['config'] or 'all seeds'}, seed {r['seed']}{tries}): {err or '(no error text)'}")
    return "\n".join(out) + "\n"


def plots(table, metric, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for name, axis, xlabel in [("sweep_return_vs_steps.png", "env_steps", "env steps"),
                               ("sweep_return_vs_time.png", "wall_time_s", "wall time (s)")]:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ns = set()
        for t in table:
            c = t["curves"][axis]
            if c is None:
                continue
            ns.add(c["runs"])
            line, = ax.plot(c["x"], c["mean"], label=t["label"])
            ax.fill_between(c["x"], c["ci_low"], c["ci_high"], color=line.get_color(), alpha=0.2, linewidth=0)
        seeds = "no" if not ns else str(min(ns)) if len(ns) == 1 else f"{min(ns)}-{max(ns)}"
        ax.set_title(f"{metric}: mean over {seeds} seed(s), 95 % bootstrap CI", fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        if ns:
            ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(os.path.join(out, name))
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths


def jsonable(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="the sweep directory (holds sweep.csv)")
    ap.add_argument("--out-dir", help="where to write the plots and sweep_summary.json (default: DIR)")
    ap.add_argument("--metric", default="episode_return_mean", help="metrics.csv column (default episode_return_mean)")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the bootstrap's numpy Generator (default 0)")
    a = ap.parse_args()
    if a.boot < 1:
        error("--boot: expected an integer >= 1")
    path, runs = read_sweep(a.dir)
    if not runs:
        error(f"{path}: no runs")
    load_runs(a.dir, runs, a.metric)
    table = summarise(runs, a.boot, a.seed)
    print(f"{path}: {len(runs)} run(s), {len(table)} configuration(s), {a.metric}")
    print(markdown(table, runs), end="")
    out = a.out_dir or a.dir
    os.makedirs(out, exist_ok=True)
    paths = plots(table, a.metric, out)
    summary = {"sweep": os.path.abspath(a.dir), "metric": a.metric, "boot": a.boot, "seed": a.seed,
               "configurations": table}
    paths.append(os.path.join(out, "sweep_summary.json"))
    with open(paths[-1], "w") as f:
        json.dump(jsonable(summary), f, indent=1)
        f.write("\n")
    print(f"wrote {', '.join(paths)}")


if __name__ == "__main__":
    main()
