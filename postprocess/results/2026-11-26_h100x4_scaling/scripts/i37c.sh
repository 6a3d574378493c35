#!/usr/bin/env bash
# Issue 37, call 3 (4-GPU machine): the data-parallel suite with the test's fix; the MuJoCo
# studies with each GPU's CPU share fixed (--cores-per-gpu 16, hyperthreads together); CartPole
# with 4 and 8 GMIs per GPU through one NCCL call among leaders instead of rings.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p /tmp/b && tar xJf .gpu/i37.tar.xz -C /tmp/b && source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin
exec > >(tee $OUT/log.txt) 2>&1
lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket|Model name|NUMA node)" ; cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list
one() {  # tag binary np
  t0=$(date +%s); CUDA_VISIBLE_DEVICES=2,3 GMI_TEST_GPUS=2 timeout 120 mpirun -n $3 --oversubscribe -x GMI_TEST_GPUS -x CUDA_VISIBLE_DEVICES $2 --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
  echo "TEST $1 np$3 rc=$rc $(( $(date +%s) - t0 ))s $(grep -aE 'PASSED|FAILED|SKIPPED' /tmp/t.log | sort -u | tr '\n' ' ')"
  [ $rc -eq 0 ] || grep -aE "Failure|error|Expected" /tmp/t.log | head -4
}
echo "== A. test_data_parallel (t=$(el))"
one nomps $B/test_data_parallel 2; one nomps $B/test_data_parallel 4; one nomps $B/test_data_parallel 4
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p /tmp/mps /tmp/mps-log
nvidia-cuda-mps-control -d && echo "MPS up"
one mps $B/test_data_parallel 4
echo quit | nvidia-cuda-mps-control; sleep 2
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
export GMI_DRL=$B/gmi_drl
st() { d=$1; shift; [ $(el) -lt 540 ] || { echo "SKIPPED $* (t=$(el))"; return; }; timeout $((580 - $(el))) jobs/scaling_study.sh $d --local --gpus 1,2,4 --seeds 1 "$@" | grep -v ": status 0$"; echo "study $d $2 done t=$(el)"; }
echo "== B. studies (t=$(el))"
st /tmp/bound --configs config/hopper_ppo.yaml --gmis 1,2,4,8 --envs-per-gpu 512 --iterations 4 --warmup 1 --set ppo.num_steps=64 --cores-per-gpu 16
st /tmp/leaders --configs config/bench_cartpole_ppo.yaml --gmis 4,8 --envs-per-gpu 16384 --iterations 10 --warmup 2 --set reduce.inter_gpu=leaders
st /tmp/bound --configs config/hopper_sac.yaml --gmis 1,2,4,8 --envs-per-gpu 8 --iterations 5 --warmup 2 --set sac.num_steps=200 --set sac.learning_starts=256 --cores-per-gpu 16
for d in /tmp/bound /tmp/leaders; do python3 postprocess/scaling.py $d --out $d > /dev/null 2>&1; cat $d/scaling.md; done
cd /tmp && tar czf $OUT/study.tgz bound leaders
echo "== end t=$(el)"
