#!/usr/bin/env bash
# Issue 33: serving under dp, mp-dp, dp-mp (gmi_drl eval) on one H100 machine, steps counted as dp counts them,
# with the GPU's utilisation and memory sampled during each run (nvidia-smi every 100 ms).
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i33c.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=/tmp/w33; rm -rf $W; mkdir -p $W
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none"
ev() { # name np ckpt episodes envs [sets...]
  local name=$1 np=$2 ck=$3 eps=$4 envs=$5; shift 5
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 100 > $W/$name.smi &
  local smi=$!
  timeout 120 $MPI -np $np $B/gmi_drl eval --checkpoint $ck --episodes $eps --num-envs $envs --seed 7 --json $W/$name.json "$@" 2>&1 \
    | grep -E "eval: [0-9]+ episodes:|error" | sed "s/^/$name: /" | cut -c1-330
  kill $smi
  awk -F', ' -v n=$name '{u+=$1; if ($2>m) m=$2; c++} END {printf "%s: GPU utilisation mean %.0f %% over %d samples, memory max %d MiB\n", n, u/c, c, m}' $W/$name.smi
}
{
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
$B/gmi_drl --config config/humanoid_ppo.yaml --run-dir $W/hum --set train.total_env_steps=2048 --log-level warn
$B/gmi_drl --config config/humanoid_sac_many_envs.yaml --run-dir $W/hsac --set train.total_env_steps=1024 --set checkpoint.replay=false --log-level warn
$B/gmi_drl --config config/cartpole_ppo.yaml --run-dir $W/cp --set train.total_env_steps=2048 --log-level warn
H=$(ls $W/hum/checkpoints/*.h5 | tail -1); S=$(ls $W/hsac/checkpoints/*.h5 | tail -1); C=$(ls $W/cp/checkpoints/*.h5 | tail -1)
for rep in 1 2; do
  ev hum_dp8_r$rep 8 $H 12000 64
  ev hum_dp7_r$rep 7 $H 12000 64
  ev hum_mpdp8_r$rep 8 $H 12000 64 --set mapping.template=mp-dp
  ev hum_dpmp8_r$rep 8 $H 12000 64 --set mapping.template=dp-mp
  ev hum_dp4_r$rep 4 $H 12000 64
  ev hsac_dp8_r$rep 8 $S 6000 64
  ev hsac_dp7_r$rep 7 $S 6000 64
  ev hsac_mpdp8_r$rep 8 $S 6000 64 --set mapping.template=mp-dp
  ev cp_dp4_r$rep 4 $C 2000000 4096
  ev cp_dp3_r$rep 3 $C 2000000 4096
  ev cp_mpdp4_r$rep 4 $C 2000000 4096 --set mapping.template=mp-dp
done
} 2>&1 | tee $OUT/log.txt
cd $W && python3 - <<'PY' > $OUT/summary.json
import glob, json
out = {}
for f in sorted(glob.glob("*.json")):
    j = json.load(open(f))
    j.pop("returns", None); j.pop("lengths", None)
    out[f[:-5]] = j
print(json.dumps(out, indent=1))
PY
ls -la $OUT
