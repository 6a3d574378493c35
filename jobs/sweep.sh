#!/bin/bash
#SBATCH --job-name=gmi_sweep
#SBATCH --exclusive
#SBATCH --signal=B:USR1@300
#SBATCH --output=%x-%j.out
#
# A gmi_drl sweep on whole nodes: GMIS_PER_GPU GMIs (MPI ranks) on every GPU of every node take
# independent runs (seeds, grid points, random draws) from the sweep's queue, one MPS control
# daemon per node, every running run checkpointed before the time limit, and a resubmission that
# continues the sweep (`gmi_drl sweep --resume SWEEP_DIR`) until every run is done or failed.
#
#   sbatch [--nodes=N] [--time=T] [--partition=P] [--account=A] jobs/sweep.sh \
#          [CONFIG [GMIS_PER_GPU]] [-- gmi_drl sweep options...]
#   sbatch --nodes=2 jobs/sweep.sh config/cartpole_ppo.yaml 4 -- --seeds 1..8 --grid ppo.learning_rate=1e-4,3e-4
#
# Arguments override the variables of the same name.  Variables (set them where sbatch runs, or
# with --export; the resubmitted jobs inherit them):
#   CONFIG         the runs' config (default config/cartpole_ppo.yaml)
#   GMIS_PER_GPU   GMIs (runs side by side) per GPU (default 4)
#   GPUS_PER_NODE, GMI_DRL, LAUNCHER, SRUN_MPI, MPS, MAX_RESUBMITS: as in jobs/ppo_dgx.sh
#   SWEEP_DIR      the sweep's directory (default sweeps/<job name>-<job id of the first job>)
#
# The first job starts the sweep with the options after `--`; the later ones continue it, so those
# options are read once (SWEEP_DIR/sweep.json keeps the runs).  Slurm's USR1 (--signal=B:USR1@300)
# is passed to every rank: each running run writes a checkpoint and stops, SWEEP_DIR/status says
# "stopped", and the script submits itself again; a run killed on the way restarts from its own
# newest checkpoint inside the sweep (sweep.retries).  The sweep's exit status is 1 when some runs
# failed (sweep.csv says why); that ends the chain too.
set -uo pipefail

[ -n "${SLURM_JOB_ID:-}" ] || { echo "sweep.sh: error: not inside a Slurm job (submit it with sbatch)" >&2; exit 2; }
JOB_INFO=$(scontrol show job -o "$SLURM_JOB_ID")
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$JOB_INFO"; }
SCRIPT=$(field Command)
# shellcheck source=jobs/gmi_common.sh
source "$(dirname "$SCRIPT")/gmi_common.sh"
cd "${SLURM_SUBMIT_DIR:-.}" || die "cannot enter the submit directory ${SLURM_SUBMIT_DIR:-}"

chain_args 4 "$@"
SWEEP_DIR=${SWEEP_DIR:-sweeps/${SLURM_JOB_NAME:-gmi_sweep}-${SLURM_JOB_ID}}
NODES=${SLURM_JOB_NUM_NODES:-1}
[ -f "$CONFIG" ] || die "CONFIG: $CONFIG does not exist"
gmi_settings

log "job $SLURM_JOB_ID (resubmission $RESUBMIT_COUNT): $NODES node(s) x $GPUS_PER_NODE GPU(s) x $GMIS_PER_GPU GMI(s) = $((NODES * RANKS_PER_NODE)) GMIs; $CONFIG -> $SWEEP_DIR; $LAUNCHER; MPS $MPS"
start_mps
# The sweep finds the script's daemons through the environment (used, never stopped by gmi_drl).
[ "$MPS" = on ] && export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR CUDA_MPS_LOG_DIRECTORY=$MPS_DIR-log
if [ -f "$SWEEP_DIR/sweep.json" ]; then
  launch sweep --resume "$SWEEP_DIR"
else
  launch sweep --config "$CONFIG" --sweep-dir "$SWEEP_DIR" "${GMI_ARGS[@]}"
fi

wait_chain "every run"
rc=$LAUNCH_RC
status=$(cat "$SWEEP_DIR/status" 2>/dev/null || echo "unknown")
log "gmi_drl sweep exited with status $rc; sweep status: $status"

if [ "$rc" -eq 0 ] && [[ "$status" == stopped* ]] && [ -n "$TIME_UP" ]; then
  if [ "$RESUBMIT_COUNT" -ge "$MAX_RESUBMITS" ]; then
    log "not resubmitting: MAX_RESUBMITS=$MAX_RESUBMITS reached; continue by hand with SWEEP_DIR=$SWEEP_DIR"
    exit 3
  fi
  next=$(resubmit_self "SWEEP_DIR=$SWEEP_DIR,GMI_DRL_RESUBMIT_COUNT=$((RESUBMIT_COUNT + 1))") || { log "resubmission failed"; exit 1; }
  log "sweep not done: resubmitted as job $next (continues the sweep in $SWEEP_DIR)"
  exit 0
fi
exit "$rc"
