#!/usr/bin/env bash
# Humanoid at 4096 envs, the final build beside MJX in one call: the same steps 2-11, and on the floor.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36p.tar.xz -C /tmp/b && tar xJf .gpu/i36w.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 /tmp/b/bin/bench_physics --steps 10 --cases humanoid.xml:full --envs 4096 --json $OUT/bench_same_steps.json 2>&1 | tail -1
timeout 60 /tmp/b/bin/bench_physics --warmup 1.2 --seconds 2 --cases humanoid.xml:full --envs 4096 --json $OUT/bench_on_floor.json 2>&1 | tail -1
python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
timeout 150 python3 .gpu/mjx_physics.py 10 humanoid.xml:full 4096 2>&1 | grep -v -i warp | tee $OUT/mjx.jsonl
