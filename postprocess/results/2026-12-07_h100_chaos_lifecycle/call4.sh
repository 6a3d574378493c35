#!/usr/bin/env bash
# Issue 32: a chaos segment of 1-8 GMI jobs under MPS (seed 33, about 5 minutes), on one H100 with the CUDA build of main.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/b1.tar.xz -C /tmp/b bin/gmi_drl lib
source .gpu/env.sh /tmp/b
timeout 420 python3 tests/chaos/chaos.py --gmi /tmp/b/bin/gmi_drl --mpiexec $(which mpiexec) --workdir /tmp/soak \
  --seed 33 --faults 60 --max-gmis 8 --minutes 5 --set gmi.backend=mps > $OUT/soak_seed33.log 2>&1
echo "chaos rc=$?"
grep -a -E "^==|final state|faults injected|FAILED|hang" $OUT/soak_seed33.log | grep -v "status 4" | cut -c1-200 | tail -16
pgrep -fa "nvidia-cuda-mps|gmi_drl" || echo "no gmi_drl process or MPS daemon left"
