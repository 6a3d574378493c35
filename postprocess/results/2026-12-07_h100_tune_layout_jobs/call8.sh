#!/usr/bin/env bash
# Call 8 (2026-12-07, eighth session; main 14b221f): tune probing each layout's env counts in one job
# (--probe-jobs layout) against a job per point, and tune choosing among dp, ea-t and async (bench under
# the serving templates), on one H100.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$(pwd)
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b8.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W; cd $W
L="$(which mpiexec) --bind-to none"
CP=$R/config/bench_cartpole_ppo.yaml
TC=$R/config/tag_continuous_ppo.yaml
tune() {  # name timeout args...
  local name=$1 secs=$2; shift 2
  timeout -s TERM -k 20 $secs $B/gmi_drl tune --launcher "$L" --workdir $W/$name --json $W/$name.json "$@" > $W/$name.log 2>&1
  echo "$name rc=$? t=$(el)"; grep -a -E "chosen:|Algorithm 1 on" $W/$name.log | cut -c12-400
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
# The grid as a job per point (the exhaustive baseline; Algorithm 1 replayed on it), then Algorithm 1
# with a job per layout, then the whole grid with a job per layout.
tune A 200 --config $CP --max-gmis-per-gpu 4 --env-counts 1024..16384 --exhaustive --probe-jobs point
tune B 100 --config $CP --max-gmis-per-gpu 4 --env-counts 1024..16384 --probe-jobs layout
tune C 120 --config $CP --max-gmis-per-gpu 4 --env-counts 1024..16384 --exhaustive --probe-jobs layout
# Templates: CartPole and continuous Tag, dp against the serving templates.
tune D 150 --config $CP --templates dp,ea-t,async --max-gmis-per-gpu 3 --env-counts 2048,4096,8192 \
  --probe-iterations 10 --probe-warmup 3 --exhaustive
tune E 150 --config $TC --set ppo.num_steps=50 --templates dp,async --max-gmis-per-gpu 5 --env-counts 25,50,100 \
  --probe-iterations 8 --probe-warmup 2 --exhaustive --budget-minutes 2
for n in A B C D E; do echo "== $n"; sed -n '/^template\|^ *GMIs/,/chosen/p' $W/$n.log | head -40; done
echo "done t=$(el)"
} 2>&1 | tee $OUT/log.txt
cd $W && tar cJf $OUT/r.tar.xz --exclude='*.tfevents*' --exclude='*.h5' . ; ls -la $OUT
