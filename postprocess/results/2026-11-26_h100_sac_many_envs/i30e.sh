#!/usr/bin/env bash
# Issue 30: many-env SAC time to return, variants side by side as sweeps on their own CPUs, one MPS daemon.
#   VARIANTS="name|cpus|args ...;..." LIMIT=s bash .gpu/i30e.sh CONFIG SEEDS THRESHOLDS
#   (a variant whose args start with --config uses that file instead of CONFIG)
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30e.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w30; rm -rf $W; mkdir -p $W
cfg=$1; seeds=$2; ths=$3
{
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
if [ -n "${TESTS:-}" ]; then timeout 150 $B/test_offpolicy 2>&1 | grep -E "^\[  |OK \]|FAIL|Failure" | tail -25; fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog; mkdir -p /tmp/mps /tmp/mpslog
nvidia-cuda-mps-control -d && echo "MPS daemon up"
IFS=';' read -ra VS <<< "$VARIANTS"
nseeds=$(echo $seeds | awk -F'[.,]+' '{print ($2==""?1:$2-$1+1)}')
for v in "${VS[@]}"; do
  IFS='|' read -r name cpus args <<< "$v"
  c=(--config $cfg); case "$args" in --config*) c=();; esac
  timeout -s TERM ${LIMIT:-520} taskset -c $cpus $B/gmi_drl sweep "${c[@]}" --seeds $seeds --per-gpu ${PER:-2} \
    --set checkpoint.replay=false --set log.tensorboard=false $args --sweep-dir $W/$name > $W/$name.log 2>&1 &
done
wait
echo quit | nvidia-cuda-mps-control
python3 .gpu/ttr.py $ths $W
for v in "${VS[@]}"; do IFS='|' read -r name cpus args <<< "$v"; tail -3 $W/$name.log; done
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz . && ls -la $OUT
