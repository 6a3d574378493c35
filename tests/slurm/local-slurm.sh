#!/usr/bin/env bash
# A single-node Slurm on this machine for the tests: munged, slurmctld and slurmd on localhost,
# configured in DIR (default /tmp/gmi_drl-slurm), which also holds state, spool and logs.
#   local-slurm.sh start [DIR]   start (or keep) it; prints `export SLURM_CONF=DIR/slurm.conf`
#   local-slurm.sh stop [DIR]    stop the daemons
# Needs root and Debian's slurm-wlm and munge (cmake/deps-debian.sh --slurm installs them).
# The node declares 8 CPUs whatever the machine has (SlurmdParameters=config_overrides), so that
# jobs of 4 GMIs fit on a 2-core CI machine.
set -euo pipefail
cmd=${1:?usage: local-slurm.sh start|stop [DIR]}
D=${2:-/tmp/gmi_drl-slurm}
export SLURM_CONF=$D/slurm.conf
host=$(hostname -s)

stop() {
  for p in slurmd slurmctld; do
    [ -f "$D/$p.pid" ] && kill "$(cat "$D/$p.pid")" 2>/dev/null || true
  done
  sleep 1
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: local-slurm.sh start|stop [DIR]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "local-slurm.sh: needs root" >&2; exit 2; }
command -v slurmctld > /dev/null || { echo "local-slurm.sh: slurmctld not found (cmake/deps-debian.sh --slurm)" >&2; exit 2; }

if scontrol ping 2>/dev/null | grep -q "is UP" && sinfo -h -o %T 2>/dev/null | grep -qE "idle|mix|alloc"; then
  echo "export SLURM_CONF=$SLURM_CONF"; exit 0
fi
mkdir -p "$D/state" "$D/spool"
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
cat > "$SLURM_CONF" <<CONF
ClusterName=gmici
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
KillWait=15
MinJobAge=600
InactiveLimit=0
NodeName=$host CPUs=8 RealMemory=$mem State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# munged refuses root; run it as its own user with the key the package generated.
if ! pgrep -x munged > /dev/null; then
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- /usr/sbin/munged
fi
stop
slurmctld -i
slurmd
for _ in $(seq 1 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qE "^(idle|mix|alloc)"; then
    echo "export SLURM_CONF=$SLURM_CONF"; exit 0
  fi
  sleep 1
done
echo "local-slurm.sh: Slurm did not come up; logs in $D" >&2
tail -5 "$D/slurmctld.log" "$D/slurmd.log" >&2 || true
exit 1
