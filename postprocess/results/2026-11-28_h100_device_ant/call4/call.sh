#!/usr/bin/env bash
# PPO on DeviceAnt-v5 (config/ant_device_ppo.yaml), seeds 2 and 3 for 100 s each (seed 1 ran in
# the first call of the day with the same settings), and PPO on DeviceHumanoid-v5 for 80 s; one H100.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36base.tar.xz -C /tmp/b lib assets && tar xJf .gpu/i36z.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
B=/tmp/b/bin; W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
train() {  # NAME SECONDS CONFIG [--set ...]
  local n=$1 s=$2 c=$3; shift 3
  timeout $s $B/gmi_drl --config $c --run-dir $W/$n "$@" > $W/$n.log 2>&1; echo "$n rc=$?"
  grep -a "iter " $W/$n.log | tail -1 | cut -c1-150
  cp $W/$n/metrics.csv $OUT/$n.metrics.csv 2>/dev/null
}
train ant_s2 100 config/ant_device_ppo.yaml --set train.seed=2
train ant_s3 100 config/ant_device_ppo.yaml --set train.seed=3
train hum_s1 80 config/humanoid_device_ppo.yaml
cd $W && tar czf $OUT/logs.tgz *.log 2>/dev/null; rm -rf $W
