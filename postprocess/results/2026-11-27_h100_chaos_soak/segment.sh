#!/usr/bin/env bash
# Issue 32, the GPU chaos soak, one segment of about 8 minutes (a device call lasts at most 10):
# PPO, DQN and SAC jobs of 1-8 GMIs under MPS hit by faults from a seeded schedule, each resumed
# and compared bit for bit with an uninterrupted run; no process or MPS daemon left.  One H100.
# bash .gpu/i32s.sh SEED
set -u
SEED=$1
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i36c.tar.xz -C /tmp/b bin/gmi_drl lib
source .gpu/env.sh /tmp/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
pgrep -fa nvidia-cuda-mps || echo "no MPS daemon before the soak"
timeout 585 python3 tests/chaos/chaos.py --gmi /tmp/b/bin/gmi_drl --mpiexec $(which mpiexec) --workdir /tmp/soak \
  --seed $SEED --faults 30 --max-gmis 8 --minutes 7.0 --set gmi.backend=mps > $OUT/soak_$SEED.log 2>&1
echo "chaos rc=$?"
grep -a -E "^==|final state|faults injected|FAILED|error" $OUT/soak_$SEED.log | cut -c1-220 | tail -30
echo "faults by kind:"; grep -a -oE "^  [a-z0-9-]+@|^  truncate" $OUT/soak_$SEED.log | sort | uniq -c | sort -rn | head -12
pgrep -fa "nvidia-cuda-mps|gmi_drl" || echo "no gmi_drl process or MPS daemon left"
