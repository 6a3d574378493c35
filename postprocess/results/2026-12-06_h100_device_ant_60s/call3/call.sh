#!/usr/bin/env bash
# Issue 36, call 3 of 2026-12-06 (one H100): raw device steps beside Brax's generalized pipeline and
# MJX on the same models and env steps (2-11 from the initial pose); then GMIs per GPU on PPO
# DeviceAnt-v5 and DeviceHumanoid-v5 (gmi_drl bench, end to end) with the 32-thread blocks.
set -u
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
P=postprocess/peers/brax
echo "== GMIs per GPU (gmi_drl bench, end to end)"
row() { grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $1 | cut -c12- | head -1; }
gmis() {  # NAME CONFIG K BACKEND ENVS_PER_GMI ITERATIONS
  local n=$1 c=$2 k=$3 be=$4 e=$5 it=$6
  if [ $k = 1 ]; then
    timeout 90 $B/gmi_drl bench --config $c --num-envs $e --iterations $it --warmup 3 --json $W/${n}.json > $W/${n}.log 2>&1 || echo "$n failed"
  else
    timeout 120 mpiexec -n $k --oversubscribe --bind-to none $B/gmi_drl bench --config $c --num-envs $((e*k)) --iterations $it --warmup 3 --set gmi.backend=$be --json $W/${n}.json > $W/${n}.log 2>&1 || echo "$n failed"
  fi
  echo "$n: $(row $W/${n}.log)"
}
C=config/ant_device_ppo.yaml
gmis ant_g1_4096 $C 1 none 4096 16
gmis ant_mps4_4096 $C 4 mps 4096 10
echo "== raw steps, same env steps"
pip_ok=$(python3 -m pip install -q --no-deps --no-index .whl/braxmin/*.whl 2>&1 | tail -1)
timeout 60 $B/bench_physics --steps 10 --cases ant.xml:full,ant.xml:euler,humanoid.xml:full,humanoid.xml:euler,brax_ant.xml:full --envs 4096,65536 --json $W/phys_same_steps.json 2>&1 | grep env-steps
timeout 60 python3 $P/brax_physics.py 10 mjx brax_ant.xml 4096,65536 2>&1 | grep -E '^\{' | tee $W/peers_mjx.jsonl
timeout 110 python3 $P/brax_physics.py 10 generalized brax_ant.xml,ant.xml,humanoid.xml 4096 2>&1 | grep -E '^\{' | tee $W/peers_generalized.jsonl
python3 - <<'PY'
import json, glob, os
W = os.environ["OUT"] + "/w"; out = {}
for f in sorted(glob.glob(W + "/*.json")) + sorted(glob.glob(W + "/*.jsonl")):
    k = os.path.basename(f)
    try: out[k] = json.load(open(f)) if f.endswith(".json") else [json.loads(l) for l in open(f) if l.startswith("{")]
    except Exception as e: out[k] = repr(e)
json.dump(out, open(os.environ["OUT"] + "/c3.json", "w"), indent=1)
PY
cd $W && tar czf $OUT/logs.tgz *.log 2>/dev/null; rm -rf $W
