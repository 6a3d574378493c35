#!/usr/bin/env bash
# Issues 33 and 37: training under dp and e-at on one and two GPUs of one machine (samples/s, GPU
# util, memory), e-at learning across two GPUs, and tune choosing between dp and e-at.
#   RUNS="name|np|timeout|gpus|cpus|args;..." [LEARN=1] [TUNE=1] bash .gpu/i37t.sh
#   gpus: CUDA_VISIBLE_DEVICES (e.g. 0 or 0,1); cpus: taskset list (e.g. 0-15) or all
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i37t.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w37; rm -rf $W; mkdir -p $W
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none"
{
nvidia-smi --query-gpu=index,name --format=csv,noheader; nproc; nvidia-smi topo -m | head -4
IFS=';' read -ra RS <<< "${RUNS:-}"
for r in "${RS[@]}"; do
  IFS='|' read -r name np lim gpus cpus args <<< "$r"
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 250 > $W/$name.smi &
  smi=$!
  pre=""; [ "$cpus" = all ] || pre="taskset -c $cpus"
  t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$gpus timeout -s TERM $lim $pre $MPI -x CUDA_VISIBLE_DEVICES -np $np $B/gmi_drl $args \
      --run-dir $W/$name --set train.log_interval=1 --set checkpoint.at_end=false --set checkpoint.interval=0 > $W/$name.log 2>&1
  echo "$name rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))") t=$(el)"
  kill $smi; wait $smi 2>/dev/null
  grep -aE "error|fatal|e-at:|gradient reduction" $W/$name.log | head -4 | cut -c1-250
done
if [ -n "${LEARN:-}" ]; then
  # PPO CartPole under e-at on both GPUs: 2 trainers (one per GPU) x 3 simulators x 4 envs.
  timeout 150 $MPI -np 8 $B/gmi_drl --config config/cartpole_ppo.yaml --set mapping.template=e-at --set env.num_envs=4 \
      --set train.total_env_steps=500000 --run-dir $W/learn_eat2 > $W/learn_eat2.log 2>&1
  echo "learn_eat2 rc=$? t=$(el)"; grep -aE "error|gradient reduction|e-at:" $W/learn_eat2.log | head -3 | cut -c1-250
  python3 -c "import csv; r=list(csv.DictReader(open('$W/learn_eat2/metrics.csv'))); print('learn_eat2 last return', r[-1]['episode_return_mean'], 'best', max(float(x['episode_return_mean'] or 0) for x in r), 'rows', len(r))"
fi
if [ -n "${TUNE:-}" ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 200 $B/gmi_drl tune --config config/bench_cartpole_ppo.yaml --templates dp,e-at \
      --max-gmis-per-gpu 4 --env-counts 4096,8192 --probe-iterations 3 --probe-warmup 1 --workdir $W/tune \
      --json $W/tune.json --out $W/tuned.yaml > $W/tune.log 2>&1
  echo "tune rc=$? t=$(el)"; tail -14 $W/tune.log | cut -c1-220; cat $W/tuned.yaml
fi
python3 - "$W" <<'PY'
import csv, json, os, sys, statistics as st
W = sys.argv[1]
out = {}
for f in sorted(os.listdir(W)):
    if not f.endswith(".smi") or not os.path.exists(os.path.join(W, f[:-4], "metrics.csv")):
        continue
    n = f[:-4]
    rows = list(csv.DictReader(open(os.path.join(W, n, "metrics.csv"))))
    use = rows[2:] if len(rows) > 4 else rows[1:]
    sps = [float(r["samples_per_s"]) for r in use]
    upd = [float(r["updates"]) / float(r["time_iteration_s"]) for r in use]
    smi = [l.split(",") for l in open(os.path.join(W, f)) if l.count(",") == 2]
    util = {}
    mem = {}
    for i, u, m in smi:
        util.setdefault(i.strip(), []).append(float(u)); mem.setdefault(i.strip(), []).append(float(m))
    busy = {i: st.mean(v[4:]) for i, v in util.items() if len(v) > 4 and max(v) > 0}
    out[n] = {"iterations": len(rows), "measured": len(use), "samples_per_s_median": st.median(sps) if sps else None,
              "updates_per_s": st.median(upd) if upd else None, "gpu_util_mean": busy,
              "gpu_mem_max_mib": {i: max(v) for i, v in mem.items()},
              "last_return": rows[-1]["episode_return_mean"] if rows else None,
              "rollout_s": st.median(float(r["time_rollout_s"]) for r in use) if use else None,
              "update_s": st.median(float(r["time_update_s"]) for r in use) if use else None}
    print(f"{n:16s} {out[n]['samples_per_s_median'] or 0:12.0f} samples/s {out[n]['updates_per_s'] or 0:8.1f} upd/s "
          f"util {json.dumps({k: round(v) for k, v in busy.items()})} rollout {out[n]['rollout_s'] or 0:.3f} s "
          f"update {out[n]['update_s'] or 0:.3f} s ({len(use)} it)")
json.dump(out, open(os.path.join(W, "summary.json"), "w"), indent=1)
PY
cp $W/summary.json $OUT/; [ -f $W/tune.json ] && cp $W/tune.json $OUT/
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz --exclude="*.smi" . && ls -la $OUT
