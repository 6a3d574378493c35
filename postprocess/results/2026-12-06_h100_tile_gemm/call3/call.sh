#!/usr/bin/env bash
# Call 3: the final build's GPU tests, SAC updates (batches below the tile kernels' 4,096), the
# Humanoid-sized bench again, and PPO on DeviceAnt for 60 s (tile kernels in its update) evaluated.
set -u
T0=$(date +%s)
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b; source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; O=/tmp/t3; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
for t in test_mlp test_blas test_ppo test_offpolicy test_multi_agent; do
  timeout 300 $B/$t --gtest_brief=1 > $O/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $O/$t.log | head -3 | tr '\n' ' ')"
done
for v in "half_cheetah_sac|256" "bench_humanoid_sac|256" "half_cheetah_sac|1024"; do
  IFS='|' read -r cfg bs <<< "$v"; n=upd_${cfg}_${bs}
  timeout 120 $B/gmi_drl bench --config config/$cfg.yaml --mode update --num-envs 1 --iterations 3000 --warmup 300 \
    --set sac.batch_size=$bs --json $O/$n.json > $O/$n.log 2>&1
  echo "$n rc=$? $(python3 -c "import json; r=json.load(open('$O/$n.json'))['results'][0]; print(r['ms_per_update'], r['kokkos_kernels_per_iteration'], r['blas_calls_per_iteration'])" 2>&1 | tail -1)"
done
timeout 100 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --warmup 2 --iterations 4 --set device.matmul=tf32 --json $O/h256_tf32.json > $O/h256.log 2>&1
echo "h256 tf32 $(python3 -c "import json;d=json.load(open('$O/h256_tf32.json'));print(' '.join('%d:%.3fM'%(r['num_envs'],r['env_steps_per_s']/1e6) for r in d['results']))")"
echo "== DeviceAnt PPO 60 s (t=$(( $(date +%s) - T0 )))"
timeout -s TERM 60 $B/gmi_drl --config config/ant_device_ppo.yaml --run-dir $O/ant --set checkpoint.interval=0 > $O/ant.log 2>&1; echo "rc=$?"
grep -a "iter " $O/ant.log | tail -1 | cut -c1-160
c=$(ls -t $O/ant/checkpoints/*.h5 2>/dev/null | head -1)
[ -n "$c" ] && timeout 40 $B/gmi_drl eval --checkpoint $c --episodes 100 --num-envs 100 --deterministic --json $O/eval_ant.json > $O/eval_ant.log 2>&1
echo "eval: $(grep -a "eval:" $O/eval_ant.log | tail -1 | cut -c1-170)"
cp $O/ant/metrics.csv $O/ant_metrics.csv; rm -rf $O/ant/checkpoints
tar czf $OUT/t3.tar.gz -C /tmp t3
echo "t=$(( $(date +%s) - T0 ))"
