#!/usr/bin/env bash
# The headline experiment on one H100: PPO on DeviceAnt-v5 (config/ant_device_ppo.yaml) with 1, 2,
# 4, 8 GMIs per GPU, each with the 4096 envs one GMI learns with, under MPS and time-sliced; the
# same 4096 envs split over GMIs; one GMI with the GMIs' total envs; tune's choice; ncu's SM
# occupancy of the physics kernel.  Every figure `gmi_drl bench` (rollout + update, end to end).
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36base.tar.xz -C /tmp/b lib assets && tar xJf .gpu/i36z.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
CFG=config/ant_device_ppo.yaml
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
row() { grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $1 | cut -c12- | head -1; }
gmis() {  # NAME K BACKEND ENVS_PER_GMI ITERATIONS
  local n=$1 k=$2 be=$3 e=$4 it=$5
  timeout 120 mpiexec -n $k --oversubscribe --bind-to none $B/gmi_drl bench --config $CFG --num-envs $((e*k)) --iterations $it --warmup 3 --set gmi.backend=$be --json $W/${n}.json > $W/${n}.log 2>&1 || echo "$n failed"
  echo "$n: $(row $W/${n}.log)"
}
echo "== one GMI"
for e in 4096 8192 16384 32768; do
  timeout 90 $B/gmi_drl bench --config $CFG --num-envs $e --iterations $((24 * 4096 / e + 4)) --warmup 3 --json $W/g1_$e.json > $W/g1_$e.log 2>&1 || echo "g1 $e failed"
  echo "g1 x $e: $(row $W/g1_$e.log)"
done
echo "== GMIs x 4096 envs each"
for k in 2 4 8; do gmis mps_g${k}_4096 $k mps 4096 $((24 / k + 6)); done
for k in 2 4; do gmis none_g${k}_4096 $k none 4096 $((16 / k + 4)); done
echo "== 4096 envs split over GMIs (MPS)"
for k in 2 4; do gmis mps_g${k}_split $k mps $((4096 / k)) 16; done
echo "== tune"
timeout 200 $B/gmi_drl tune --config $CFG --max-gmis-per-gpu 8 --env-counts 1024..8192 --probe-iterations 8 --probe-warmup 2 --workdir $W/tune --json $OUT/tune.json > $W/tune.log 2>&1; echo "tune rc=$?"
grep -a -A16 "samples/s/GPU" $W/tune.log | cut -c12- | head -18; grep -a -i "chose\|choice" $W/tune.log | cut -c12- | tail -2
echo "== ncu: the Ant physics kernel"
for e in 4096 16384 65536; do
  timeout 60 ncu --kernel-name-base mangled --kernel-name regex:step_kernel --launch-count 1 --metrics sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__occupancy_limit_registers,launch__registers_per_thread,sm__maximum_warps_per_active_cycle_pct,gpu__time_duration.sum,launch__waves_per_multiprocessor $B/bench_physics --steps 1 --cases ant.xml:full --envs $e > $W/ncu_$e.txt 2>&1
  echo "envs $e:"; grep -E "sm__|launch__|gpu__time" $W/ncu_$e.txt | sed 's/  */ /g' | head -8
done
python3 - <<'PY'
import json, glob, os
W = os.environ["OUT"] + "/w"
out = {}
for f in sorted(glob.glob(W + "/*.json")):
    j = json.load(open(f))
    if "results" not in j: continue
    r = j["results"][0]
    out[os.path.basename(f)[:-5]] = {"device": j["device"], "env": j["env"], "gmis": j.get("gmis"), "backend": j.get("backend"),
        "timed_iterations": j.get("timed_iterations"),
        **{k: r.get(k) for k in ("num_envs", "envs_per_gmi", "env_steps_per_s", "iteration_ms", "gpu_util_pct", "gpu_mem_mib")}}
json.dump(out, open(os.environ["OUT"] + "/gmis.json", "w"), indent=1)
PY
cd $W && tar czf $OUT/logs.tgz *.log tune.log ncu_*.txt 2>/dev/null; rm -rf $W
