#!/usr/bin/env bash
# Device physics pipeline on the GPU: step-by-step checks (test_physics), throughput
# (bench_physics) and MJX on the same models in the same call.
set -u
mkdir -p /tmp/b && tar xJf .gpu/i36p.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== test_physics"; timeout 240 /tmp/b/bin/test_physics 2>&1 | grep -vE "^\[ (RUN|  +OK) " | tee $OUT/test_physics.txt | tail -60
echo "== bench_physics"; timeout 120 /tmp/b/bin/bench_physics --seconds 2 --json $OUT/bench_physics.json 2>&1 | tail -8
echo "== mjx"; python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
timeout 300 python3 /tmp/b/mjx_smooth.py 2 2>&1 | grep -v Warning | tee $OUT/mjx.jsonl | tail -8
