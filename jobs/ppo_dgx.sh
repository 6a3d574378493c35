#!/bin/bash
#SBATCH --job-name=gmi_drl
#SBATCH --exclusive
#SBATCH --signal=B:USR1@300
#SBATCH --output=%x-%j.out
#
# Train with gmi_drl on whole DGX-class nodes: GMIS_PER_GPU GMIs (MPI ranks) on every GPU of every
# node, one MPS control daemon per node, a checkpoint before the time limit, and a resubmission
# that continues from it until training is done.
#
#   sbatch [--nodes=N] [--time=T] [--partition=P] [--account=A] jobs/ppo_dgx.sh \
#          [CONFIG [GMIS_PER_GPU]] [-- gmi_drl options...]
#
# Arguments override the variables of the same name.  Variables (set them where sbatch runs, or
# with --export; the resubmitted jobs inherit them):
#   CONFIG         training config (default config/cartpole_ppo.yaml)
#   GMIS_PER_GPU   GMIs per GPU (default 2)
#   GPUS_PER_NODE  GPUs used per node (default: nvidia-smi -L on the first node; 1 without GPUs,
#                  where the GMIs share the CPUs)
#   GMI_DRL        the binary (default: build/cuda/bin/gmi_drl if it exists, else
#                  build/cpu/bin/gmi_drl, relative to the directory sbatch ran in)
#   RUN_DIR        run directory (default runs/<job name>-<job id of the first job>)
#   LAUNCHER       srun (default) or mpirun
#   SRUN_MPI       srun's --mpi plugin (default pmix; see srun --mpi=list)
#   MPS            auto (default: on when nvidia-cuda-mps-control exists and GPUs are used), on, off
#   MAX_RESUBMITS  how many times the chain may resubmit itself (default 20)
#   GMI_MAX_RETRIES  how many times a job that ended on a stuck GMI (exit 3: a wait on other GMIs
#                  ran out; exit 4: the stall watchdog) is resubmitted from its newest checkpoint
#                  (default 3; the count carries along the chain)
#
# Slurm sends USR1 to this script (--signal=B:USR1@300: 300 s before the time limit; make it
# longer than one iteration plus a checkpoint; to change it, set SBATCH_SIGNAL=B:USR1@<seconds>
# where you run sbatch: unlike --signal, the resubmitted jobs inherit it).  The script passes it to every rank; gmi_drl
# writes a checkpoint at the next iteration boundary and exits 0 with RUN_DIR/status "stopped";
# the script then submits itself again with the same nodes, time limit, partition, account,
# arguments and RUN_DIR, and the new job continues with --resume latest.  A job that ended on a
# stuck GMI (exit 3 or 4: a hung node, a kernel that never returned) is resubmitted the same way,
# at most GMI_MAX_RETRIES times (Slurm may place it on other nodes).  A job that is cancelled
# (scancel) or fails otherwise is not resubmitted.  Resubmitted jobs run without GMI_DRL_FAULT.
# The MPS daemons are stopped on every exit path the script sees; if Slurm kills the script, they
# go with the job's processes.
set -uo pipefail

[ -n "${SLURM_JOB_ID:-}" ] || { echo "ppo_dgx.sh: error: not inside a Slurm job (submit it with sbatch)" >&2; exit 2; }
JOB_INFO=$(scontrol show job -o "$SLURM_JOB_ID")
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$JOB_INFO"; }
SCRIPT=$(field Command)   # this file where sbatch found it (Slurm runs a copy)
# shellcheck source=jobs/gmi_common.sh
source "$(dirname "$SCRIPT")/gmi_common.sh"
cd "${SLURM_SUBMIT_DIR:-.}" || die "cannot enter the submit directory ${SLURM_SUBMIT_DIR:-}"

chain_args 2 "$@"
GMI_MAX_RETRIES=${GMI_MAX_RETRIES:-3}
RETRY_COUNT=${GMI_DRL_RETRY_COUNT:-0}
[[ "$GMI_MAX_RETRIES" =~ ^[0-9]+$ ]] || die "GMI_MAX_RETRIES: expected an integer >= 0, got '$GMI_MAX_RETRIES'"
RUN_DIR=${RUN_DIR:-runs/${SLURM_JOB_NAME:-gmi_drl}-${SLURM_JOB_ID}}
NODES=${SLURM_JOB_NUM_NODES:-1}
[ -f "$CONFIG" ] || die "CONFIG: $CONFIG does not exist"
gmi_settings

log "job $SLURM_JOB_ID (resubmission $RESUBMIT_COUNT, retry $RETRY_COUNT): $NODES node(s) x $GPUS_PER_NODE GPU(s) x $GMIS_PER_GPU GMI(s) = $((NODES * RANKS_PER_NODE)) GMIs; $CONFIG -> $RUN_DIR; $LAUNCHER; MPS $MPS"
mkdir -p "$RUN_DIR" || die "RUN_DIR: cannot create $RUN_DIR"
start_mps
gmi_layout_args
launch --config "$CONFIG" --run-dir "$RUN_DIR" --resume latest "${GMI_LAYOUT[@]}" "${GMI_ARGS[@]}"

wait_chain "every rank"
rc=$LAUNCH_RC
status=$(cat "$RUN_DIR/status" 2>/dev/null || echo "unknown")
log "gmi_drl exited with status $rc; run status: $status"

# This job again ($1, $2: the resubmission and retry counts it gets); prints the new job's id.
resubmit() { resubmit_self "RUN_DIR=$RUN_DIR,GMI_DRL_RESUBMIT_COUNT=$1,GMI_DRL_RETRY_COUNT=$2"; }

if [ "$rc" -eq 0 ] && [[ "$status" == stopped* ]] && [ -n "$TIME_UP" ]; then
  if [ "$RESUBMIT_COUNT" -ge "$MAX_RESUBMITS" ]; then
    log "not resubmitting: MAX_RESUBMITS=$MAX_RESUBMITS reached; continue by hand with RUN_DIR=$RUN_DIR"
    exit 3
  fi
  next=$(resubmit $((RESUBMIT_COUNT + 1)) "$RETRY_COUNT") || { log "resubmission failed"; exit 1; }
  log "training not done: resubmitted as job $next (continues from the newest checkpoint in $RUN_DIR)"
  exit 0
fi
if [ "$rc" -eq 3 ] || [ "$rc" -eq 4 ]; then
  why="a wait on other GMIs ran out"; [ "$rc" -eq 4 ] && why="the stall watchdog"
  if [ "$RETRY_COUNT" -ge "$GMI_MAX_RETRIES" ]; then
    log "gmi_drl ended on a stuck GMI (exit $rc: $why); not resubmitting: GMI_MAX_RETRIES=$GMI_MAX_RETRIES reached; continue by hand with RUN_DIR=$RUN_DIR"
    exit "$rc"
  fi
  next=$(resubmit "$RESUBMIT_COUNT" $((RETRY_COUNT + 1))) || { log "resubmission failed"; exit "$rc"; }
  log "gmi_drl ended on a stuck GMI (exit $rc: $why): retry $((RETRY_COUNT + 1)) of $GMI_MAX_RETRIES, resubmitted as job $next (continues from the newest checkpoint in $RUN_DIR)"
  exit "$rc"
fi
exit "$rc"
