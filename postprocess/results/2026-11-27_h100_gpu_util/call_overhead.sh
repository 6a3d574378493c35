#!/usr/bin/env bash
# Issue 36, GPU utilisation with the monitor's own thread: its test; one GMI's utilisation against
# its envs (the papers' Figure 1 for gmi_drl's workloads); GMIs per GPU with small per-GMI work,
# MPS and time-sliced; tune's table; training runs' columns; the training speed against the
# previous build (eca783e, no monitor), alternating.  One H100.
set -u
rm -rf /tmp/b /tmp/o; mkdir -p /tmp/b /tmp/o && tar xJf .gpu/i36b.tar.xz -C /tmp/b && tar xJf .gpu/i36old.tar.xz -C /tmp/o
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== unit"; timeout 60 $B/test_gpu_monitor 2>&1 | grep -E "GpuMonitor:|OK|FAIL|PASSED|Failure|Expected|Which|actual" | head -20
bench() {  # name, then the command
  local n=$1; shift
  timeout 240 "$@" --json $W/$n.json > $W/$n.log 2>&1; echo "== $n rc=$?"
  grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $W/$n.log | cut -c12- | head -12
}
echo "== one GMI: utilisation against envs"
bench cp1 $B/gmi_drl bench --config config/bench_cartpole_ppo.yaml --num-envs 64,256,1024,4096,16384,65536 --iterations 40 --warmup 5
bench hum1 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 256,1024,4096,16384,65536 --iterations 8 --warmup 2
bench hop1 $B/gmi_drl bench --config config/hopper_ppo_many_envs.yaml --num-envs 32,64,256,1024 --iterations 4 --warmup 1 --set env.threads=16
bench hc1 $B/gmi_drl bench --config config/half_cheetah_ppo_many_envs.yaml --num-envs 64,256,1024 --iterations 4 --warmup 1 --set env.threads=16
bench sacu $B/gmi_drl bench --config config/bench_humanoid_sac.yaml --mode update --num-envs 1 --iterations 2000 --warmup 200
echo "== GMIs per GPU, 1024 CartPole envs / 1024 SyntheticHumanoid envs per GMI, MPS and time-sliced"
for k in 2 4 8; do
  for be in mps none; do
    bench cp1024_g${k}_$be mpiexec -n $k --oversubscribe --bind-to none $B/gmi_drl bench --config config/bench_cartpole_ppo.yaml --num-envs $((1024*k)) --iterations 40 --warmup 5 --set gmi.backend=$be
  done
done
for k in 2 4; do
  bench hum1024_g${k}_mps mpiexec -n $k --oversubscribe --bind-to none $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs $((1024*k)) --iterations 8 --warmup 2 --set gmi.backend=mps
done
echo "== tune"
timeout 200 $B/gmi_drl tune --config config/bench_cartpole_ppo.yaml --max-gmis-per-gpu 4 --env-counts 1024..8192 --probe-iterations 10 --probe-warmup 3 --exhaustive --workdir $W/tune --json $W/tune.json > $W/tune.log 2>&1; echo "tune rc=$?"
grep -a -A14 "samples/s/GPU" $W/tune.log | cut -c12- | head -16
echo "== training runs: metrics.csv's GPU columns"
train() { local n=$1; shift; timeout 150 "$@" --run-dir $W/$n > $W/$n.log 2>&1; echo "$n rc=$? $(grep -a 'done:' $W/$n.log | cut -c12-250)"; }
train tcp $B/gmi_drl --config config/cartpole_ppo.yaml --set env.num_envs=4096 --set train.total_env_steps=20000000
train thop $B/gmi_drl --config config/hopper_ppo_many_envs.yaml --set train.total_env_steps=300000
echo "== training speed, this build against eca783e (no monitor), CartPole 4096 envs, alternating"
for i in 1 2 3; do
  train new$i $B/gmi_drl --config config/cartpole_ppo.yaml --set env.num_envs=4096 --set train.total_env_steps=30000000 --set checkpoint.at_end=false
  train old$i /tmp/o/bin/gmi_drl --config config/cartpole_ppo.yaml --set env.num_envs=4096 --set train.total_env_steps=30000000 --set checkpoint.at_end=false
done
python3 - <<'PY'
import csv, math, json, glob, os
W = os.environ["OUT"] + "/w"
out = {"bench": {}, "train": {}}
for n in ("tcp", "thop"):
    rows = list(csv.DictReader(open(f"{W}/{n}/metrics.csv")))
    u = [float(r["gpu_util_pct"]) for r in rows]; m = [float(r["gpu_mem_mib"]) for r in rows]
    f = [x for x in u if math.isfinite(x)]
    out["train"][n] = {"rows": len(rows), "finite": len(f), "util_mean": sum(f) / max(1, len(f)), "mem_max": max(m)}
    print(n, out["train"][n])
for n in ("new", "old"):
    sps = []
    for i in (1, 2, 3):
        rows = list(csv.DictReader(open(f"{W}/{n}{i}/metrics.csv")))
        t = sum(float(r["time_iteration_s"]) for r in rows[1:]); s = int(rows[-1]["env_steps"]) - int(rows[0]["env_steps"])
        sps.append(s / t)
    out["train"][n + "_sps"] = sps
    print(n, "env steps/s (iterations 2..):", [f"{x/1e6:.2f}M" for x in sps])
for f in sorted(glob.glob(W + "/*.json")):
    j = json.load(open(f))
    if "results" not in j: continue
    out["bench"][os.path.basename(f)[:-5]] = {"device": j["device"], "env": j["env"], "mode": j["mode"], "gmis": j.get("gmis"), "backend": j.get("backend"),
        "points": [{k: r.get(k) for k in ("num_envs", "envs_per_gmi", "env_steps_per_s", "updates_per_s", "iteration_ms", "gpu_util_pct", "gpu_mem_mib", "memory_per_gmi", "kernels")} for r in j["results"]]}
json.dump(out, open(os.environ["OUT"] + "/utilisation.json", "w"), indent=1)
PY
cp $W/tune.json $OUT/tune.json 2>/dev/null
cd $W && tar czf $OUT/logs.tgz *.log tcp/metrics.csv thop/metrics.csv 2>/dev/null; rm -rf $W
