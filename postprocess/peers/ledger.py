#!/usr/bin/env python3
"""The comparison ledger, postprocess/results/peers.json: one object per side-by-side figure
(date, device, workload, precision, unit, peer, peer_value, gmi_drl_value, same_call, command).

  # append: gmi_drl's bench JSON beside a peer's JSON lines, matched by num_envs (and hidden widths)
  python3 postprocess/peers/ledger.py add --gmi OUT/gmi_cartpole_tf32.json --peer OUT/pjr_cartpole_default.jsonl \
      --workload ppo/CartPole-v1/64x64 --precision "tf32 vs JAX default (TF32)" --peer-name "PureJaxRL (JAX 0.11.2)" \
      --command "postprocess/peers/ppo_peers.sh ... cartpole"
  # merge: append another file's comparisons (a device call's OUT/peers_new.json)
  python3 postprocess/peers/ledger.py merge OUT/peers_new.json
  # render: the ledger as markdown tables, one per workload family; --readme fills the block of
  # postprocess/results/README.md that holds them (a test checks that block is current)
  python3 postprocess/peers/ledger.py render [--since 2026-11-26] [--readme postprocess/results/README.md]

Older entries stay; `add` only appends.  A peer line matches a gmi_drl result when its num_envs is
equal and, where both say, its hidden widths (e.g. [256, 256] or "256x256") too.
"""
import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LEDGER = os.path.join(HERE, "..", "results", "peers.json")


def read_json_lines(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def widths(h):
    if h is None:
        return None
    if isinstance(h, str):
        return "x".join(p for p in h.replace(",", "x").split("x") if p)
    return "x".join(str(int(x)) for x in h)


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, list):
        sys.exit(f"{path}: expected a JSON list of comparisons")
    return data


def cmd_add(a):
    with open(a.gmi) as f:
        g = json.load(f)
    peers = [r for r in read_json_lines(a.peer) if "num_envs" in r and r.get(a.peer_key) is not None]
    hidden = widths(a.hidden) if a.hidden else None
    ledger = load(a.ledger)
    added = 0
    for r in g.get("results", []):
        n = r["num_envs"]
        match = [p for p in peers if p["num_envs"] == n and (hidden is None or p.get("hidden") is None
                                                              or widths(p["hidden"]) == hidden)]
        if not match:
            print(f"ledger: no peer line for num_envs {n} in {a.peer}", file=sys.stderr)
            continue
        p = match[-1]
        entry = {
            "date": a.date or datetime.date.today().isoformat(),
            "device": a.device or g.get("device", ""),
            "workload": f"{a.workload}/{n}",
            "precision": a.precision,
            "unit": a.unit,
            "peer": a.peer_name,
            "peer_value": round(float(p[a.peer_key]), 1),
            "gmi_drl_value": round(float(r[a.gmi_key]), 1),
            "same_call": not a.not_same_call,
            "command": a.command,
        }
        if r.get("kernels"):
            entry["gmi_drl_kernels"] = r["kernels"]
        ledger.append(entry)
        added += 1
        print(f"{entry['workload']:<44} {entry['precision']:<28} peer {entry['peer_value']:>14,.0f}  "
              f"gmi_drl {entry['gmi_drl_value']:>14,.0f}  {entry['gmi_drl_value'] / entry['peer_value']:.2f}x")
    with open(a.ledger, "w") as f:
        json.dump(ledger, f, indent=1)
        f.write("\n")
    print(f"ledger: {added} comparisons appended to {a.ledger}")


def cmd_merge(a):
    ledger = load(a.ledger)
    new = load(a.file)
    with open(a.ledger, "w") as f:
        json.dump(ledger + new, f, indent=1)
        f.write("\n")
    print(f"ledger: {len(new)} comparisons from {a.file} appended to {a.ledger}")


def num(v):
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"


BEGIN, END = "<!-- rendered from peers.json by postprocess/peers/ledger.py render --readme: begin -->", \
    "<!-- rendered from peers.json: end -->"


def cmd_render(a):
    if a.readme:
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            render(a)
        with open(a.readme) as f:
            text = f.read()
        if BEGIN not in text or END not in text:
            sys.exit(f"{a.readme}: no '{BEGIN}' ... '{END}' block to fill")
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        with open(a.readme, "w") as f:
            f.write(head + BEGIN + "\n" + buf.getvalue().strip("\n") + "\n" + END + tail)
        print(f"ledger: {a.readme} updated")
        return
    render(a)


def render(a):
    rows = [e for e in load(a.ledger) if not a.since or e["date"] >= a.since]
    families = {}
    for e in rows:
        algo, what = (e["workload"].split("/") + [""])[:2]
        families.setdefault(f"{algo}/{what.split('-')[0]}", []).append(e)  # ppo/Tag-tc5 -> ppo/Tag
    for fam, es in families.items():
        print(f"\n#### {fam}\n")
        print("| date | workload | precision | peer | peer value | gmi_drl value | gmi_drl faster by | unit | same call |")
        print("|---|---|---|---|---|---|---|---|---|")
        for e in es:
            g, p = e["gmi_drl_value"], e["peer_value"]
            lower = "lower is better" in e["unit"]
            num_, den = (p, g) if lower else (g, p)
            ratio = f"{num_ / den:.2f}x" if den else "n/a"
            print(f"| {e['date']} | {e['workload']} | {e['precision']} | {e['peer']} | {num(p)} | "
                  f"{num(g)} | {ratio} | {e['unit']} | "
                  f"{'yes' if e['same_call'] else 'no'} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ledger", default=LEDGER)
    sub = ap.add_subparsers(dest="cmd", required=True)
    add = sub.add_parser("add", help="append comparisons")
    add.add_argument("--gmi", required=True, help="gmi_drl bench --json output")
    add.add_argument("--peer", required=True, help="the peer's JSON lines (num_envs and a value per line)")
    add.add_argument("--workload", required=True, help="e.g. ppo/SyntheticHumanoid-v0/256x256 (num_envs is appended)")
    add.add_argument("--hidden", default="", help="match peer lines of these hidden widths, e.g. 256x256")
    add.add_argument("--precision", required=True)
    add.add_argument("--peer-name", required=True)
    add.add_argument("--command", required=True)
    add.add_argument("--unit", default="env-steps/s, end to end (rollout and update)")
    add.add_argument("--peer-key", default="steps_per_s")
    add.add_argument("--gmi-key", default="env_steps_per_s")
    add.add_argument("--device", default="")
    add.add_argument("--date", default="")
    add.add_argument("--not-same-call", action="store_true")
    render = sub.add_parser("render", help="print the ledger as markdown tables")
    render.add_argument("--since", default="")
    render.add_argument("--readme", default="", help="write the tables into this file's rendered block instead")
    merge = sub.add_parser("merge", help="append another ledger file's comparisons")
    merge.add_argument("file")
    a = ap.parse_args()
    {"add": cmd_add, "merge": cmd_merge, "render": cmd_render}[a.cmd](a)


if __name__ == "__main__":
    main()
