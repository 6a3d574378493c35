#!/usr/bin/env bash
# Issue 33: experience channels on the GPU machine: test_channels/test_roles, bench-channels per plan.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i33.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; mkdir -p $OUT/json
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none"
{
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
$B/test_roles 2>&1 | tail -1
for np in 2 4 6; do $MPI -np $np $B/test_channels 2>&1 | grep -E "PASSED|FAILED" | head -3; done
for cfg in humanoid_sac_many_envs tag_continuous_ppo bench_cartpole_ppo; do
  for np in 2 4 8; do
    $MPI -np $np $B/gmi_drl bench-channels --config config/$cfg.yaml --plans auto per-type single --steps 2000 --warmup 200 \
      --json $OUT/json/${cfg}_np${np}_dp.json 2>&1 | grep -E "bench-channels|link cost|TOP_mov|error" | cut -c12-330
  done
  $MPI -np 8 $B/gmi_drl bench-channels --config config/$cfg.yaml --set mapping.template=ea-t --set mapping.trainers_per_gpu=2 \
    --plans auto per-type single --steps 2000 --warmup 200 --json $OUT/json/${cfg}_np8_eat2.json 2>&1 | grep -E "bench-channels|TOP_mov|error|mapping" | cut -c12-330
done
} 2>&1 | tee $OUT/log.txt
