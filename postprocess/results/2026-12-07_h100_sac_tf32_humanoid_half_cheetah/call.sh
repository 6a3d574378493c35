#!/usr/bin/env bash
# Call 3 (2026-12-07, sixth session): SAC many envs in TF32 on Humanoid-v5 and HalfCheetah-v5, 3 seeds each,
# side by side on one H100 machine as 2026-11-26's call 4 ran them in FP32 (Humanoid on CPUs 0-9, HalfCheetah
# on 10-15, one MPS daemon), stopped by SIGTERM after about 190 s (call 4 ran 293-298 s); build 63a24d5.
set -u
T0=$(date +%s)
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b3.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w30; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog; mkdir -p /tmp/mps /tmp/mpslog
nvidia-cuda-mps-control -d && echo "MPS daemon up"
LIM=$(( 195 - ($(date +%s) - T0) ))
for v in "humanoid|0-9" "half_cheetah|10-15"; do
  IFS='|' read -r name cpus <<< "$v"
  timeout -s TERM $LIM taskset -c $cpus $B/gmi_drl sweep --config config/${name}_sac_many_envs.yaml --seeds 1..3 --per-gpu 3 \
    --set checkpoint.replay=false --set log.tensorboard=false --set device.matmul=tf32 --sweep-dir $W/$name > $W/$name.log 2>&1 &
done
wait
echo quit | nvidia-cuda-mps-control
python3 .gpu/ttr.py 4000,5000,6000,8000,10000 $W
for n in humanoid half_cheetah; do tail -2 $W/$n.log; done
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz . && ls -la $OUT
