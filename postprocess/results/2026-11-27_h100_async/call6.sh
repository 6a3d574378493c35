#!/usr/bin/env bash
# Issue 34, final build: the CUDA tests of V-trace (the paper's advantages) and APPO, and short runs of
# APPO under dp and async on one H100.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34f.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name --format=csv,noheader
for t in test_vtrace test_roles; do timeout 60 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? $(grep -aE 'PASSED|FAILED' $W/$t.log | head -2)"; done
timeout 60 $B/test_ppo --gtest_brief=1 --gtest_filter='Appo*' > $W/test_ppo.log 2>&1; echo "test_ppo Appo rc=$? $(grep -aE 'PASSED|FAILED' $W/test_ppo.log | head -2)"
timeout 60 $B/gmi_drl --config config/cartpole_appo.yaml --run-dir $W/cp --set checkpoint.interval=0 > $W/cp.log 2>&1; echo "cartpole_appo dp rc=$? $(tail -1 $W/cp.log)"
timeout 60 mpiexec --oversubscribe --bind-to none -n 3 $B/gmi_drl --config config/cartpole_appo.yaml --run-dir $W/cpa --set mapping.template=async --set env.num_envs=4 --set checkpoint.interval=0 > $W/cpa.log 2>&1; echo "cartpole_appo async rc=$? $(tail -1 $W/cpa.log)"
timeout 60 mpiexec --oversubscribe --bind-to none -n 3 $B/gmi_drl --config config/hopper_ppo_many_envs.yaml --run-dir $W/ha --set algo=appo --set mapping.template=async --set env.num_envs=32 --set env.batch_size=16 --set train.total_env_steps=1000000 --set checkpoint.interval=0 > $W/ha.log 2>&1; echo "hopper_appo async rc=$? $(tail -1 $W/ha.log)"
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
