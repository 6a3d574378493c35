#!/usr/bin/env bash
# Issue 30/29: cuBLASLt epilogues (device.gemm_epilogues) on one H100: the GPU tests, SAC update
# events on and off, SAC HalfCheetah end to end beside CleanRL and LeanRL, PPO's layered kernels.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30g.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader; nproc
if [ -z "${SKIP_TESTS:-}" ]; then
for t in test_mlp test_blas test_offpolicy test_ppo; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
fi
for cfg in half_cheetah_sac bench_humanoid_sac; do for bs in 256 1024; do for e in true false; do
  n=upd_${cfg}_${bs}_$e
  timeout 120 $B/gmi_drl bench --config config/$cfg.yaml --mode update --num-envs 1 --iterations 3000 --warmup 300 \
    --set sac.batch_size=$bs --set device.gemm_epilogues=$e --json $W/$n.json > $W/$n.log 2>&1
  echo "$n rc=$? t=$(el) $(python3 -c "import json; r=json.load(open('$W/$n.json'))['results'][0]; print({k: v for k, v in r.items() if 'update' in k or 'kernel' in k or 'blas' in k})" 2>&1 | cut -c1-300)"
done; done; done
if [ -z "${SKIP_PEERS:-}" ]; then
  SAC=.peers/sac bash postprocess/peers/sac_peers.sh $B/gmi_drl $W/sac > $W/sac.log 2>&1; echo "sac_peers rc=$? t=$(el)"; tail -8 $W/sac.log
fi
for m in fp32 tf32; do for e in true false; do
  n=ppo_hum_${m}_$e
  timeout 150 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --iterations 20 --warmup 3 \
    --set device.fused_kernels=off --set device.matmul=$m --set device.gemm_epilogues=$e --json $W/$n.json > $W/$n.log 2>&1
  echo "$n rc=$? t=$(el) $(python3 -c "import json; print([round(r['env_steps_per_s']) for r in json.load(open('$W/$n.json'))['results']])" 2>&1 | tail -1)"
done; done
} 2>&1 | tee $OUT/log.txt
rm -rf $W/sac/peers/*/ 2>/dev/null
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
