#!/usr/bin/env bash
set -u
mkdir -p /tmp/b && [ -x /tmp/b/bin/bench_physics ] || tar xJf .gpu/i36p.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
export GMI_MUJOCO_ASSETS=/tmp/b/assets
python3 -c "import mujoco.mjx" 2>/dev/null || python3 -m pip install -q --no-deps --no-index /tmp/b/whl/*.whl 2>&1 | tail -2
timeout 200 python3 .gpu/mjx_smooth.py 2 humanoid.xml 2>&1 | grep -v -i warp | tee $OUT/mjx_humanoid.jsonl
