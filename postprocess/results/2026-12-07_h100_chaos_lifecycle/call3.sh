#!/usr/bin/env bash
# Issue 32: the MPS life cycle loop (50 jobs, seed 32) again with the sweep check fixed (a sweep's runs get
# min(100, 200 / per_gpu) % of the SMs), on one H100 with the CUDA build of main.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b1.tar.xz -C /tmp/b bin/gmi_drl lib
source .gpu/env.sh /tmp/b
timeout 280 python3 tests/chaos/mps_lifecycle.py --gmi /tmp/b/bin/gmi_drl --mpirun $(which mpiexec) --jobs 50 --seed 32 \
  --json $OUT/lifecycle.json > $OUT/lifecycle.log 2>&1
echo "lifecycle rc=$?"; grep -v ": ok" $OUT/lifecycle.log | tail -4 | cut -c1-250
pgrep -fa "nvidia-cuda-mps|gmi_drl" || echo "no gmi_drl process or MPS daemon left"
