#!/usr/bin/env bash
# Issue 34, free-running serving GMIs: the async tests with the CUDA build on one H100, async
# against dp (Hopper PPO/APPO, HalfCheetah PPO, CartPole PPO on the device), and Humanoid-v5 beside
# Sample Factory's async APPO in the same call (16 cores).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34g.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
MPI="mpiexec --oversubscribe --bind-to none"
summ() { python3 - "$1" <<'PY'
import csv, sys, math
r = list(csv.DictReader(open(sys.argv[1] + '/metrics.csv')))
ret = [(float(x['env_steps']), float(x['wall_time_s']), float(x['episode_return_mean'])) for x in r if x['episode_return_mean'] not in ('', 'nan')]
t = float(r[-1]['wall_time_s']); s = float(r[-1]['env_steps'])
def first(th):
    for st, w, v in ret:
        if v >= th: return f"{st:.0f} steps / {w:.1f} s"
    return "-"
tail = [v for _, _, v in ret[-max(1, len(ret) // 10):]]
extra = ""
if 'pps' in r[0]:
    h = r[len(r) // 2:]
    m = lambda c: sum(float(x[c]) for x in h) / len(h)
    extra = f" | 2nd half: pps {m('pps')/1e3:.1f} k ttp {m('ttp')/1e3:.1f} k lag {m('policy_lag'):.2f} max {max(float(x['policy_lag_max']) for x in h):.0f} dropped {sum(float(x['dropped_samples']) for x in r):.0f} serving_busy {m('serving_busy'):.2f} trainer_busy {m('trainer_busy'):.2f}"
print(f"{s / t / 1e3:.1f} k env-steps/s over {s:.0f} steps in {t:.1f} s; >=1000 at {first(1000)}; >=2000 at {first(2000)}; last 10 % {sum(tail) / len(tail):.1f}; best {max(v for _, _, v in ret):.1f}{extra}")
PY
}
one() {  # name n config sets...
  local name=$1 n=$2 c=$3; shift 3
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  timeout 150 $MPI -n $n $B/gmi_drl --config $c --run-dir $W/$name --set checkpoint.interval=0 --set log.tensorboard=false "${args[@]}" > $W/$name.log 2>&1
  echo "$name rc=$? $(summ $W/$name 2>&1 | tail -1) t=$(el)"
}
{
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 60 $MPI -n 3 $B/test_channels --gtest_brief=1 > $W/test_channels.log 2>&1; echo "test_channels np3 rc=$? $(grep -aE 'PASSED|FAILED' $W/test_channels.log | head -2)"
for m in run lag faults; do
  timeout 200 python3 tests/cli/check_async.py $m --gmi $B/gmi_drl --mpiexec $(which mpiexec) --workdir $W/check_$m > $W/check_$m.log 2>&1
  echo "check_async $m rc=$? $(grep -a -E 'ok$|FAIL|slow trainer|SIGTERM:|exit' $W/check_$m.log | tr '\n' ' ' | cut -c1-600) t=$(el)"
done
A=config/ant_ppo_many_envs.yaml; env=Humanoid-v5
one ${env}_ppo_dp 1 $A env.name=$env train.total_env_steps=1200000
one ${env}_appo_async3 3 $A env.name=$env algo=appo train.total_env_steps=1200000 mapping.template=async env.num_envs=32 env.batch_size=16
one ${env}_appo_async5 5 $A env.name=$env algo=appo train.total_env_steps=1200000 mapping.template=async env.num_envs=16 env.batch_size=8
one ${env}_appo_async9 9 $A env.name=$env algo=appo train.total_env_steps=1200000 mapping.template=async env.num_envs=8 env.batch_size=4
MUJOCO_GL=disable PYTHONPATH=$PWD/.peers/sf/site timeout 200 python3 .peers/sf/sf_mujoco.py --env $env --num-workers 16 --train-for-seconds 85 --device gpu --async-rl 1 --target-return 1000 --max-wall 170 --out $W/sf_$env > $W/sf_$env.log 2>&1
echo "sample factory $env async_rl=1 rc=$? t=$(el)"
python3 - $W/sf_$env/result.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d.get('return_curve', [])
def first(th):
    for st, w, v in c:
        if v >= th: return f"{st:.0f} steps / {w:.1f} s"
    return "-"
print({k: d[k] for k in d if k.startswith('env_steps_per_s') or k in ('frames', 'wall_s', 'startup_s', 'final_mean_return', 'completed')})
print(f">=1000 at {first(1000)}; >=2000 at {first(2000)}; best {max([v for _, _, v in c] or [float('nan')]):.1f}")
PY
H=config/hopper_ppo_many_envs.yaml; HC=config/half_cheetah_ppo_many_envs.yaml; C=config/bench_cartpole_ppo.yaml
for rep in 1 2; do
  for algo in ppo appo; do
    one hopper_${algo}_dp_$rep 1 $H algo=$algo train.total_env_steps=1000000
    one hopper_${algo}_async3_$rep 3 $H algo=$algo train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16
  done
  one cheetah_ppo_dp_$rep 1 $HC train.total_env_steps=1000000
  one cheetah_ppo_async3_$rep 3 $HC train.total_env_steps=1000000 mapping.template=async env.num_envs=32 env.batch_size=16
  one cartpole_ppo_dp_$rep 1 $C train.total_env_steps=100000000
  one cartpole_ppo_async3_$rep 3 $C train.total_env_steps=100000000 mapping.template=async env.num_envs=2048
done
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
for d in $W/*/; do rm -rf $d/checkpoints; done
tar czf $OUT/w.tgz -C $W --exclude=checkpoints --exclude='*.h5' . 2>/dev/null; ls -la $OUT
