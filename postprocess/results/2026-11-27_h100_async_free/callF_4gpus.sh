#!/usr/bin/env bash
# Issue 34 (and 37): async against dp on four GPUs of one host (64 cores): one GMI per GPU under dp;
# 1 trainer + 2 serving GMIs per GPU under async, the four trainers reducing through NCCL (har).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34j.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
MPI="mpiexec --oversubscribe --bind-to none"
summ() { python3 - "$1" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1] + '/metrics.csv')))
ret = [float(x['episode_return_mean']) for x in r if x['episode_return_mean'] not in ('', 'nan')]
t = float(r[-1]['wall_time_s']); s = float(r[-1]['env_steps'])
tail = ret[-max(1, len(ret) // 10):]
extra = ""
if 'pps' in r[0]:
    h = r[len(r) // 2:]
    m = lambda c: sum(float(x[c]) for x in h) / len(h)
    extra = f" | 2nd half: pps {m('pps')/1e3:.1f} k ttp {m('ttp')/1e3:.1f} k lag {m('policy_lag'):.2f} max {max(float(x['policy_lag_max']) for x in h):.0f} dropped {sum(float(x['dropped_samples']) for x in r):.0f} serving_busy {m('serving_busy'):.2f} trainer_busy {m('trainer_busy'):.2f}"
print(f"{s / t / 1e3:.1f} k env-steps/s over {s:.0f} steps in {t:.1f} s; last 10 % {sum(tail) / len(tail):.1f}; best {max(ret):.1f}{extra}")
PY
}
one() {  # name n config sets...
  local name=$1 n=$2 c=$3; shift 3
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  timeout 150 $MPI -n $n $B/gmi_drl --config $c --run-dir $W/$name --set checkpoint.interval=0 --set log.tensorboard=false "${args[@]}" > $W/$name.log 2>&1
  echo "$name rc=$? $(summ $W/$name 2>&1 | tail -1) $(grep -a -o 'gradient reduction: [^|]*' $W/$name.log | head -1 | cut -c1-120) t=$(el)"
}
{
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
H=config/hopper_ppo_many_envs.yaml; HC=config/half_cheetah_ppo_many_envs.yaml; C=config/bench_cartpole_ppo.yaml
for rep in 1 2; do
  for algo in ppo appo; do
    one hopper_${algo}_dp4_$rep 4 $H algo=$algo train.total_env_steps=4000000
    one hopper_${algo}_async12_$rep 12 $H algo=$algo train.total_env_steps=4000000 mapping.template=async env.num_envs=32 env.batch_size=16
  done
  one cheetah_ppo_dp4_$rep 4 $HC train.total_env_steps=4000000
  one cheetah_ppo_async12_$rep 12 $HC train.total_env_steps=4000000 mapping.template=async env.num_envs=32 env.batch_size=16
  one cartpole_ppo_dp4_$rep 4 $C train.total_env_steps=400000000
  one cartpole_ppo_async12_$rep 12 $C train.total_env_steps=400000000 mapping.template=async env.num_envs=2048
done
grep -a -A14 "mapping.template async: 12 GMI" $W/hopper_ppo_async12_1.log | cut -c1-80
echo "t=$(el)"
} 2>&1 | tee $OUT/log.txt
