#!/usr/bin/env bash
# Issue 32 on one H100 with the CUDA build of main: the MPS life cycle loop at the length
# (50 back-to-back jobs of 1-8 GMIs, sweeps, a daemonless pipe, plain CUDA processes), then a chaos
# segment of one-GMI jobs only under MPS (the layout that hung once on 2026-11-27: seed 12's seventh job).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b1.tar.xz -C /tmp/b bin/gmi_drl lib
source .gpu/env.sh /tmp/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 280 python3 tests/chaos/mps_lifecycle.py --gmi /tmp/b/bin/gmi_drl --mpirun $(which mpiexec) --jobs 50 --seed 32 \
  --json $OUT/lifecycle.json > $OUT/lifecycle.log 2>&1
echo "lifecycle rc=$? t=$(el)"; tail -2 $OUT/lifecycle.log | cut -c1-250
timeout 330 python3 tests/chaos/chaos.py --gmi /tmp/b/bin/gmi_drl --mpiexec $(which mpiexec) --workdir /tmp/soak \
  --seed 32 --faults 60 --max-gmis 1 --minutes 4.5 --set gmi.backend=mps > $OUT/soak_1gmi.log 2>&1
echo "chaos rc=$? t=$(el)"
grep -a -E "^==|final state|faults injected|survived|FAILED|hang" $OUT/soak_1gmi.log | cut -c1-220 | tail -14
pgrep -fa "nvidia-cuda-mps|gmi_drl" || echo "no gmi_drl process or MPS daemon left"
