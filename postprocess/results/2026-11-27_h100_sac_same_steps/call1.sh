#!/usr/bin/env bash
# Issue 30: one kernel uploads a MuJoCo step's results (instead of five copies), SAC's per-step
# Polyak inside the update graph; against the previous build (gmi_drl_base) in the same call.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30p.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name --format=csv,noheader; which nsys ncu; ls /usr/local/cuda/bin | tr '\n' ' '; echo
for t in test_mujoco test_offpolicy test_envs; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
for rep in 1 2; do for bin in gmi_drl_base gmi_drl; do
  n=sac_${bin}_$rep
  timeout 60 $B/$bin --config config/half_cheetah_sac.yaml --set train.total_env_steps=12000 --set checkpoint.interval=0 --run-dir $W/$n > $W/$n.log 2>&1
  echo "$n rc=$? $(python3 -c "
import csv; r=list(csv.DictReader(open('$W/$n/metrics.csv'))); at={int(float(x['env_steps'])): float(x['wall_time_s']) for x in r}
print('env-steps/s 5000-12000:', round(7000 / (at[12000] - at[5000]), 1), 'return', r[-1]['episode_return'] if 'episode_return' in r[-1] else '')")"
done; done
for bin in gmi_drl_base gmi_drl; do for v in "Humanoid-v5|2048|16|100" "Hopper-v5|64|1,16|1000" "HalfCheetah-v5|1|1|5000"; do
  IFS='|' read -r env n th st <<< "$v"; nm=env_${bin}_${env}_$n
  timeout 100 $B/$bin bench-env --name $env --num-envs $n --threads $th --steps $st --warmup 20 --json $W/$nm.json > $W/$nm.log 2>&1
  echo "$nm rc=$? $(python3 -c "import json; d=json.load(open('$W/$nm.json')); print([(r.get('threads'), round(r.get('env_steps_per_s', 0))) for r in d['results']])" 2>&1 | tail -1)"
done; done
echo "t=$(el)"
if which nsys > /dev/null; then
  timeout 120 nsys profile -o $W/sac_prof -t cuda,osrt --force-overwrite true $B/gmi_drl --config config/half_cheetah_sac.yaml \
    --set train.total_env_steps=8000 --set checkpoint.interval=0 --run-dir $W/sac_prof_run > $W/nsys.log 2>&1; echo "nsys rc=$? t=$(el)"
  timeout 120 nsys stats -r cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum -f csv -o $W/stats $W/sac_prof.nsys-rep > $W/nsys_stats.log 2>&1; echo "stats rc=$?"
  timeout 120 nsys export -t sqlite -o $W/sac_prof.sqlite $W/sac_prof.nsys-rep > /dev/null 2>&1; echo "export rc=$? t=$(el)"
  python3 - $W/sac_prof.sqlite > $W/timeline.txt 2>&1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
names = dict(c.execute("select id, value from StringIds"))
rows = []
for tab, kind in (("CUPTI_ACTIVITY_KIND_KERNEL", "K"), ("CUPTI_ACTIVITY_KIND_MEMCPY", "M"), ("CUPTI_ACTIVITY_KIND_MEMSET", "S")):
    try:
        q = "select start, end, " + ("shortName" if kind == "K" else "0") + " from " + tab
        rows += [(s, e, kind + ":" + (names.get(n, str(n)) if kind == "K" else tab[-6:])) for s, e, n in c.execute(q)]
    except Exception as ex: print("no", tab, ex)
rows.sort()
t_end = rows[-1][1]; t0 = t_end - 200_000_000  # the last 0.2 s: learning
win = [r for r in rows if r[0] >= t0]
busy = 0; last = t0; gaps = []
for s, e, n in win:
    if s > last: gaps.append((s - last, n))
    busy += max(0, e - max(s, last)); last = max(last, e)
print("gpu busy fraction over the last 0.2 s:", busy / (t_end - t0), "events", len(win))
gaps.sort(reverse=True)
import collections
cnt = collections.Counter(n for g, n in gaps if g > 20000)
print("gaps > 20 us before:", cnt.most_common(15))
print("gap total us", sum(g for g, n in gaps) / 1000)
api = []
try:
    for s, e, n in c.execute("select start, end, nameId from CUPTI_ACTIVITY_KIND_RUNTIME where start >= ?", (t0,)):
        api.append((s, e, names.get(n, str(n))))
except Exception as ex: print("no runtime", ex)
api.sort()
# print one window of 1.5 ms of both streams
w0 = win[len(win) // 2][0]
for s, e, n in sorted([(s, e, "GPU " + n) for s, e, n in win if w0 <= s < w0 + 1_500_000] + [(s, e, "API " + n) for s, e, n in api if w0 <= s < w0 + 1_500_000]):
    print(f"{(s - w0) / 1000:9.1f} {(e - s) / 1000:8.1f} {n[:90]}")
PY
  head -c 20000 $W/timeline.txt
fi
echo "t=$(el)"
SAC=.peers/sac bash postprocess/peers/sac_peers.sh $B/gmi_drl $W/sac > $W/sac.log 2>&1; echo "sac_peers rc=$? t=$(el)"; tail -9 $W/sac.log
PYTHONPATH=/tmp/site timeout 200 python3 tests/envs/compare_mujoco.py --gmi $B/gmi_drl --env-list $B/gmi_env_list --workdir $W/cmp --steps 1000 --envs 3 > $W/cmp.log 2>&1; echo "compare_mujoco rc=$? t=$(el)"; tail -5 $W/cmp.log
} 2>&1 | tee $OUT/log.txt
rm -rf $W/sac/peers/*/ $W/sac_*/checkpoints $W/cmp $W/*.nsys-rep $W/*.sqlite 2>/dev/null
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
