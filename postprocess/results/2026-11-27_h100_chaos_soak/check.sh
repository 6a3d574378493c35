#!/usr/bin/env bash
# Issue 32: the bounded MPS start (40 s) on the GPU: the MPS life cycle loop (8 back-to-back jobs
# of 1-8 GMIs, sweeps, a daemonless pipe) and a 2-minute chaos segment with the driver's wait for
# the last job's daemon.  One H100.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i32t.tar.xz -C /tmp/b bin/gmi_drl lib
source .gpu/env.sh /tmp/b
timeout 70 python3 tests/chaos/mps_lifecycle.py --gmi /tmp/b/bin/gmi_drl --mpirun $(which mpiexec) --jobs 8 --seed 5 > $OUT/lifecycle.log 2>&1
echo "lifecycle rc=$?"; tail -2 $OUT/lifecycle.log | cut -c1-250
timeout 130 python3 tests/chaos/chaos.py --gmi /tmp/b/bin/gmi_drl --mpiexec $(which mpiexec) --workdir /tmp/soak \
  --seed 13 --faults 30 --max-gmis 8 --minutes 1.2 --set gmi.backend=mps > $OUT/soak_13.log 2>&1
echo "chaos rc=$?"
grep -a -E "^==|final state|faults injected|FAILED" $OUT/soak_13.log | cut -c1-200 | tail -8
pgrep -fa "nvidia-cuda-mps|gmi_drl" || echo "no gmi_drl process or MPS daemon left"
