#!/usr/bin/env bash
# Issue 34, first part: APPO (V-trace targets) on one H100: the CUDA tests that cover it, its
# learning tests, and its speed beside PPO's (same call, alternating).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34a.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'
for t in test_vtrace test_ppo test_registry; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
timeout 200 mpiexec -n 2 --oversubscribe $B/test_data_parallel --gtest_brief=1 > $W/dp.log 2>&1; echo "test_data_parallel np2 rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/dp.log | head -8
GMI_CONFIG_DIR=$PWD/config timeout 300 $B/test_learning --gtest_filter='Learning.Appo*' > $W/learn.log 2>&1; echo "learning Appo rc=$? t=$(el)"; grep -aE "best|FAILED|PASSED" $W/learn.log | head -8
for rep in 1 2; do
  for v in "ppo|auto" "ppo|off" "appo|auto"; do
    IFS='|' read -r algo fk <<< "$v"
    n=cartpole_${algo}_${fk}_$rep
    timeout 120 $B/gmi_drl bench --config config/bench_cartpole_ppo.yaml --num-envs 4096,65536 --iterations 5 --warmup 2 --set algo=$algo --set device.fused_kernels=$fk --json $W/$n.json > $W/$n.log 2>&1
    echo "$n rc=$? $(python3 -c "import json; d=json.load(open('$W/$n.json')); print([(r['num_envs'], round(r['env_steps_per_s']/1e6,2), r.get('kernels')) for r in d['results']])" 2>&1 | tail -1)"
    n=humanoid_${algo}_${fk}_$rep
    timeout 120 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --iterations 4 --warmup 1 --set algo=$algo --set device.fused_kernels=$fk --set device.matmul=tf32 --json $W/$n.json > $W/$n.log 2>&1
    echo "$n rc=$? $(python3 -c "import json; d=json.load(open('$W/$n.json')); print([(r['num_envs'], round(r['env_steps_per_s']/1e6,2)) for r in d['results']])" 2>&1 | tail -1)"
  done
done
echo "t=$(el)"
for a in ppo appo; do
  timeout 120 $B/gmi_drl --config config/bench_cartpole_ppo.yaml --set algo=$a --set train.total_env_steps=20000000 --set checkpoint.interval=0 --run-dir $W/learn_$a > $W/learn_$a.log 2>&1
  echo "cartpole 4096 envs 20M steps $a rc=$? $(tail -1 $W/learn_$a.log)"
done
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
rm -rf $W/*/checkpoints
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
