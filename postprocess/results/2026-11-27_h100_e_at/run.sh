#!/usr/bin/env bash
# Issue 33: training under dp vs e-at on one H100 machine (samples/s, GPU util, memory).
#   RUNS="name|np|timeout|args;..." bash .gpu/i33c.sh
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i33c.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w33c; rm -rf $W; mkdir -p $W
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none"
{
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
if [ -n "${TESTS:-}" ]; then
  for m in same halves; do
    GMI_TEST_MUJOCO=1 timeout 200 python3 tests/cli/check_templates.py $m --gmi $B/gmi_drl --mpiexec mpirun --workdir $W/t_$m 2>&1 | grep -E "FAIL|identical|holds|ok$" | cut -c1-200
  done
fi
IFS=';' read -ra RS <<< "$RUNS"
for r in "${RS[@]}"; do
  IFS='|' read -r name np lim args <<< "$r"
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 250 > $W/$name.smi &
  smi=$!
  t0=$(date +%s.%N)
  timeout -s TERM $lim $MPI -np $np $B/gmi_drl $args --run-dir $W/$name --set train.log_interval=1 \
      --set checkpoint.at_end=false --set checkpoint.interval=0 > $W/$name.log 2>&1
  echo "$name rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")"
  kill $smi; wait $smi 2>/dev/null
  grep -E "error|e-at:" $W/$name.log | head -3 | cut -c1-250; grep -A9 "layout:" $W/$name.log | grep -E "^ +[0-9]+ +0 +0 " | head -8
done
python3 - "$W" <<'PY'
import csv, json, os, sys, statistics as st
W = sys.argv[1]
out = {}
for f in sorted(os.listdir(W)):
    if not f.endswith(".log") or not os.path.exists(os.path.join(W, f[:-4], "metrics.csv")):
        continue
    n = f[:-4]
    rows = list(csv.DictReader(open(os.path.join(W, n, "metrics.csv"))))
    use = rows[2:] if len(rows) > 4 else rows[1:]
    sps = [float(r["samples_per_s"]) for r in use]
    upd = [float(r["updates"]) / float(r["time_iteration_s"]) for r in use]
    smi = [l.split(",") for l in open(os.path.join(W, n + ".smi")) if "," in l]
    util = [float(a) for a, b in smi]
    mem = [float(b) for a, b in smi]
    busy = [u for u in util if u > 0]
    out[n] = {"iterations": len(rows), "measured": len(use), "samples_per_s_median": st.median(sps) if sps else None,
              "samples_per_s_mean": st.mean(sps) if sps else None, "updates_per_s": st.median(upd) if upd else None,
              "gpu_util_mean": st.mean(util[4:]) if len(util) > 4 else None, "gpu_mem_max_mib": max(mem) if mem else None,
              "last_return": rows[-1]["episode_return_mean"] if rows else None,
              "rollout_s": st.median(float(r["time_rollout_s"]) for r in use) if use else None,
              "update_s": st.median(float(r["time_update_s"]) for r in use) if use else None}
    print(f"{n:28s} {out[n]['samples_per_s_median'] or 0:12.0f} samples/s  {out[n]['updates_per_s'] or 0:8.1f} upd/s  "
          f"util {out[n]['gpu_util_mean'] or 0:5.1f} %  mem {out[n]['gpu_mem_max_mib'] or 0:7.0f} MiB  rollout {out[n]['rollout_s'] or 0:.3f} s update {out[n]['update_s'] or 0:.3f} s  ({len(use)} it)")
json.dump(out, open(os.path.join(W, "summary.json"), "w"), indent=1)
PY
cp $W/summary.json $OUT/
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz --exclude="*.smi" . && ls -la $OUT
