#!/usr/bin/env bash
# Call 5 (2026-12-07, seventh session): the device transport after the fix that call 4's checks asked for
# (a trainer begins its iteration, whose first timing of the kernels zeroes the rollout arrays, before
# the rollouts are copied in): test_shared_slots, test_multi_agent, test_ppo, check_async games, lockstep,
# run and faults on one H100; then env-steps/s under dp (one GMI) and async through device buffers with 2
# serving GMIs (half the envs each) and 4 (a quarter each), for a fixed time, a repeat of call 4's.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b5.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
MPI="mpiexec --oversubscribe --bind-to none"
summ() { python3 - "$1" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1] + '/metrics.csv')))
t = float(r[-1]['wall_time_s']); s = float(r[-1]['env_steps'])
h = r[len(r) // 2:]
rate = (float(h[-1]['env_steps']) - float(h[0]['env_steps'])) / max(1e-9, float(h[-1]['wall_time_s']) - float(h[0]['wall_time_s']))
extra = ""
if 'pps' in r[0]:
    m = lambda c: sum(float(x[c]) for x in h) / len(h)
    extra = f" | 2nd half: pps {m('pps')/1e3:.1f} k ttp {m('ttp')/1e3:.1f} k lag {m('policy_lag'):.2f} dropped {sum(float(x['dropped_samples']) for x in r):.0f} serving_busy {m('serving_busy'):.2f} trainer_busy {m('trainer_busy'):.2f}"
print(f"{len(r)} iterations, {s:.0f} env steps in {t:.1f} s: {s/t/1e3:.1f} k env-steps/s (2nd half {rate/1e3:.1f} k/s){extra}")
PY
}
one() {  # name n seconds config sets...
  local name=$1 n=$2 secs=$3 c=$4; shift 4
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  timeout -s TERM -k 20 $secs $MPI -n $n $B/gmi_drl --config $c --run-dir $W/$name --set checkpoint.interval=0 --set log.tensorboard=false --set train.total_env_steps=1000000000 "${args[@]}" > $W/$name.log 2>&1
  echo "$name rc=$? $(summ $W/$name 2>&1 | tail -1) t=$(el)"; grep -a -o "rollouts through [a-z ]*" $W/$name.log | head -1
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
for np in 1 2 3; do
  timeout 60 $MPI -n $np $B/test_shared_slots --gtest_brief=1 --gtest_color=no > $W/slots$np.log 2>&1; echo "test_shared_slots np$np rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $W/slots$np.log | sort -u | tr '\n' ' ') t=$(el)"
done
for t in test_multi_agent test_ppo; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $W/$t.log | tr '\n' ' ') t=$(el)"
done
for m in games lockstep run faults; do
  timeout 150 python3 tests/cli/check_async.py $m --gmi $B/gmi_drl --mpiexec $(which mpiexec) --workdir $W/check_$m > $W/check_$m.log 2>&1
  echo "check_async $m rc=$? t=$(el)"; grep -a -E 'ok$|FAIL|bit for bit|once each' $W/check_$m.log | cut -c1-200
done
TC=config/tag_continuous_ppo.yaml
one tc_dp 1 30 $TC ppo.num_steps=50
one tc_async_dev 3 30 $TC ppo.num_steps=50 mapping.template=async env.num_envs=50 async.transport=device
one tc_async4_dev 5 30 $TC ppo.num_steps=50 mapping.template=async env.num_envs=25 async.transport=device
GW=config/tag_gridworld_ppo.yaml
one gw_dp 1 26 $GW
one gw_async_dev 3 26 $GW mapping.template=async env.num_envs=1000 async.transport=device
C=config/bench_cartpole_ppo.yaml
one cp_dp 1 24 $C
one cp_async_dev 3 24 $C mapping.template=async env.num_envs=2048 async.transport=device
one cp_async4_dev 5 24 $C mapping.template=async env.num_envs=1024 async.transport=device
echo "done t=$(el)"
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz --exclude='*.tfevents*' . ; ls -la $OUT
