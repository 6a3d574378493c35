#!/usr/bin/env bash
# Issue 37, call 4 (2 GPUs): test_data_parallel with both trainers' kernels pinned, without MPS
# (4 runs of np 4, one of np 2) and under MPS (np 4).
set -u
mkdir -p /tmp/b && tar xJf .gpu/i37d.tar.xz -C /tmp/b && source .gpu/env.sh /tmp/b
exec > >(tee $OUT/log.txt) 2>&1
nvidia-smi -L
one() {
  t0=$(date +%s); GMI_TEST_GPUS=2 timeout 120 mpirun -n $2 --oversubscribe -x GMI_TEST_GPUS /tmp/b/bin/test_data_parallel --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
  echo "TEST $1 np$2 rc=$rc $(( $(date +%s) - t0 ))s $(grep -aE 'PASSED|FAILED|SKIPPED' /tmp/t.log | sort -u | tr '\n' ' ')"
  [ $rc -eq 0 ] || grep -aE "Failure|error|Expected|Which is" /tmp/t.log | head -6
}
for r in 1 2 3; do one nomps 4; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p /tmp/mps /tmp/mps-log
nvidia-cuda-mps-control -d && echo "MPS up"
for r in 1 2 3; do one mps 4; done
echo quit | nvidia-cuda-mps-control
