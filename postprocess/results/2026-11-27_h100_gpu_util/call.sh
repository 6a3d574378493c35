#!/usr/bin/env bash
# Issue 36, GPU utilisation study (the papers' Figure 1 for gmi_drl's workloads): one GMI's
# utilisation against its envs, every point timed for about 2.5 s (the driver samples every
# ~0.19 s); GMIs per GPU with small per-GMI work (MPS and time-sliced) beside one GMI with the same
# envs; tune's table with long probes.  One H100.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i36c.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== unit"; timeout 60 $B/test_gpu_monitor 2>&1 | grep -E "GpuMonitor:|FAIL|PASSED|Failure" | head -8
row() { grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $1 | cut -c12- | head -1; }
# curve NAME CONFIG "envs:iterations ..." [extra args]: one bench per point (its own window)
curve() {
  local n=$1 cfg=$2 pts=$3; shift 3
  echo "== $n"
  for p in $pts; do
    local e=${p%:*} it=${p#*:}
    timeout 120 $B/gmi_drl bench --config $cfg --num-envs $e --iterations $it --warmup 3 "$@" --json $W/${n}_$e.json > $W/${n}_$e.log 2>&1 || echo "$n $e failed"
    row $W/${n}_$e.log
  done
}
curve cp config/bench_cartpole_ppo.yaml "64:500 256:500 1024:450 2048:350 4096:250 8192:160 16384:100 65536:30"
curve hum config/bench_synthetic_humanoid_ppo.yaml "256:120 1024:120 2048:100 4096:85 16384:35 65536:10"
curve hop config/hopper_ppo_many_envs.yaml "32:80 64:70 128:45 256:20 512:10 1024:6" --set env.threads=16
curve hc config/half_cheetah_ppo_many_envs.yaml "64:80 256:30 1024:9" --set env.threads=16
timeout 120 $B/gmi_drl bench --config config/bench_humanoid_sac.yaml --mode update --num-envs 1 --iterations 8000 --warmup 300 --json $W/sacu_1.json > $W/sacu_1.log 2>&1; echo "== sacu"; row $W/sacu_1.log
gmis() {  # NAME K BACKEND CONFIG ENVS_PER_GMI ITERATIONS [extra]
  local n=$1 k=$2 be=$3 cfg=$4 e=$5 it=$6; shift 6
  timeout 150 mpiexec -n $k --oversubscribe --bind-to none $B/gmi_drl bench --config $cfg --num-envs $((e*k)) --iterations $it --warmup 3 --set gmi.backend=$be "$@" --json $W/${n}_g${k}_$be.json > $W/${n}_g${k}_$be.log 2>&1 || echo "$n $k $be failed"
  echo "$n x$k $be: $(row $W/${n}_g${k}_$be.log)"
}
echo "== GMIs per GPU"
for k in 2 4 8; do gmis cp1024 $k mps config/bench_cartpole_ppo.yaml 1024 $((250 / k + 120)); done
for k in 2 4 8; do gmis cp1024 $k none config/bench_cartpole_ppo.yaml 1024 $((120 / k + 20)); done
for k in 2 4; do gmis hum1024 $k mps config/bench_synthetic_humanoid_ppo.yaml 1024 80; done
for k in 2 4 8; do gmis hop64 $k mps config/hopper_ppo_many_envs.yaml 64 $((60 / k + 8)); done
echo "== tune (200 timed iterations a probe)"
timeout 240 $B/gmi_drl tune --config config/bench_cartpole_ppo.yaml --max-gmis-per-gpu 4 --env-counts 1024..8192 --probe-iterations 200 --probe-warmup 3 --exhaustive --workdir $W/tune --json $W/tune.json > $W/tune.log 2>&1; echo "tune rc=$?"
grep -a -A18 "samples/s/GPU" $W/tune.log | cut -c12- | head -20
python3 - <<'PY'
import json, glob, os
W = os.environ["OUT"] + "/w"
out = {}
for f in sorted(glob.glob(W + "/*.json")):
    j = json.load(open(f))
    if "results" not in j: continue
    r = j["results"][0]
    out[os.path.basename(f)[:-5]] = {"device": j["device"], "env": j["env"], "mode": j["mode"], "gmis": j.get("gmis"), "backend": j.get("backend"),
        "timed_iterations": j.get("timed_iterations"),
        **{k: r.get(k) for k in ("num_envs", "envs_per_gmi", "env_steps_per_s", "updates_per_s", "iteration_ms", "gpu_util_pct", "gpu_util_samples", "gpu_mem_mib", "memory_per_gmi", "kernels")}}
json.dump(out, open(os.environ["OUT"] + "/utilisation.json", "w"), indent=1)
PY
cp $W/tune.json $OUT/tune.json 2>/dev/null
cd $W && tar czf $OUT/logs.tgz *.log tune.log 2>/dev/null; rm -rf $W
