#!/usr/bin/env bash
# Issue 30 clean-up after the final read: adam_step_counted holds its kernel (no adam_elementwise); update_event returns its target updates.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30v.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
{
nvidia-smi --query-gpu=name --format=csv,noheader
for t in test_adam test_offpolicy test_ppo test_fused_update test_sac_loss; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
timeout 60 $B/gmi_drl --config config/half_cheetah_sac.yaml --set train.total_env_steps=12000 --set checkpoint.interval=0 --run-dir $W/sac > $W/sac.log 2>&1
echo "sac rc=$? $(python3 -c "
import csv; r=list(csv.DictReader(open('$W/sac/metrics.csv'))); at={int(float(x['env_steps'])): float(x['wall_time_s']) for x in r}
print('env-steps/s 6000-12000: %.1f, last return %s' % (6000 / (at[12000] - at[6000]), r[-1]['episode_return_mean']))")"
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
