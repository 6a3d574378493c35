#!/usr/bin/env bash
# Call 9 (2026-12-07, eighth session; main e26a720 + results): the review's fixes to tune's layout jobs on
# one H100 (the CartPole grid again), and tune choosing between dp and async for PPO on Humanoid-v5 with
# host physics (16 cores), with Gymnasium's 64x64 policy settings and with 256x256 networks.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$(pwd)
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b9.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W; cd $W
L="$(which mpiexec) --bind-to none"
CP=$R/config/bench_cartpole_ppo.yaml
HU=$R/config/ant_ppo_many_envs.yaml
tune() {  # name timeout args...
  local name=$1 secs=$2; shift 2
  timeout -s TERM -k 20 $secs $B/gmi_drl tune --launcher "$L" --workdir $W/$name --json $W/$name.json "$@" > $W/$name.log 2>&1
  echo "$name rc=$? t=$(el)"; grep -a -E "chosen:|Algorithm 1 on|warn" $W/$name.log | cut -c12-400
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
tune B2 100 --config $CP --max-gmis-per-gpu 4 --env-counts 1024..16384 --probe-jobs layout
tune H64 220 --config $HU --set env.name=Humanoid-v5 --templates dp,async --max-gmis-per-gpu 4 --env-counts 128,256 \
  --probe-iterations 4 --probe-warmup 1 --exhaustive
tune H256 220 --config $HU --set env.name=Humanoid-v5 --set "policy.actor_hidden=[256,256]" \
  --set "policy.critic_hidden=[256,256]" --templates dp,async --max-gmis-per-gpu 4 --env-counts 128,256 \
  --probe-iterations 4 --probe-warmup 1 --exhaustive
for n in B2 H64 H256; do echo "== $n"; sed -n '/^template\|^ *GMIs/,/chosen/p' $W/$n.log | head -30; done
echo "done t=$(el)"
} 2>&1 | tee $OUT/log.txt
cd $W && tar cJf $OUT/r.tar.xz --exclude='*.tfevents*' --exclude='*.h5' . ; ls -la $OUT
