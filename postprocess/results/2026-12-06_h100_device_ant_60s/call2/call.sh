#!/usr/bin/env bash
# Issue 36, call 2 of 2026-12-06 (one H100): PPO on DeviceAnt-v5 with the settings call 1 chose
# (8192 envs, initial action std exp(-1); config/ant_device_ppo.yaml now has them), seeds 2 and 3,
# 60 s of wall time each, the checkpoint at 60 s evaluated deterministically over 100 episodes;
# then Brax's own PPO trainer on `ant` with the generalized backend and its published settings.
set -u
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-deps --no-index .whl/braxmin/*.whl 2>&1 | tail -2
P=postprocess/peers/brax
echo "== gmi_drl PPO on DeviceAnt-v5, 60 s each"
for s in 2 3; do
  timeout -s TERM 60 $B/gmi_drl --config config/ant_device_ppo.yaml --run-dir $W/ant_s$s --set train.seed=$s --set policy.log_std_init=-1 --set env.num_envs=8192 --set checkpoint.interval=0 > $W/ant_s$s.log 2>&1; echo "seed $s rc=$?"
  grep -a "iter " $W/ant_s$s.log | tail -1 | cut -c1-150; cp $W/ant_s$s/metrics.csv $OUT/ant_s$s.metrics.csv 2>/dev/null
done
for s in 2 3; do
  c=$(ls -t $W/ant_s$s/checkpoints/*.h5 2>/dev/null | head -1)
  [ -n "$c" ] && timeout 60 $B/gmi_drl eval --checkpoint $c --episodes 100 --num-envs 100 --deterministic --json $W/eval_ant_s$s.json > $W/eval_ant_s$s.log 2>&1 &
done
wait
for s in 2 3; do echo "eval seed $s: $(grep -a "eval:" $W/eval_ant_s$s.log | tail -1 | cut -c1-170)"; done
echo "== Brax PPO, ant"
for be in generalized; do
  timeout 170 python3 $P/brax_ppo.py $be ant 20000000 8 2>&1 | grep -E '^\{' | tee $W/brax_ppo_ant_$be.jsonl | tail -1 | cut -c1-300
done
python3 - <<'PY'
import json, glob, os
W = os.environ["OUT"] + "/w"; out = {}
for f in sorted(glob.glob(W + "/*.json")) + sorted(glob.glob(W + "/*.jsonl")):
    k = os.path.basename(f)
    try: out[k] = json.load(open(f)) if f.endswith(".json") else [json.loads(l) for l in open(f) if l.startswith("{")]
    except Exception as e: out[k] = repr(e)
json.dump(out, open(os.environ["OUT"] + "/c2.json", "w"), indent=1)
PY
cd $W && tar czf $OUT/logs.tgz *.log */*.log 2>/dev/null; rm -rf $W
