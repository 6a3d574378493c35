#!/usr/bin/env python3
"""The rates of a `sac_peers.sh` run, over the same env steps for every program.

  python3 postprocess/peers/sac_rates.py OUTDIR [--device NAME] [--cpu MODEL]

Reads OUTDIR/gmi_<variant>/metrics.csv (gmi_drl's runs) and OUTDIR/peers/results.jsonl (CleanRL's
and LeanRL's, from the harness's bench_util.py) and writes OUTDIR/sac_sps.json (every rate in every
window), OUTDIR/gmi_sac.json and OUTDIR/peer_<name>.jsonl (the primary rates, for
`ledger.py add`).  The primary window is [learning_starts + 1000, end): steady state, the same steps
for all three programs (gmi_drl's metrics rows come every 1000 steps; the peers' `sps_after_warmup`
is that window), so neither gmi_drl's graph capture nor LeanRL's torch.compile is in it.  Also kept:
[learning_starts, end) for everyone (captures and compiles included), and the peers' own `sps`
window [learning_starts + 3, end).  Exit status 1 when a rate is missing.
"""
import argparse
import csv
import json
import os
import sys

VARIANTS = ("graphs_on", "graphs_off", "graphs_on_epilogues_off")


def gmi_rates(run_dir, learning_starts, steps):
    """gmi_drl's rates over [learning_starts + 1000, steps) and [learning_starts, steps); its metrics
    rows must fall on exactly those steps (else the windows would not be the peers')."""
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    at = {int(float(r["env_steps"])): float(r["wall_time_s"]) for r in rows}

    def over(lo):
        missing = [k for k in (lo, steps) if k not in at]
        if missing:
            raise SystemExit(f"sac_rates: {run_dir}/metrics.csv has no row at env step {missing[0]} "
                             "(a run cut short, or another sac.num_steps)")
        return (steps - lo) / (at[steps] - at[lo])
    return {"steady": over(learning_starts + 1000), "after_learning_starts": over(learning_starts)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--device", help="default: the device the peers' results name")
    ap.add_argument("--cpu", help="the machine's CPU model (lscpu), recorded beside the rates")
    a = ap.parse_args()
    out = a.outdir
    peers = [json.loads(l) for l in open(os.path.join(out, "peers", "results.jsonl")) if l.strip()]
    for p in peers:
        if not p.get("completed", False):
            print(f"sac_rates: {p['bench']} did not finish ({p.get('env_steps')} steps): left out", file=sys.stderr)
    peers = [p for p in peers if p.get("completed", False)]
    if not peers:
        print("sac_rates: no finished peer run", file=sys.stderr)
        return 1
    learning_starts, steps = int(peers[0]["learning_starts"]), int(peers[0]["env_steps"])
    if any(int(p["env_steps"]) != steps or int(p["learning_starts"]) != learning_starts for p in peers):
        print("sac_rates: the peers ran different steps", file=sys.stderr)
        return 1
    rates, windows = {}, {}
    for v in VARIANTS:
        r = gmi_rates(os.path.join(out, f"gmi_{v}"), learning_starts, steps)
        name = f"gmi_drl {v.replace('_', ' ')}"
        rates[name] = r["steady"]
        windows[name] = {"steady": r["steady"], "after_learning_starts": r["after_learning_starts"]}
    versions = {}
    for p in peers:
        name = p["bench"].replace("_sac", "")
        if p.get("sps_after_warmup") is None:
            print(f"sac_rates: no steady-state rate for {name} in {out}/peers/results.jsonl", file=sys.stderr)
            continue
        rates[name] = p["sps_after_warmup"]
        windows[name] = {"steady": p["sps_after_warmup"], "after_learning_starts": p.get("sps_after_learning_starts"),
                         "own_window": p.get("sps"), "own_window_steps": p.get("timed_window")}
        versions = p.get("versions", versions)
    missing = [k for k in ("cleanrl", "leanrl") if k not in rates]
    if missing:
        print(f"sac_rates: no rate for {', '.join(missing)}", file=sys.stderr)
        return 1
    device = a.device or peers[0].get("device", "")
    summary = {"device": device, "cpu": a.cpu, "workload": "sac/HalfCheetah-v5/1 env", "steps": steps,
               "learning_starts": learning_starts, "versions": versions,
               "unit": f"env-steps/s over steps {learning_starts + 1000}-{steps} (the same steps for every program)",
               "rates": rates, "windows": windows}
    json.dump(summary, open(os.path.join(out, "sac_sps.json"), "w"), indent=1)
    for k, v in rates.items():
        print(f"{k:<34} {v:10.1f} env-steps/s   ({learning_starts}-{steps}: {windows[k]['after_learning_starts'] or 0:.1f})")
    json.dump({"device": device, "results": [{"num_envs": 1, "env_steps_per_s": rates["gmi_drl graphs on"]}]},
              open(os.path.join(out, "gmi_sac.json"), "w"))
    for k in ("cleanrl", "leanrl"):
        with open(os.path.join(out, f"peer_{k}.jsonl"), "w") as f:
            f.write(json.dumps({"num_envs": 1, "steps_per_s": rates[k]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
