#!/usr/bin/env bash
# Issue 30: SAC's per-step Polyak inside the update graph (bf0129a) against 3e47054's behaviour (gmi_drl_base), interleaved, then the peers.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30r.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
sps() { python3 -c "
import csv, sys; r=list(csv.DictReader(open('$1/metrics.csv'))); at={int(float(x['env_steps'])): float(x['wall_time_s']) for x in r}
lo=min(k for k in at if k >= $2); hi=max(at)
print('env-steps/s %d-%d:' % (lo, hi), round((hi - lo) / (at[hi] - at[lo]), 1))"; }
{
nvidia-smi --query-gpu=name --format=csv,noheader
for t in test_offpolicy; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
for rep in 1 2 3 4; do for bin in gmi_drl_base gmi_drl; do
  n=sac_${bin}_$rep
  timeout 60 $B/$bin --config config/half_cheetah_sac.yaml --set train.total_env_steps=12000 --set checkpoint.interval=0 --run-dir $W/$n > $W/$n.log 2>&1
  echo "$n rc=$? $(sps $W/$n 5000)"
done; done
echo "t=$(el)"
SAC=.peers/sac bash postprocess/peers/sac_peers.sh $B/gmi_drl $W/sac > $W/sac.log 2>&1; echo "sac_peers rc=$? t=$(el)"; tail -9 $W/sac.log
} 2>&1 | tee $OUT/log.txt
rm -rf $W/sac/peers/*/ $W/*/checkpoints 2>/dev/null
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
