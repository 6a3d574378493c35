#!/usr/bin/env bash
# Issue 34, call 2: async with the serving GMIs on 7 of 16 CPUs each (one left to the trainer) against the
# default share (8 each) and dp; HalfCheetah (256x256) too; Sample Factory APPO on Hopper-v5 if carried.
#
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34b.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
MPI="mpiexec --oversubscribe --bind-to none"
summ() { python3 - "$1" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1] + '/metrics.csv')))
ret = [float(x['episode_return_mean']) for x in r if x['episode_return_mean'] not in ('', 'nan')]
tail = ret[-max(1, len(ret) // 10):]
t = float(r[-1]['wall_time_s']); s = float(r[-1]['env_steps'])
lag = r[-1].get('policy_lag', '-')
print(f"{s / t / 1e3:.1f} k env-steps/s over {s:.0f} steps in {t:.1f} s; last 10 % return {sum(tail) / len(tail):.1f}; best {max(ret):.1f}; lag {lag}")
PY
}
one() {  # name n config sets...
  local name=$1 n=$2 c=$3; shift 3
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  timeout 200 $MPI -n $n $B/gmi_drl --config $c --run-dir $W/$name --set checkpoint.interval=0 --set log.tensorboard=false "${args[@]}" > $W/$name.log 2>&1
  echo "$name rc=$? $(summ $W/$name 2>&1 | tail -1) t=$(el)"
}
{
nvidia-smi --query-gpu=name --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'; nproc
for t in test_vtrace test_roles; do timeout 100 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? $(grep -aE 'PASSED|FAILED' $W/$t.log | head -2)"; done
timeout 100 $B/test_ppo --gtest_brief=1 --gtest_filter='Appo*' > $W/test_ppo.log 2>&1; echo "test_ppo Appo rc=$? $(grep -aE 'PASSED|FAILED' $W/test_ppo.log | head -2)"
H=config/hopper_ppo_many_envs.yaml
Q=config/half_cheetah_ppo_many_envs.yaml
for rep in 1 2; do
  for algo in ppo appo; do
    one hopper_${algo}_dp_$rep 1 $H algo=$algo train.total_env_steps=1000000
    one hopper_${algo}_async3_$rep 3 $H algo=$algo train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16
    one hopper_${algo}_async3t7_$rep 3 $H algo=$algo train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16 env.threads=7
  done
  one cheetah_ppo_dp_$rep 1 $Q train.total_env_steps=1000000
  one cheetah_ppo_async3t7_$rep 3 $Q train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16 env.threads=7
  one cheetah_appo_async3t7_$rep 3 $Q algo=appo train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16 env.threads=7
done
echo "t=$(el)"
if [ -d .peers/sf ]; then
  PYTHONPATH=$PWD/.peers/sf/site timeout 200 python3 .peers/sf/sf_mujoco.py --env Hopper-v5 --num-workers 16 --train-for-seconds 120 --device gpu --out $W/sf_hopper > $W/sf_hopper.log 2>&1
  echo "sample factory rc=$? t=$(el)"; tail -5 $W/sf_hopper.log; python3 -c "import json; d=json.load(open('$W/sf_hopper/result.json')); print({k: v for k, v in d.items() if k != 'curve'})"
fi
} 2>&1 | tee $OUT/log.txt
for d in $W/*/; do rm -rf $d/checkpoints; done
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
