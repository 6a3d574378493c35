#!/usr/bin/env bash
# Issue 30: the fused optimiser step (norm, count, bookkeeping in one kernel) and side streams
# (weight gradients beside input gradients; SAC's target branch beside the online Qs), against
# the epilogue build (gmi_drl_base, ed464fc) in the same call (a clean rebuild after call 4's stale object); SAC beside CleanRL and LeanRL.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30m.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name --format=csv,noheader
for t in test_mlp test_blas test_adam test_offpolicy test_ppo; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
for rep in 1; do for bin in gmi_drl_base gmi_drl; do for v in "half_cheetah_sac|256" "half_cheetah_sac|1024" "bench_humanoid_sac|256"; do
  IFS='|' read -r cfg bs <<< "$v"; n=upd_${bin}_${cfg}_${bs}_$rep
  timeout 120 $B/$bin bench --config config/$cfg.yaml --mode update --num-envs 1 --iterations 3000 --warmup 300 \
    --set sac.batch_size=$bs --json $W/$n.json > $W/$n.log 2>&1
  echo "$n rc=$? $(python3 -c "import json; r=json.load(open('$W/$n.json'))['results'][0]; print(r['ms_per_update'], r['kokkos_kernels_per_iteration'], r['blas_calls_per_iteration'])" 2>&1 | tail -1)"
done; done; done
for bin in gmi_drl_base gmi_drl; do
  n=upd_${bin}_dqn
  timeout 60 $B/$bin bench --config config/cartpole_dqn.yaml --mode update --num-envs 1 --iterations 3000 --warmup 300 --json $W/$n.json > $W/$n.log 2>&1
  echo "$n rc=$? $(python3 -c "import json; r=json.load(open('$W/$n.json'))['results'][0]; print(r['ms_per_update'], r['kokkos_kernels_per_iteration'], r['blas_calls_per_iteration'])" 2>&1 | tail -1)"
done
for bin in gmi_drl_base gmi_drl; do for m in fp32 tf32; do
  n=ppo_${bin}_$m
  timeout 150 $B/$bin bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --iterations 20 --warmup 3 \
    --set device.fused_kernels=off --set device.matmul=$m --json $W/$n.json > $W/$n.log 2>&1
  echo "$n rc=$? $(python3 -c "import json; print([round(r['env_steps_per_s']) for r in json.load(open('$W/$n.json'))['results']])" 2>&1 | tail -1)"
done; done
for bin in gmi_drl_base gmi_drl; do
  t0=$(date +%s.%N); timeout 120 $B/$bin --config config/cartpole_dqn.yaml --set checkpoint.interval=0 --run-dir $W/dqn_$bin > $W/dqn_$bin.log 2>&1
  echo "dqn_$bin rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))") last=$(tail -1 $W/dqn_$bin/metrics.csv | cut -d, -f5)"
  timeout 60 $B/$bin --config config/half_cheetah_sac.yaml --set train.total_env_steps=12000 --set checkpoint.interval=0 --run-dir $W/sac_$bin > $W/sac_$bin.log 2>&1
  echo "sac_$bin rc=$? $(python3 -c "
import csv; r=list(csv.DictReader(open('$W/sac_$bin/metrics.csv'))); at={int(float(x['env_steps'])): float(x['wall_time_s']) for x in r}
print('env-steps/s 5000-12000:', round(7000 / (at[12000] - at[5000]), 1))")"
done
echo "t=$(el)"
SAC=.peers/sac bash postprocess/peers/sac_peers.sh $B/gmi_drl $W/sac > $W/sac.log 2>&1; echo "sac_peers rc=$? t=$(el)"; tail -9 $W/sac.log
} 2>&1 | tee $OUT/log.txt
rm -rf $W/sac/peers/*/ $W/dqn_*/checkpoints $W/sac_*/checkpoints 2>/dev/null
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
