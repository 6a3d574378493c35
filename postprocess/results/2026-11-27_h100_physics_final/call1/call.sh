#!/usr/bin/env bash
# The final build of the day's device physics on the GPU: test_physics, and bench_physics on the
# same steps as MJX timed and on the floor (no MJX: its figures are the previous call's).
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36p.tar.xz -C /tmp/b lib assets && tar xJf .gpu/i36w.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 /tmp/b/bin/test_physics 2>&1 | grep -vE "^\[ (RUN|  +OK) " > $OUT/test_physics.txt; tail -3 $OUT/test_physics.txt
timeout 100 /tmp/b/bin/bench_physics --steps 10 --cases ant.xml:full,humanoid.xml:full --envs 4096,65536 --json $OUT/bench_same_steps.json 2>&1 | tail -4
timeout 150 /tmp/b/bin/bench_physics --warmup 1.2 --seconds 2 --cases ant.xml:full,humanoid.xml:full --envs 4096,65536 --json $OUT/bench_on_floor.json 2>&1 | tail -4
