#!/usr/bin/env bash
# Issue 36, 2026-12-06, one GPU: (1) the tests on the GPU with 32-thread blocks; (2) threads per
# block of the physics kernels, Kokkos' choice (0) vs 32, on the physics alone and on PPO
# iterations; (3) four PPO settings on DeviceAnt-v5 side by side under one MPS daemon for 150 s
# (selection by return against env steps); (4) the best of them alone for 60 s of wall time
# (SIGTERM: checkpoint, stop), its checkpoint evaluated deterministically over 100 episodes;
# (5) Brax's own PPO trainer on `ant` (mjx backend, its published settings) in the same call.
set -u
T0=$(date +%s)
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
(python3 -m pip install -q --no-deps --no-index .whl/braxmin/*.whl > $W/pip.log 2>&1 &)
echo "== tests on the GPU"
timeout 70 $B/test_physics 2>&1 | grep -vE "^\[ (RUN|  +OK) " > $OUT/test_physics.txt; tail -1 $OUT/test_physics.txt
timeout 70 $B/test_envs --gtest_filter='*DeviceAnt*:EnvRegistry*' 2>&1 | grep -vE "^\[ (RUN|  +OK) " > $OUT/test_envs.txt; tail -1 $OUT/test_envs.txt
echo "== physics alone, on the floor (t=$(( $(date +%s) - T0 )))"
for blk in 0 32; do
  GMI_PHYSICS_BLOCK=$blk timeout 40 $B/bench_physics --warmup 1.2 --seconds 1 --cases ant.xml:full --envs 4096,16384,65536 --json $W/phys_ant_$blk.json 2>&1 | grep env-steps
done
echo "== PPO iterations (gmi_drl bench)"
row() { grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $1 | cut -c12- | head -1; }
for blk in 0 32; do
  GMI_PHYSICS_BLOCK=$blk timeout 40 $B/gmi_drl bench --config config/ant_device_ppo.yaml --num-envs 4096 --iterations 16 --warmup 3 --json $W/bench_${blk}_4096.json > $W/bench_${blk}_4096.log 2>&1 || echo "bench $blk failed"
  echo "block $blk, 4096 envs: $(row $W/bench_${blk}_4096.log)"
done
echo "== four settings side by side under MPS, 150 s (t=$(( $(date +%s) - T0 )))"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p /tmp/mps /tmp/mps-log
nvidia-cuda-mps-control -d
declare -A S=(
  [s1]=""
  [s2]="--set policy.log_std_init=-1"
  [s3]="--set policy.log_std_init=-1 --set ppo.gamma=0.97"
  [s4]="--set policy.log_std_init=-1 --set env.num_envs=8192"
)
for n in s1 s2 s3 s4; do
  timeout -s TERM 150 $B/gmi_drl --config config/ant_device_ppo.yaml --run-dir $W/$n --set checkpoint.interval=0 ${S[$n]} > $W/$n.log 2>&1 &
done
wait
echo quit | nvidia-cuda-mps-control; sleep 2; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for n in s1 s2 s3 s4; do cp $W/$n/metrics.csv $OUT/$n.metrics.csv 2>/dev/null; done
best=$(python3 - <<'PY'
import csv, os
W = os.environ["OUT"] + "/w"; best, arg = -1e9, "s1"
for n in ["s1", "s2", "s3", "s4"]:
    try: rows = list(csv.DictReader(open(f"{W}/{n}/metrics.csv")))
    except Exception: continue
    r = [float(x["episode_return_mean"]) for x in rows if x["episode_return_mean"] not in ("", "nan")]
    steps = int(rows[-1]["env_steps"]) if rows else 0
    score = sum(r[-5:]) / max(1, len(r[-5:]))
    print(f"{n}: {steps} env steps, last returns {score:.0f}", file=open(f"{W}/select.txt", "a"))
    if score > best: best, arg = score, n
print(arg)
PY
)
cat $W/select.txt; echo "chosen: $best (${S[$best]})"
echo "== the chosen setting alone, 60 s (t=$(( $(date +%s) - T0 )))"
timeout -s TERM 60 $B/gmi_drl --config config/ant_device_ppo.yaml --run-dir $W/solo --set checkpoint.interval=0 ${S[$best]} > $W/solo.log 2>&1; echo "rc=$?"
grep -a "iter " $W/solo.log | tail -1 | cut -c1-150; cp $W/solo/metrics.csv $OUT/solo.metrics.csv 2>/dev/null
c=$(ls -t $W/solo/checkpoints/*.h5 2>/dev/null | head -1)
[ -n "$c" ] && timeout 40 $B/gmi_drl eval --checkpoint $c --episodes 100 --num-envs 100 --deterministic --json $W/eval_solo.json > $W/eval_solo.log 2>&1
echo "eval: $(grep -a "eval:" $W/eval_solo.log | tail -1 | cut -c1-170)"
echo "== Brax PPO, ant, mjx (t=$(( $(date +%s) - T0 )))"
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 postprocess/peers/brax/brax_ppo.py mjx ant 20000000 8 2>&1 | grep -E '^\{' | tee $W/brax_ppo_ant_mjx.jsonl | cut -c1-200
python3 - <<'PY'
import json, glob, os
W = os.environ["OUT"] + "/w"; out = {}
for f in sorted(glob.glob(W + "/*.json")) + sorted(glob.glob(W + "/*.jsonl")):
    k = os.path.basename(f)
    try: out[k] = json.load(open(f)) if f.endswith(".json") else [json.loads(l) for l in open(f) if l.startswith("{")]
    except Exception as e: out[k] = repr(e)
json.dump(out, open(os.environ["OUT"] + "/c12.json", "w"), indent=1)
PY
cd $W && tar czf $OUT/logs.tgz *.log */*.log select.txt 2>/dev/null; rm -rf $W
