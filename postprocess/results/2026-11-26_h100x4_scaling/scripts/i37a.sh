#!/usr/bin/env bash
# Issue 37, call 1 (4-GPU machine): NCCL latency with blocking communicators (before/after,
# NCCL's own in the same call), the hang tests on 2 GPUs, the MPI suites on 2 GPUs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p /tmp/b && tar xJf .gpu/i37.tar.xz -C /tmp/b && source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin
exec > >(tee $OUT/log.txt) 2>&1
nvidia-smi -L; nvidia-smi topo -m | head -6; nproc
rb() {  # tag binary gpus(list) np sizes strategies
  CUDA_VISIBLE_DEVICES=$3 timeout 100 mpirun -n $4 --oversubscribe $2 bench-reduce --config config/cartpole_ppo.yaml \
    --set gmi.gpus_per_node=$(( $(tr -cd , <<< "$3" | wc -c) + 1 )) --sizes $5 --strategies $6 --runs 200 --warmup 20 \
    --json $OUT/red_$1.json > /tmp/r_$1.log 2>&1
  echo "REDUCE $1 rc=$? t=$(el): $(grep -aE '^\[.*(floor|har|auto|mpr)' /tmp/r_$1.log | awk '{print $(NF-1)}' | tr '\n' ' ')"
  grep -aE "error" /tmp/r_$1.log | head -3
}
S=9216,102400,1048576,10485760
echo "== A. latency (t=$(el))"
CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc_per_node 2 postprocess/peers/nccl_allreduce.py $OUT/torch_2gpu_1.json 2>&1 | grep -a TORCH_NCCL
for rep in 1 2; do
  rb before_1pergpu_$rep $B/gmi_drl_before 0,1 2 $S floor,har-ipc
  rb after_1pergpu_$rep $B/gmi_drl 0,1 2 $S floor,har-ipc
done
CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc_per_node 2 postprocess/peers/nccl_allreduce.py $OUT/torch_2gpu_2.json 2>&1 | grep -a TORCH_NCCL
rb after_2pergpu $B/gmi_drl 0,1 4 $S floor,har-ipc,auto
rb after_4pergpu $B/gmi_drl 0,1 8 $S floor,har-ipc,auto
timeout 120 torchrun --standalone --nproc_per_node 4 postprocess/peers/nccl_allreduce.py $OUT/torch_4gpu.json 2>&1 | grep -a TORCH_NCCL
rb after_4gpu_1pergpu $B/gmi_drl 0,1,2,3 4 $S floor,har-ipc
rb before_4gpu_1pergpu $B/gmi_drl_before 0,1,2,3 4 $S floor,har-ipc
echo "== B. hang tests on GPUs 0,1 | suites without MPS on GPUs 2,3 (t=$(el))"
suites() {  # tag
  for s in test_reducers test_data_parallel; do for np in 2 4; do
    t0=$(date +%s); CUDA_VISIBLE_DEVICES=2,3 GMI_TEST_GPUS=2 timeout 200 mpirun -n $np --oversubscribe -x GMI_TEST_GPUS -x CUDA_VISIBLE_DEVICES $B/$s --gtest_brief=1 > /tmp/$s.$np.$1.log 2>&1; rc=$?
    echo "TEST $1 $s np$np rc=$rc $(( $(date +%s) - t0 ))s $(grep -aE 'PASSED|FAILED|SKIPPED' /tmp/$s.$np.$1.log | sort -u | tr '\n' ' ')"
    [ $rc -eq 0 ] || grep -aE "Failure|error|FAILED|Expected|Which is|got" /tmp/$s.$np.$1.log | head -12
  done; done
}
( CUDA_VISIBLE_DEVICES=0,1 timeout 420 python3 tests/cli/check_hang.py gpus2 --gmi $B/gmi_drl --mpiexec mpirun --workdir /tmp/hang > /tmp/hang.log 2>&1; echo "HANG rc=$? t=$(el)"; grep -aE "exit|ok|check_hang" /tmp/hang.log | head -20 ) &
HP=$!
suites nomps
wait $HP
cp /tmp/hang.log $OUT/hang.log
echo "== C. suites under MPS on GPUs 2,3 (t=$(el))"
if [ $(el) -lt 420 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p /tmp/mps /tmp/mps-log
  CUDA_VISIBLE_DEVICES=2,3 nvidia-cuda-mps-control -d && echo "MPS up"
  suites mps
  echo quit | nvidia-cuda-mps-control
else echo "SKIPPED C (t=$(el))"; fi
echo "== end t=$(el)"
