#!/usr/bin/env bash
# Call 1 (2026-12-07, sixth session): the review fixes of 826b501/bfe8bdd on the GPU (test_offpolicy,
# test_ppo, check_async offpolicy), SAC update rates by device.matmul on Ant-v5's sizes, then SAC
# Ant-v5 many envs (config/ant_sac_many_envs.yaml) with device.matmul tf32, 3 seeds side by side.
set -u
T0=$(date +%s)
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b1.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
t() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
for x in test_offpolicy test_ppo; do timeout 150 $B/$x --gtest_brief=1 > $W/$x.log 2>&1; t "$x rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $W/$x.log | tr '\n' ' ')"; done
timeout 200 python3 tests/cli/check_async.py offpolicy --gmi $B/gmi_drl --mpiexec $(which mpiexec) --workdir $W/off > $W/check_offpolicy.log 2>&1
t "check_async offpolicy rc=$?"; tail -6 $W/check_offpolicy.log | cut -c1-200
for m in fp32 tf32 bf16; do
  timeout 60 $B/gmi_drl bench --config config/ant_sac_many_envs.yaml --mode update --num-envs 1 --iterations 3000 --warmup 300 \
    --set device.matmul=$m --json $W/upd_$m.json > $W/upd_$m.log 2>&1
  t "update $m rc=$? $(grep -E 'updates/s|ms per' $W/upd_$m.log | tail -2 | tr -s ' ' | cut -c1-220)"; tail -2 $W/upd_$m.log | cut -c1-250
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog; mkdir -p /tmp/mps /tmp/mpslog
nvidia-cuda-mps-control -d && t "MPS daemon up"
LIM=$(( 585 - ($(date +%s) - T0) ))
t "ant tf32: 3 seeds for $LIM s"
timeout -s TERM $LIM $B/gmi_drl sweep --config config/ant_sac_many_envs.yaml --seeds 1..3 --per-gpu 3 \
  --set checkpoint.replay=false --set log.tensorboard=false --set device.matmul=tf32 --sweep-dir $W/ant_tf32 > $W/ant_tf32.log 2>&1
echo quit | nvidia-cuda-mps-control
python3 .gpu/ttr.py 3000,4000,5000,6000 $W/ant_tf32
tail -3 $W/ant_tf32.log
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz . && ls -la $OUT
