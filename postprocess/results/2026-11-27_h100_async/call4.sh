#!/usr/bin/env bash
# Issue 34, call 4: Sample Factory 2.1.1 async APPO (16 workers x 4 envs, 64x64 tanh) beside gmi_drl
# (PPO dp, APPO async) on Ant-v5 and Humanoid-v5 in the same call on one H100 machine (16 cores):
# env-steps/s and wall time to mean returns of 1,000 and 2,000.
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
ret = [(float(x['env_steps']), float(x['wall_time_s']), float(x['episode_return_mean'])) for x in r if x['episode_return_mean'] not in ('', 'nan')]
t = float(r[-1]['wall_time_s']); s = float(r[-1]['env_steps'])
def first(th):
    for st, w, v in ret:
        if v >= th: return f"{st:.0f} steps / {w:.1f} s"
    return "-"
tail = [v for _, _, v in ret[-max(1, len(ret) // 10):]]
print(f"{s / t / 1e3:.1f} k env-steps/s over {s:.0f} steps in {t:.1f} s; >=1000 at {first(1000)}; >=2000 at {first(2000)}; last 10 % {sum(tail) / len(tail):.1f}; best {max(v for _, _, v in ret):.1f}")
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
A=config/ant_ppo_many_envs.yaml
for env in Ant-v5 Humanoid-v5; do
  one ${env}_ppo_dp 1 $A env.name=$env train.total_env_steps=1500000
  one ${env}_appo_async3 3 $A env.name=$env algo=appo train.total_env_steps=1500000 mapping.template=async env.num_envs=32 env.batch_size=16
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
done
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
for d in $W/*/; do rm -rf $d/checkpoints; done
tar czf $OUT/w.tgz -C $W . 2>/dev/null; ls -la $OUT
