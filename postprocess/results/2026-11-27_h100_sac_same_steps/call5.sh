#!/usr/bin/env bash
# Issue 30, after review: test_mujoco (7-step episodes: block path against the per-array paths on
# flags and final observations), test_offpolicy (SAC's U = 0 kinds with a target step, captured
# against direct), bench-env --repeats; grouped and whole-batch Hopper against bf0129a (gmi_drl_p).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30t.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'
for t in test_mujoco test_offpolicy; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
timeout 200 python3 tests/cli/check_bench_env.py --gmi $B/gmi_drl --workdir $W/cbe --mujoco; echo "check_bench_env rc=$? t=$(el)"
for rep in 1 2 3 4; do for bs in 16 64; do for bin in gmi_drl_p gmi_drl; do
  nm=env_${bin}_Hopper_64_${bs}_$rep
  timeout 100 $B/$bin bench-env --name Hopper-v5 --num-envs 64 --threads 16 --steps 2000 --warmup 50 \
    --set env.batch_size=$bs --json $W/$nm.json > $W/$nm.log 2>&1
  echo "$nm rc=$? $(grep -o '[0-9]* env steps/s' $W/$nm.log | head -1)"
done; done; done
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
