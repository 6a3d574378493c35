#!/usr/bin/env bash
# Issue 37, call 6 (2 GPUs): the final build's reducers suite (one and two GMIs per GPU, no MPS)
# and its one-GMI-per-GPU reduction latency.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i37e.tar.xz -C /tmp/b && source .gpu/env.sh /tmp/b
exec > >(tee $OUT/log.txt) 2>&1
for np in 2 4; do
  GMI_TEST_GPUS=2 timeout 100 mpirun -n $np --oversubscribe -x GMI_TEST_GPUS /tmp/b/bin/test_reducers --gtest_brief=1 > /tmp/t.log 2>&1
  echo "TEST test_reducers np$np rc=$? $(grep -aE 'PASSED|FAILED|SKIPPED' /tmp/t.log | sort -u | tr '\n' ' ')"
done
timeout 60 mpirun -n 2 /tmp/b/bin/gmi_drl bench-reduce --config config/cartpole_ppo.yaml --set gmi.gpus_per_node=2 \
  --sizes 9216,102400,1048576,10485760 --strategies floor,har-ipc --runs 200 --warmup 20 > /tmp/r.log 2>&1
echo "REDUCE rc=$?: $(grep -aE '^\[.*(floor|har)' /tmp/r.log | awk '{print $(NF-1)}' | tr '\n' ' ')"
