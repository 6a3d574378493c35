#!/usr/bin/env bash
# PPO layered kernels under the epilogue variants, then SAC HalfCheetah beside CleanRL and LeanRL.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30g.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
for m in fp32 tf32; do for v in "off|false|" "all|true|" "fwd|true|GMI_BGRAD_MAX_K=0" "bgrad|true|GMI_LT_NOFWD=1" "k4096|true|GMI_BGRAD_MAX_K=4096"; do
  IFS='|' read -r name e envs <<< "$v"
  n=ppo_hum_${m}_$name
  env $envs timeout 150 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --iterations 20 --warmup 3 \
    --set device.fused_kernels=off --set device.matmul=$m --set device.gemm_epilogues=$e --json $W/$n.json > $W/$n.log 2>&1
  echo "$n rc=$? t=$(el) $(python3 -c "import json; print([round(r['env_steps_per_s']) for r in json.load(open('$W/$n.json'))['results']])" 2>&1 | tail -1)"
done; done
SAC=.peers/sac bash postprocess/peers/sac_peers.sh $B/gmi_drl $W/sac > $W/sac.log 2>&1; echo "sac_peers rc=$? t=$(el)"; tail -8 $W/sac.log
} 2>&1 | tee $OUT/log.txt
rm -rf $W/sac/peers/*/ 2>/dev/null
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
