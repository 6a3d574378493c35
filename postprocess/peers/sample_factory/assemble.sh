#!/usr/bin/env bash
# The Sample Factory peer harness in DEST (default .peers/sf, git-ignored): DEST/site with Sample
# Factory 2.1.1 + Gymnasium 1.4.0 + MuJoCo 4.0.0 and their small deps from PyPI, and this folder's
# sf_mujoco.py and run_sf.sh beside it. Run here (a machine with PyPI); the GPU machine has no
# network and uses the site via PYTHONPATH. torch / numpy / protobuf / packaging / pillow are NOT
# carried: the GPU image has them (Python 3.12). Then, on the GPU machine (carry DEST):
#   MUJOCO_GL=disable PYTHONPATH=$PWD/.peers/sf/site python3 .peers/sf/sf_mujoco.py --env Hopper-v5 \
#       --num-workers 16 --train-for-seconds 100 --device gpu --async-rl 1 --out DIR
# (postprocess/results/2026-11-27_h100_async/call3.sh is a call that ran it beside gmi_drl.)
# Usage: bash postprocess/peers/sample_factory/assemble.sh [DEST] [PYTHON3.12]
set -euo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HERE="${1:-.peers/sf}"
mkdir -p "$HERE"
HERE="$(cd "$HERE" && pwd)"
cp "$SRC/sf_mujoco.py" "$SRC/run_sf.sh" "$HERE/"
PY="${2:-}"
if [ -z "$PY" ]; then
  for c in python3.12 /root/.pyenv/versions/3.12*/bin/python3.12 python3; do
    if "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then PY="$c"; break; fi
  done
fi
[ -n "$PY" ] || { echo "need a python3.12 (pass it as \$1)"; exit 2; }
WHL="$(mktemp -d /tmp/sfwhl.XXXXXX)"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any -d "$WHL" \
  sample-factory==2.1.1 signal-slot-mp==1.0.5 faster-fifo==1.5.2 tensorboardx==2.6.5 colorlog==6.12.0 \
  threadpoolctl==3.8.0 psutil==7.2.2 cloudpickle==3.1.3 gymnasium==1.4.0 farama-notifications==0.0.4 \
  typing-extensions==4.16.0 mujoco==4.0.0 mujoco-core==4.0.0 glfw==2.11.0 imageio==2.38.1
ls "$WHL" > "$HERE/wheels.txt"
rm -rf "$HERE/site"
"$PY" -m pip install -q --no-deps --no-index --no-compile --target "$HERE/site" "$WHL"/*.whl
rm -rf "$WHL"
# prune: SF's VizDoom example assets (24 MB), signal-slot's top-level 'tests' package, MuJoCo's docs/codegen
rm -rf "$HERE/site/sf_examples/vizdoom" "$HERE/site/tests" "$HERE/site/mujoco/doc" "$HERE/site/mujoco/introspect" \
  "$HERE/site/bin"
rm -rf "$HERE/site/mujoco/testdata" "$HERE/site/mujoco/include" "$HERE/site/mujoco/sysid" "$HERE/site"/mujoco/*_test.py
find "$HERE/site" -name __pycache__ -prune -exec rm -rf {} +
find "$HERE/site" -name "*.so*" -type f -exec strip --strip-unneeded {} \;   # faster_fifo ships debug info
# NumPy >= 2.4: SF writes size-1 arrays into scalar slots of its trajectory buffers
patch -d "$HERE/site" -p1 < "$SRC/sf_numpy2_tensor_dict.patch"
du -sh "$HERE/site"
