#!/usr/bin/env bash
# DeviceAnt-v5 and DeviceHumanoid-v5 on one H100: tests of the Humanoid build, SM occupancy of the
# physics kernel (ncu), PPO settings for 60 s each (seed 1), Humanoid PPO iterations.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36base.tar.xz -C /tmp/b && tar xJf .gpu/i36z.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
echo "== tests"
timeout 150 $B/test_envs --gtest_filter='*Device*Spec*:*Device*Deterministic*:*Device*SaveLoad*:*DeviceHumanoid*FinalObs*:EnvRegistry*' 2>&1 | grep -E "FAIL|PASSED|tests ran" | tail -4
timeout 200 python3 tests/envs/compare_physics.py --gmi $B/gmi_drl --env-list $B/gmi_env_list --workdir $W/cp 2>&1 | tail -7
echo "== ncu: the Ant step kernel"
for e in 4096 65536; do
  timeout 60 ncu --kernel-name regex:step_kernel --launch-count 1 --metrics sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__occupancy_limit_registers,launch__registers_per_thread,sm__maximum_warps_per_active_cycle_pct,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed $B/bench_physics --steps 1 --cases ant.xml:full --envs $e > $W/ncu_$e.txt 2>&1
  echo "envs $e:"; grep -E "sm__|launch__|gpu__time|dram__" $W/ncu_$e.txt | sed 's/  */ /g' | head -8
done
echo "== PPO Ant, 60 s each"
train() {  # NAME CONFIG [--set ...]
  local n=$1 c=$2; shift 2
  timeout 60 $B/gmi_drl --config $c --run-dir $W/$n "$@" > $W/$n.log 2>&1; echo "$n rc=$?"
  grep -a "iter " $W/$n.log | tail -1 | cut -c1-150
  cp $W/$n/metrics.csv $OUT/$n.metrics.csv 2>/dev/null
}
A="config/ant_device_ppo.yaml"
train C $A --set ppo.num_minibatches=16 --set ppo.update_epochs=10
train E $A --set env.num_envs=16384 --set ppo.num_steps=8 --set ppo.num_minibatches=32 --set ppo.update_epochs=10
train G $A --set env.num_envs=8192 --set ppo.num_minibatches=32 --set ppo.update_epochs=10
echo "== bench Humanoid PPO iterations"
for e in 1024 4096 16384; do
  timeout 90 $B/gmi_drl bench --config config/humanoid_device_ppo.yaml --num-envs $e --iterations $((12 * 4096 / e + 4)) --warmup 2 --json $OUT/hbench_$e.json > $W/hbench_$e.log 2>&1 || echo "hbench $e failed"
  grep -a -E "^\[.*\] +[0-9]+ +[0-9]+ " $W/hbench_$e.log | cut -c12- | head -1
done
python3 postprocess/learning.py $W/C $W/E $W/G --threshold 4000 2>&1 | grep -v wrote | tail -6
cd $W && tar czf $OUT/logs.tgz *.log */*.log ncu_*.txt 2>/dev/null; rm -rf $W
