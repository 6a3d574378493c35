#!/usr/bin/env bash
# Issue 34: off-policy under async and ea-t with the CUDA build on one H100: the GPU tests of the
# changed trainers, check_async's offpolicy and lockstep modes, and SAC Humanoid-v5 (many envs)
# under dp against async with 2 and 4 serving GMIs on the machine's 16 cores.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
# .gpu/b1.tar.xz: bin/ (gmi_drl, test_offpolicy, test_ppo of the CUDA build, stripped), lib/ (bundle-libs.sh),
# assets/ (Gymnasium's MuJoCo model files)
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b1.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
MPI="mpiexec --oversubscribe --bind-to none"
summ() { python3 - "$1" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1] + '/metrics.csv')))
ret = [(float(x['env_steps']), float(x['wall_time_s']), float(x['episode_return_mean'])) for x in r if x['episode_return_mean'] not in ('', 'nan')]
t = float(r[-1]['wall_time_s']); s = float(r[-1]['env_steps'])
h = r[len(r) // 2:]
rate = (float(h[-1]['env_steps']) - float(h[0]['env_steps'])) / max(1e-9, float(h[-1]['wall_time_s']) - float(h[0]['wall_time_s']))
def first(th):
    for st, w, v in ret:
        if v >= th: return f"{st:.0f} steps / {w:.1f} s"
    return "-"
tail = [v for _, _, v in ret[-max(1, len(ret) // 10):]] or [float('nan')]
extra = ""
if 'pps' in r[0]:
    m = lambda c: sum(float(x[c]) for x in h) / len(h)
    extra = f" | 2nd half: pps {m('pps')/1e3:.2f} k ttp {m('ttp')/1e3:.2f} k lag {m('policy_lag'):.2f} max {max(float(x['policy_lag_max']) for x in h):.0f} dropped {sum(float(x['dropped_samples']) for x in r):.0f} serving_busy {m('serving_busy'):.2f} trainer_busy {m('trainer_busy'):.2f}"
upd = sum(float(x['updates']) for x in r)
print(f"{s / t / 1e3:.2f} k env-steps/s over {s:.0f} steps in {t:.1f} s (2nd half {rate/1e3:.2f} k/s); {upd:.0f} updates; >=1000 at {first(1000)}; >=3000 at {first(3000)}; last 10 % {sum(tail) / len(tail):.1f}; best {max([v for _, _, v in ret] or [float('nan')]):.1f}{extra}")
PY
}
one() {  # name n seconds config sets...
  local name=$1 n=$2 secs=$3 c=$4; shift 4
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  timeout -s TERM -k 20 $secs $MPI -n $n $B/gmi_drl --config $c --run-dir $W/$name --set checkpoint.interval=0 --set checkpoint.replay=false --set log.tensorboard=false "${args[@]}" > $W/$name.log 2>&1
  echo "$name rc=$? $(summ $W/$name 2>&1 | tail -1) t=$(el)"
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
for t in test_offpolicy test_ppo; do
  timeout 240 $B/$t --gtest_brief=1 > $W/$t.log 2>&1; echo "$t rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $W/$t.log | tr '\n' ' ') t=$(el)"
done
for m in offpolicy lockstep; do
  timeout 200 python3 tests/cli/check_async.py $m --gmi $B/gmi_drl --mpiexec $(which mpiexec) --workdir $W/check_$m > $W/check_$m.log 2>&1
  echo "check_async $m rc=$? $(grep -a -E 'ok$|FAIL|bit for bit|once each' $W/check_$m.log | tr '\n' ' ' | cut -c1-900) t=$(el)"
done
H=config/humanoid_sac_many_envs.yaml
one sac_humanoid_dp 1 100 $H train.total_env_steps=2000000
one sac_humanoid_async3 3 100 $H train.total_env_steps=2000000 mapping.template=async env.num_envs=32 env.threads=8
one sac_humanoid_async5 5 100 $H train.total_env_steps=2000000 mapping.template=async env.num_envs=16 env.threads=4
} 2>&1 | tee $OUT/c1.log
for d in $W/sac_humanoid_*; do mkdir -p $OUT/runs/$(basename $d); cp $d/metrics.csv $d/config.yaml $OUT/runs/$(basename $d)/ 2>/dev/null; done
tail -30 $W/sac_humanoid_async3.log > $OUT/runs/async3_tail.log 2>/dev/null
cd $OUT && tar czf runs.tgz runs && rm -rf runs
