#!/usr/bin/env bash
# Device physics beside MJX on the same env steps (2-11 from the initial pose), then on the floor
# (after 1.2 s of simulated time), with NVML utilisation; one H100.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36p.tar.xz -C /tmp/b && tar xJf .gpu/i36v.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== same steps as MJX"; timeout 120 /tmp/b/bin/bench_physics --steps 10 --cases ant.xml:full,humanoid.xml:full --envs 4096,65536 --json $OUT/bench_same_steps.json 2>&1 | tail -5
echo "== on the floor"; timeout 200 /tmp/b/bin/bench_physics --warmup 1.2 --seconds 2 --cases ant.xml:full,humanoid.xml:full --envs 256,1024,4096,16384,65536 --json $OUT/bench_on_floor.json 2>&1 | tail -11
echo "== mjx"; python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
timeout 420 python3 .gpu/mjx_physics.py 10 ant.xml:full,humanoid.xml:full 2>&1 | grep -v -i warp | tee $OUT/mjx.jsonl
