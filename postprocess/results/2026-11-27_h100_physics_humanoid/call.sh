#!/usr/bin/env bash
# Device physics with contacts and limits on the GPU: test_physics, bench_physics, MJX on the same models.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36p.tar.xz -C /tmp/b && tar xJf .gpu/i36s.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== test_physics"; timeout 240 /tmp/b/bin/test_physics 2>&1 | grep -vE "^\[ (RUN|  +OK) " | tee $OUT/test_physics.txt | grep -E "full|PASSED|FAILED|Failure" | tail -40
echo "== bench_physics"; timeout 150 /tmp/b/bin/bench_physics --seconds 2 --json $OUT/bench_physics.json 2>&1 | tail -8
echo "== mjx"; python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
timeout 380 python3 .gpu/mjx_physics.py 2 ant.xml:full,humanoid.xml:full 2>&1 | grep -v -i warp | tee $OUT/mjx.jsonl
