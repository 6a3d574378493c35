# Shared by jobs/ppo_dgx.sh, jobs/sweep.sh and jobs/scaling_study.sh (sourced inside a Slurm job):
# checks, the chains' arguments and resubmission, the gmi_drl binary, GPUs per node, one MPS
# control daemon per node, and the launch command.
# Expects NODES, GMIS_PER_GPU; sets GMI_DRL, GPUS_PER_NODE, RANKS_PER_NODE, MPS, MPS_DIR.

die() { echo "$(basename "${SCRIPT:-$0}"): error: $*" >&2; exit 2; }
log() { echo "[$(date +%H:%M:%S)] $(basename "${SCRIPT:-$0}"): $*"; }

# GMI_DRL, LAUNCHER, SRUN_MPI, MPS, GPUS_PER_NODE: checked, defaults filled in.
gmi_settings() {
  LAUNCHER=${LAUNCHER:-srun}
  SRUN_MPI=${SRUN_MPI:-pmix}
  MPS=${MPS:-auto}
  [[ "$GMIS_PER_GPU" =~ ^[1-9][0-9]*$ ]] || die "GMIS_PER_GPU: expected a positive integer, got '$GMIS_PER_GPU'"
  case "$LAUNCHER" in srun|mpirun) ;; *) die "LAUNCHER: expected srun or mpirun, got '$LAUNCHER'";; esac
  case "$MPS" in auto|on|off) ;; *) die "MPS: expected auto, on or off, got '$MPS'";; esac
  if [ -z "${GMI_DRL:-}" ]; then
    GMI_DRL=build/cpu/bin/gmi_drl
    [ -x build/cuda/bin/gmi_drl ] && GMI_DRL=build/cuda/bin/gmi_drl
  fi
  [ -x "$GMI_DRL" ] || die "GMI_DRL: $GMI_DRL is not an executable (build gmi_drl, or set GMI_DRL)"
  if [ -z "${GPUS_PER_NODE:-}" ]; then
    GPUS_PER_NODE=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    [ "${GPUS_PER_NODE:-0}" -gt 0 ] || GPUS_PER_NODE=1
  fi
  [[ "$GPUS_PER_NODE" =~ ^[1-9][0-9]*$ ]] || die "GPUS_PER_NODE: expected a positive integer, got '$GPUS_PER_NODE'"
  RANKS_PER_NODE=$((GPUS_PER_NODE * GMIS_PER_GPU))
  if [ "$MPS" = auto ]; then
    MPS=off
    command -v nvidia-cuda-mps-control > /dev/null && nvidia-smi -L > /dev/null 2>&1 && MPS=on
  fi
  MPS_DIR=${TMPDIR:-/tmp}/gmi_drl-mps-${SLURM_JOB_ID:-$$}${SLURM_ARRAY_TASK_ID:+-$SLURM_ARRAY_TASK_ID}
}

# One task per node, beside the job's other steps.
per_node() { srun --nodes="$NODES" --ntasks-per-node=1 --overlap --kill-on-bad-exit=0 bash -c "$1"; }

# Slurm's gres/mps serves one GPU per node, so the daemons are started here, one per node, in
# job-private directories; gmi_drl finds them through gmi.mps_dir and leaves them running.
start_mps() {
  [ "$MPS" = on ] || return 0
  per_node "mkdir -p $MPS_DIR $MPS_DIR-log && CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR CUDA_MPS_LOG_DIRECTORY=$MPS_DIR-log nvidia-cuda-mps-control -d" \
    || die "could not start nvidia-cuda-mps-control -d on every node"
  MPS_STARTED=1
  trap stop_mps EXIT
}

stop_mps() {
  [ -n "${MPS_STARTED:-}" ] || return 0
  log "stopping MPS on $NODES node(s)"
  per_node "echo quit -t 10 | CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR CUDA_MPS_LOG_DIRECTORY=$MPS_DIR-log nvidia-cuda-mps-control; rm -rf $MPS_DIR $MPS_DIR-log" || true
  MPS_STARTED=
}

# The gmi_drl options that place the GMIs: per GPU, GPUs per node, MPS.
gmi_layout_args() {
  GMI_LAYOUT=(--set "gmi.per_gpu=$GMIS_PER_GPU" --set "gmi.gpus_per_node=$GPUS_PER_NODE")
  [ "$MPS" = on ] && GMI_LAYOUT+=(--set gmi.backend=mps --set "gmi.mps_dir=$MPS_DIR")
  return 0
}

# Run gmi_drl with its arguments on every GMI, in the background; sets LAUNCH_PID.
launch() {
  if [ "$LAUNCHER" = srun ]; then
    srun --nodes="$NODES" --ntasks-per-node="$RANKS_PER_NODE" --cpu-bind=none --kill-on-bad-exit=1 \
         --mpi="$SRUN_MPI" "$GMI_DRL" "$@" &
  else
    mpirun --bind-to none -np $((NODES * RANKS_PER_NODE)) --map-by "ppr:$RANKS_PER_NODE:node" "$GMI_DRL" "$@" &
  fi
  LAUNCH_PID=$!
}

# A chain's wait for its launched gmi_drl: Slurm's USR1 (time limit ahead) goes on to every rank
# (they checkpoint and stop: "asking $1 to checkpoint and stop"), TERM to the launch.  Sets
# LAUNCH_RC, and TIME_UP to 1 when USR1 came.
wait_chain() {
  TIME_UP=
  CHAIN_WHAT=$1
  forward_usr1() {
    TIME_UP=1
    log "USR1 (time limit ahead): asking $CHAIN_WHAT to checkpoint and stop"
    if [ "$LAUNCHER" = srun ]; then scancel --signal=USR1 "$SLURM_JOB_ID"; else kill -USR1 "$LAUNCH_PID"; fi
  }
  trap forward_usr1 USR1
  trap 'log "TERM: passing it on"; kill -TERM "$LAUNCH_PID" 2>/dev/null' TERM
  wait_launch
}

# Wait for the launched gmi_drl (a trapped signal interrupts `wait`); sets LAUNCH_RC.
wait_launch() {
  while true; do
    wait "$LAUNCH_PID"; LAUNCH_RC=$?
    kill -0 "$LAUNCH_PID" 2>/dev/null || break
  done
}

# A chain's arguments, [CONFIG [GMIS_PER_GPU]] [-- gmi_drl options] ($1: the default GMIs per GPU,
# then the script's arguments); sets ORIG_ARGS, CONFIG, GMIS_PER_GPU, GMI_ARGS (after --),
# MAX_RESUBMITS and RESUBMIT_COUNT.
chain_args() {
  local default_gmis=$1 positional=()
  shift
  ORIG_ARGS=("$@")
  GMI_ARGS=()
  while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then shift; GMI_ARGS=("$@"); break; fi
    positional+=("$1"); shift
  done
  [ ${#positional[@]} -le 2 ] || die "expected [CONFIG [GMIS_PER_GPU]] [-- gmi_drl options], got ${positional[*]}"
  CONFIG=${positional[0]:-${CONFIG:-config/cartpole_ppo.yaml}}
  GMIS_PER_GPU=${positional[1]:-${GMIS_PER_GPU:-$default_gmis}}
  MAX_RESUBMITS=${MAX_RESUBMITS:-20}
  RESUBMIT_COUNT=${GMI_DRL_RESUBMIT_COUNT:-0}
}

# This job again, with the same nodes, time limit, partition, account and arguments, and $1 added
# to what it exports ("RUN_DIR=...,GMI_DRL_RESUBMIT_COUNT=2"); never with GMI_DRL_FAULT.  Needs the
# script's field().  Prints the new job's id.
resubmit_self() {
  local opts tl acct
  opts=(--nodes="$NODES" --job-name="$SLURM_JOB_NAME" --chdir="$SLURM_SUBMIT_DIR"
        --export="ALL,$1,GMI_DRL=$GMI_DRL,GPUS_PER_NODE=$GPUS_PER_NODE,GMI_DRL_FAULT=")
  tl=$(field TimeLimit); [ -n "$tl" ] && [ "$tl" != UNLIMITED ] && opts+=(--time="$tl")
  [ -n "${SLURM_JOB_PARTITION:-}" ] && opts+=(--partition="$SLURM_JOB_PARTITION")
  acct=$(field Account); [ -n "$acct" ] && [ "$acct" != "(null)" ] && opts+=(--account="$acct")
  sbatch --parsable "${opts[@]}" "$SCRIPT" "${ORIG_ARGS[@]}"
}
