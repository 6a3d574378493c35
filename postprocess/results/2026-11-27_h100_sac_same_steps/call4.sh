#!/usr/bin/env bash
# Issue 30: a MuJoCo step of every env uploads its results in one copy of one pinned block and one
# kernel (instead of five copies); against bf0129a (gmi_drl_p) in the same call, interleaved; SAC
# beside CleanRL and LeanRL; the MuJoCo tasks against Gymnasium step by step.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i30s.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
sps() { python3 -c "
import csv, sys; r=list(csv.DictReader(open('$1/metrics.csv'))); at={int(float(x['env_steps'])): float(x['wall_time_s']) for x in r}
print('env-steps/s 5000-12000: %.1f  6000-12000: %.1f' % (7000 / (at[12000] - at[5000]), 6000 / (at[12000] - at[6000])))"; }
{
nvidia-smi --query-gpu=name --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'
for t in test_mujoco test_offpolicy test_ppo test_envs; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? t=$(el)"; grep -aE "FAILED|PASSED|Failure" $W/$t.log | head -8
done
for rep in 1 2 3; do for bin in gmi_drl_p gmi_drl; do
  n=sac_${bin}_$rep
  timeout 60 $B/$bin --config config/half_cheetah_sac.yaml --set train.total_env_steps=12000 --set checkpoint.interval=0 --run-dir $W/$n > $W/$n.log 2>&1
  echo "$n rc=$? $(sps $W/$n)"
done; done
for v in "Humanoid-v5|2048|16|100|2048" "Hopper-v5|64|1,16|1000|64" "Hopper-v5|64|16|1000|16" "HalfCheetah-v5|1|1|5000|1"; do for rep in 1 2; do for bin in gmi_drl_p gmi_drl; do
  IFS='|' read -r env n th st bs <<< "$v"; nm=env_${bin}_${env}_${n}_${bs}_$rep
  timeout 100 $B/$bin bench-env --name $env --num-envs $n --threads $th --steps $st --warmup 20 --set env.batch_size=$bs --json $W/$nm.json > $W/$nm.log 2>&1
  echo "$nm rc=$? $(python3 -c "import json; d=json.load(open('$W/$nm.json')); print([(r.get('threads'), round(r.get('env_steps_per_s', 0))) for r in d['results']])" 2>&1 | tail -1)"
done; done; done
echo "t=$(el)"
SAC=.peers/sac bash postprocess/peers/sac_peers.sh $B/gmi_drl $W/sac > $W/sac.log 2>&1; echo "sac_peers rc=$? t=$(el)"; tail -9 $W/sac.log
PYTHONPATH=/tmp/site timeout 200 python3 tests/envs/compare_mujoco.py --gmi $B/gmi_drl --env-list $B/gmi_env_list --workdir $W/cmp --steps 1000 --envs 3 > $W/cmp.log 2>&1; echo "compare_mujoco rc=$? t=$(el)"; tail -3 $W/cmp.log
} 2>&1 | tee $OUT/log.txt
rm -rf $W/sac/peers/*/ $W/*/checkpoints $W/cmp 2>/dev/null
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
