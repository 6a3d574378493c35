#!/usr/bin/env bash
# Issue 34: where the serving GMIs wait when their trainer hangs (hang@3:0) on one H100 under MPS.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34h.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
which gdb eu-stack pstack 2>&1 | head -3
for backend in none; do
  GMI_DRL_FAULT=hang@3:0 timeout 40 mpiexec -n 3 --oversubscribe --bind-to none $B/gmi_drl --config config/cartpole_appo.yaml --run-dir $W/h_$backend --set mapping.template=async --set env.num_envs=4 --set ppo.num_steps=32 --set train.total_env_steps=100000000 --set reduce.timeout_s=4 --set checkpoint.interval=0 --set gmi.backend=$backend --set train.stall_timeout_s=8 --log-level debug > $W/h_$backend.log 2>&1 &
  sleep 20
  for p in $(pgrep -f "bin/gmi_drl --config"); do
    echo "== pid $p: $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-60) state $(awk '{print $3}' /proc/$p/stat)"
    for t in /proc/$p/task/*; do echo "  task $(basename $t) $(awk '{print $3}' $t/stat) wchan=$(cat $t/wchan 2>/dev/null)"; done | grep -v futex | head -4
    if which gdb >/dev/null 2>&1; then timeout 20 gdb -p $p -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^#|^Thread" | head -60; fi
  done
  wait
  echo "--- backend $backend log tail"; grep -a -v "^\[" $W/h_$backend.log | tail -15 | cut -c1-300
  grep -a -i "error\|GMI_DRL\|stall\|no progress\|watchdog" $W/h_$backend.log | head -12 | cut -c1-400
done
