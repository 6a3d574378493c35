#!/usr/bin/env bash
# Issue 37: har with the GPUs' leaders through CUDA IPC (reduce.inter_gpu p2p) on 2 GPUs: the
# reducers suite, latency against NCCL (floor, har leaders), the stuck-GMI bounds, then SAC runs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i37t.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin
{
one() {  # tag np
  t0=$(date +%s); GMI_TEST_GPUS=2 timeout 150 mpirun -n $2 --oversubscribe -x GMI_TEST_GPUS $B/test_reducers --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
  echo "TEST $1 np$2 rc=$rc $(( $(date +%s) - t0 ))s $(grep -aE 'PASSED|FAILED|SKIPPED' /tmp/t.log | sort -u | tr '\n' ' ')"
  [ $rc -eq 0 ] || grep -aE "Failure|error|Expected|Which is" /tmp/t.log | head -8
}
one nomps 2; one nomps 4
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p /tmp/mps /tmp/mps-log
nvidia-cuda-mps-control -d && echo "MPS up"
one mps 4
echo quit | nvidia-cuda-mps-control; sleep 2
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for np in 2 4; do
  timeout 120 mpirun -n $np --oversubscribe $B/gmi_drl bench-reduce --config config/cartpole_ppo.yaml --set gmi.gpus_per_node=2 \
    --sizes 9216,102400,327680,1048576,10485760 --strategies floor,har-ipc,har-p2p --runs 200 --warmup 20 \
    --json /tmp/reduce_np$np.json > /tmp/r$np.log 2>&1
  echo "REDUCE np$np rc=$? t=$(el)"; grep -aE "^\[.*(floor|har)|skipping|error" /tmp/r$np.log | cut -c1-160
done
( cd tests/cli && timeout 300 python3 check_hang.py gpus2_p2p --gmi $B/gmi_drl --mpiexec mpirun --workdir /tmp/hang ) 2>&1 | tail -8
echo "hang done t=$(el)"
python3 - <<'PY'
import json
out = {}
for np_ in (2, 4):
    try:
        out[f"np{np_}"] = json.load(open(f"/tmp/reduce_np{np_}.json"))
    except Exception as e:
        out[f"np{np_}"] = str(e)
json.dump(out, open("/tmp/reduce.json", "w"), indent=1)
PY
cp /tmp/reduce.json $OUT/
} 2>&1 | tee $OUT/tests.txt
bash .gpu/i37t.sh
