#!/usr/bin/env python3
"""Markdown tables of `gmi_drl bench-reduce` results: latency (us) per strategy and buffer size,
one table per file, with the strategy `auto` picked at each size.

Usage: postprocess/reduce_table.py RESULT.json [RESULT.json ...]
"""
import json
import sys


def table(path):
    with open(path) as f:
        d = json.load(f)
    sizes = sorted({r["floats"] for r in d["results"]})
    strategies = list(dict.fromkeys(r["strategy"] for r in d["results"]))
    lat = {(r["strategy"], r["floats"]): r["latency_us"] for r in d["results"]}
    dev = d["device"]
    device = dev.split(": ", 1)[1].split(",")[0] if dev.startswith("CUDA") else dev
    out = [f"{device}: {d['gmis']} GMIs, {d['gpus']} GPU(s), GMIs per GPU {d['gmis_per_gpu']}, "
           f"backend {d['backend']} ({path})", "",
           "| strategy | " + " | ".join(f"{n:,} floats" for n in sizes) + " |",
           "|---|" + "---:|" * len(sizes)]
    for s in strategies:
        out.append(f"| {s} | " + " | ".join(f"{lat[(s, n)]:.1f}" if (s, n) in lat else "-" for n in sizes) + " |")
    picks = {a["floats"]: a["choice"] for a in d.get("auto", [])}
    if picks:
        out.append("| auto picks | " + " | ".join(picks.get(n, "-") for n in sizes) + " |")
    return "\n".join(out)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    print("\n\n".join(table(p) for p in paths))


if __name__ == "__main__":
    main(sys.argv[1:])
