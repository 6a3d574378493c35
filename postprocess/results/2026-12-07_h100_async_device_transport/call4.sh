#!/usr/bin/env bash
# Call 4 (2026-12-07, seventh session): the device transport of async rollouts (async.transport) with the
# CUDA build on one H100: test_shared_slots (np 1-3), test_multi_agent, test_ppo, check_async games and
# lockstep (ea-t bit for bit dp through the buffers and through host messages); then env-steps/s under dp
# (one GMI), async with async.transport device and host, and ea-t (1 trainer + 2 serving GMIs with half
# the envs each), each for a fixed time (gmi.backend auto: MPS for the 3-GMI runs).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b4.tar.xz -C /tmp/b
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
  timeout 60 $MPI -n $np $B/test_shared_slots --gtest_brief=1 > $W/slots$np.log 2>&1; echo "test_shared_slots np$np rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $W/slots$np.log | sort -u | tr '\n' ' ') t=$(el)"
done
for t in test_multi_agent test_ppo; do
  timeout 200 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $W/$t.log | tr '\n' ' ') t=$(el)"
done
for m in games lockstep; do
  timeout 200 python3 tests/cli/check_async.py $m --gmi $B/gmi_drl --mpiexec $(which mpiexec) --workdir $W/check_$m > $W/check_$m.log 2>&1
  echo "check_async $m rc=$? t=$(el)"; grep -a -E 'ok$|FAIL|bit for bit|once each' $W/check_$m.log | cut -c1-200
done
TC=config/tag_continuous_ppo.yaml
one tc_dp 1 32 $TC ppo.num_steps=50
one tc_async_dev 3 32 $TC ppo.num_steps=50 mapping.template=async env.num_envs=50 async.transport=device
one tc_async_host 3 32 $TC ppo.num_steps=50 mapping.template=async env.num_envs=50 async.transport=host
one tc_eat_dev 3 32 $TC ppo.num_steps=50 mapping.template=ea-t env.num_envs=50 async.transport=device
GW=config/tag_gridworld_ppo.yaml
one gw_dp 1 28 $GW
one gw_async_dev 3 28 $GW mapping.template=async env.num_envs=1000 async.transport=device
one gw_async_host 3 28 $GW mapping.template=async env.num_envs=1000 async.transport=host
C=config/bench_cartpole_ppo.yaml
one cp_dp 1 25 $C
one cp_async_dev 3 25 $C mapping.template=async env.num_envs=2048 async.transport=device
one cp_async_host 3 25 $C mapping.template=async env.num_envs=2048 async.transport=host
echo "done t=$(el)"
} 2>&1 | tee $OUT/log.txt
cd $W && find . -name "*.h5" -delete; tar cJf $OUT/r.tar.xz --exclude='*.tfevents*' . ; ls -la $OUT
