#!/usr/bin/env bash
# Issue 34: mapping.template async (serving GMIs roll out while their trainer learns) against dp on
# one H100 machine, same call, alternating: PPO and APPO on Hopper-v5 (host physics, 16 cores),
# CartPole and SyntheticHumanoid (device envs).
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
for rep in 1 2; do
  for algo in ppo appo; do
    one hopper_${algo}_dp_$rep 1 $H algo=$algo train.total_env_steps=1000000
    one hopper_${algo}_async3_$rep 3 $H algo=$algo train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16
    one hopper_${algo}_async5_$rep 5 $H algo=$algo train.total_env_steps=1000000 mapping.template=async env.num_envs=16 env.batch_size=8
  done
done
C=config/bench_cartpole_ppo.yaml
for rep in 1 2; do
  for algo in ppo appo; do
    one cartpole_${algo}_dp_$rep 1 $C algo=$algo train.total_env_steps=100000000
    one cartpole_${algo}_async3_$rep 3 $C algo=$algo train.total_env_steps=100000000 mapping.template=async env.num_envs=2048
  done
done
S=config/bench_synthetic_humanoid_ppo.yaml
for algo in ppo appo; do
  one humanoid_${algo}_dp 1 $S algo=$algo train.total_env_steps=20000000 device.matmul=tf32
  one humanoid_${algo}_async3 3 $S algo=$algo train.total_env_steps=20000000 device.matmul=tf32 mapping.template=async env.num_envs=2048
done
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
for d in $W/*/; do rm -rf $d/checkpoints; done
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
