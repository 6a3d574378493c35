#!/usr/bin/env bash
# DeviceAnt-v5 on one H100: the tests (test_physics, test_envs, compare_physics against Gymnasium on
# the GPU), the physics alone after the solver's new stopping rule, bench of PPO iterations, and two
# PPO settings for 100 s each (seed 1).
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36base.tar.xz -C /tmp/b && tar xJf .gpu/i36y.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
echo "== tests"
timeout 120 $B/test_physics 2>&1 | grep -vE "^\[ (RUN|  +OK) " > $OUT/test_physics.txt; tail -2 $OUT/test_physics.txt
timeout 200 $B/test_envs --gtest_filter='*DeviceAnt*:EnvRegistry*' 2>&1 | grep -vE "^\[ (RUN|  +OK) " > $OUT/test_envs.txt; tail -2 $OUT/test_envs.txt
timeout 200 python3 tests/envs/compare_physics.py --gmi $B/gmi_drl --env-list $B/gmi_env_list --workdir $W/cp 2>&1 | tail -5 | tee $OUT/compare_physics.txt
echo "== physics alone"
timeout 60 $B/bench_physics --steps 10 --cases ant.xml:full --envs 4096,65536 --json $OUT/bench_same_steps.json 2>&1 | tail -2
timeout 60 $B/bench_physics --warmup 1.2 --seconds 2 --cases ant.xml:full --envs 4096,65536 --json $OUT/bench_on_floor.json 2>&1 | tail -2
echo "== bench (PPO iterations)"
for e in 1024 4096 16384 65536; do
  it=$((40 * 4096 / e + 6))
  timeout 90 $B/gmi_drl bench --config config/ant_device_ppo.yaml --num-envs $e --iterations $it --warmup 3 --json $W/bench_$e.json > $W/bench_$e.log 2>&1 || echo "bench $e failed"
  grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $W/bench_$e.log | cut -c12- | head -1
done
echo "== PPO, 100 s each"
train() {  # NAME [--set ...]
  local n=$1; shift
  timeout 100 $B/gmi_drl --config config/ant_device_ppo.yaml --run-dir $W/$n "$@" > $W/$n.log 2>&1; echo "$n rc=$?"
  grep -a "iter " $W/$n.log | tail -2 | cut -c1-200
  cp $W/$n/metrics.csv $OUT/$n.metrics.csv 2>/dev/null
}
train A
train B --set ppo.num_minibatches=16
python3 postprocess/learning.py $W/A $W/B --threshold 5000 --out $OUT/curves 2>&1 | tail -6
cd $W && tar czf $OUT/logs.tgz *.log */*.log 2>/dev/null; cp bench_*.json $OUT/ 2>/dev/null; rm -rf $W
