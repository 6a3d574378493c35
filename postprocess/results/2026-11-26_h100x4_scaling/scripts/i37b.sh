#!/usr/bin/env bash
# Issue 37, call 2 (4-GPU machine): the suites under MPS on 2 GPUs, test_data_parallel np4 before
# and after (the one failure of call 1), then the scaling study over 1, 2, 4 GPUs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p /tmp/b && tar xJf .gpu/i37.tar.xz -C /tmp/b && source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin
exec > >(tee $OUT/log.txt) 2>&1
one() {  # tag binary np
  t0=$(date +%s); CUDA_VISIBLE_DEVICES=2,3 GMI_TEST_GPUS=2 timeout 120 mpirun -n $3 --oversubscribe -x GMI_TEST_GPUS -x CUDA_VISIBLE_DEVICES $2 --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
  echo "TEST $1 np$3 rc=$rc $(( $(date +%s) - t0 ))s $(grep -aE 'PASSED|FAILED|SKIPPED' /tmp/t.log | sort -u | tr '\n' ' ')"
  [ $rc -eq 0 ] || grep -aE "Failure|error|Expected" /tmp/t.log | head -4
}
echo "== A. test_data_parallel np4 without MPS, before/after alternated (t=$(el))"
for rep in 1 2 3; do one before-nomps $B/test_data_parallel_before 4; one after-nomps $B/test_data_parallel 4; done
echo "== B. suites under MPS (daemon sees every GPU; clients on GPUs 2,3) (t=$(el))"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p /tmp/mps /tmp/mps-log
nvidia-cuda-mps-control -d && echo "MPS up"
for s in test_reducers test_data_parallel; do for np in 2 4; do one "mps $s" $B/$s $np; done; done
for rep in 1 2; do one before-mps $B/test_data_parallel_before 4; one after-mps $B/test_data_parallel 4; done
echo quit | nvidia-cuda-mps-control; sleep 2
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
echo "== C. scaling 1/2/4 GPUs (t=$(el))"
export GMI_DRL=$B/gmi_drl
S=/tmp/study
st() { [ $(el) -lt 560 ] || { echo "SKIPPED $* (t=$(el))"; return; }; timeout $((590 - $(el))) jobs/scaling_study.sh $S --local --gpus 1,2,4 --seeds 1 "$@" | grep -v ": status 0$"; echo "study $2 done t=$(el)"; }
st --configs config/bench_cartpole_ppo.yaml --gmis 1,2,4,8 --envs-per-gpu 16384 --iterations 10 --warmup 2
st --configs config/tag_continuous_ppo.yaml --gmis 1,2,4,8 --envs-per-gpu 400 --iterations 5 --warmup 2 --set ppo.num_steps=50
st --configs config/hopper_ppo.yaml --gmis 1,2,4,8 --envs-per-gpu 512 --iterations 4 --warmup 1 --set ppo.num_steps=64 --cores-per-gpu 16
st --configs config/hopper_sac.yaml --gmis 1,2,4,8 --envs-per-gpu 8 --iterations 5 --warmup 2 --set sac.num_steps=200 --set sac.learning_starts=256 --cores-per-gpu 16
python3 postprocess/scaling.py $S --out $S > /dev/null 2>&1; cat $S/scaling.md
cd /tmp && tar czf $OUT/study.tgz study
echo "== end t=$(el)"
