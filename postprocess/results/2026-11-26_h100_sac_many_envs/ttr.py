#!/usr/bin/env python3
"""Time to return of each run dir's metrics.csv: first wall time / env steps where the mean of 5
consecutive rows' episode_return_mean reaches each threshold; final (last 10 %) and best."""
import csv, glob, sys
ths = [float(x) for x in sys.argv[1].split(",")]
for m in sorted(glob.glob(sys.argv[2] + "/**/metrics.csv", recursive=True)):
    rows = list(csv.DictReader(open(m)))
    r = [(float(x["wall_time_s"]), int(float(x["env_steps"])), float(x["episode_return_mean"])) for x in rows
         if x["episode_return_mean"] not in ("", "nan")]
    if not r:
        print(m, "no returns"); continue
    sm = [(r[i][0], r[i][1], sum(v for _, _, v in r[i - 4:i + 1]) / 5) for i in range(4, len(r))]
    first = {th: next(((t, s) for t, s, v in sm if v >= th), None) for th in ths}
    last = r[-max(1, len(r) // 10):]
    upd = sum(int(float(x.get("updates", 0) or 0)) for x in rows)
    print(f"{m.split('/')[-3]}/{m.split('/')[-2]}: {r[-1][0]:.0f} s, {r[-1][1]/1e6:.2f} M steps, {r[-1][1]/r[-1][0]:.0f} steps/s, "
          f"{upd/1e6:.2f} M updates, final {sum(v for _, _, v in last)/len(last):.0f}, best5 {max((v for _, _, v in sm), default=float('nan')):.0f}; "
          + ", ".join(f"{th:.0f}: {'-' if x is None else f'{x[0]:.0f} s/{x[1]/1e6:.2f} M'}" for th, x in first.items()))
