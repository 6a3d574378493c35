#!/bin/bash
# A scaling study: `gmi_drl bench` (PPO throughput) over node counts x GMIs per GPU x configs x
# seeds, as one Slurm job array per node count.  Every element writes one JSON result under
# STUDY_DIR/results; `postprocess/scaling.py STUDY_DIR` turns them into the table and plots.
#
#   jobs/scaling_study.sh STUDY_DIR [options] [-- sbatch options (partition, account, time...)]
#     --nodes LIST        node counts (default 1,2,4,8)
#     --gmis LIST         GMIs per GPU (default 1,2,4)
#     --configs LIST      configs (default config/bench_cartpole_ppo.yaml)
#     --seeds LIST        seeds (default 1)
#     --envs-per-gpu N    environments per GPU, so the total grows with the GPUs (weak scaling,
#                         paper 003 Table 5; default 16384)
#     --iterations N      timed iterations per element (default 20)
#     --warmup N          untimed iterations first (default 3)
#     --set KEY=VALUE     a config override for every element (repeatable), e.g. ppo.num_steps=64
#     --cores-per-gpu N   host-simulated envs: env.threads = N / GMIs per GPU, so every layout
#                         has the same cores per GPU (default: gmi_drl's share of the node);
#                         with --local each run is also confined to N x GPUs logical CPUs
#                         (hyperthread siblings together), so that a GPU's share of the CPU is
#                         the same kind of cores whatever the GPU count (weak scaling)
#     --emulate-nodes     run N "nodes" as N groups of ranks on one allocated node
#                         (gmi.ranks_per_node; for testing the study on a single machine)
#     --wait              wait until every element has finished (sbatch --wait)
#     --local             no Slurm: run the elements here, one after another, with mpirun on this
#                         machine's GPUs (a multi-GPU node or a cloud machine); GMIs per GPU > 1
#                         run under an MPS daemon gmi_drl starts itself (MPS=off: time-sliced)
#     --gpus LIST         with --local: GPU counts, each run on the first N GPUs
#                         (CUDA_VISIBLE_DEVICES; default 1,2,4,... up to the machine's GPUs)
#
# Run it where you run sbatch (not inside a job), or anywhere with --local.  Variables as in jobs/ppo_dgx.sh: GMI_DRL,
# GPUS_PER_NODE, LAUNCHER, SRUN_MPI, MPS.  Study layout:
#   STUDY_DIR/study.txt                  the elements: index nodes gmis_per_gpu config seed
#   STUDY_DIR/results/n<N>_g<G>_<config>_s<seed>.json   gmi_drl bench output
#                                        (--local: n1_gpus<N>_g<G>_<config>_s<seed>.json)
#   STUDY_DIR/logs/                      one Slurm log per element (--local: one log each)
set -uo pipefail

# The study's --set overrides and --cores-per-gpu (STUDY_DIR/sets.txt, one argument a line) for
# an element with $1 GMIs per GPU: SETS.
element_sets() {
  SETS=()
  local line
  while IFS= read -r line; do
    case "$line" in
      cores-per-gpu=*) SETS+=(--set "env.threads=$(( ${line#cores-per-gpu=} / $1 > 0 ? ${line#cores-per-gpu=} / $1 : 1 ))") ;;
      ?*) SETS+=(--set "$line") ;;
    esac
  done < "$STUDY_DIR/sets.txt"
}

if [ -n "${GMI_STUDY_ELEMENT:-}" ]; then
  # ---- one element, inside its Slurm array job ----
  SCRIPT=$(scontrol show job -o "$SLURM_JOB_ID" | sed -n 's/.* Command=\([^ ]*\).*/\1/p' | head -1)
  # shellcheck source=jobs/gmi_common.sh
  source "$(dirname "$SCRIPT")/gmi_common.sh"
  cd "$SLURM_SUBMIT_DIR" || die "cannot enter $SLURM_SUBMIT_DIR"
  STUDY_DIR=$GMI_STUDY_DIR
  line=$(awk -v n="$GMI_STUDY_NODES" -v i="$SLURM_ARRAY_TASK_ID" '$2 == n && $1 == i' "$STUDY_DIR/study.txt")
  [ -n "$line" ] || die "no element $SLURM_ARRAY_TASK_ID for $GMI_STUDY_NODES node(s) in $STUDY_DIR/study.txt"
  read -r _ want_nodes GMIS_PER_GPU config seed <<< "$line"
  element_sets "$GMIS_PER_GPU"
  NODES=${SLURM_JOB_NUM_NODES:-1}
  gmi_settings
  emulate=()
  if [ "${GMI_STUDY_EMULATE:-0}" = 1 ]; then
    emulate=(--set "gmi.ranks_per_node=$RANKS_PER_NODE")
    RANKS_PER_NODE=$((RANKS_PER_NODE * want_nodes))
  fi
  gpus=$((want_nodes * GPUS_PER_NODE))
  out="$STUDY_DIR/results/n${want_nodes}_g${GMIS_PER_GPU}_$(basename "${config%.*}")_s${seed}.json"
  log "element $SLURM_ARRAY_TASK_ID: $want_nodes node(s) x $GPUS_PER_NODE GPU(s) x $GMIS_PER_GPU GMI(s), $config, seed $seed -> $out"
  start_mps
  gmi_layout_args
  launch bench --config "$config" --num-envs $((GMI_STUDY_ENVS_PER_GPU * gpus)) --iterations "$GMI_STUDY_ITERATIONS" \
    --warmup "$GMI_STUDY_WARMUP" --set "train.seed=$seed" "${SETS[@]}" "${GMI_LAYOUT[@]}" "${emulate[@]}" --json "$out"
  wait_launch
  exit "$LAUNCH_RC"
fi

# ---- the driver: write the element list, submit one array per node count ----
die() { echo "scaling_study.sh: error: $*" >&2; exit 2; }
[ $# -ge 1 ] && [[ "$1" != -* ]] || die "usage: jobs/scaling_study.sh STUDY_DIR [options] [-- sbatch options]"
STUDY_DIR=$1; shift
nodes=1,2,4,8; gmis=1,2,4; configs=config/bench_cartpole_ppo.yaml; seeds=1
envs_per_gpu=16384; iterations=20; warmup=3; emulate=0; wait=(); local=0; gpus=; sets=(); cores=
sbatch_opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=${2:?--nodes needs a list}; shift 2 ;;
    --gmis) gmis=${2:?--gmis needs a list}; shift 2 ;;
    --configs) configs=${2:?--configs needs a list}; shift 2 ;;
    --seeds) seeds=${2:?--seeds needs a list}; shift 2 ;;
    --envs-per-gpu) envs_per_gpu=${2:?}; shift 2 ;;
    --iterations) iterations=${2:?}; shift 2 ;;
    --warmup) warmup=${2:?}; shift 2 ;;
    --emulate-nodes) emulate=1; shift ;;
    --wait) wait=(--wait); shift ;;
    --local) local=1; shift ;;
    --set) [[ "${2:-}" == *=* ]] || die "--set: expected KEY=VALUE, got '${2:-}'"; sets+=("$2"); shift 2 ;;
    --cores-per-gpu) cores=${2:?--cores-per-gpu needs a number}; shift 2 ;;
    --gpus) gpus=${2:?--gpus needs a list}; shift 2 ;;
    --) shift; sbatch_opts=("$@"); break ;;
    *) die "unknown option '$1'" ;;
  esac
done
for v in $(tr , ' ' <<< "$nodes $gmis $seeds") "$envs_per_gpu" "$iterations"; do
  [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "expected positive integers in --nodes, --gmis, --seeds, --envs-per-gpu, --iterations; got '$v'"
done
[[ "$warmup" =~ ^[0-9]+$ ]] || die "--warmup: expected an integer >= 0, got '$warmup'"
[ -z "$cores" ] || [[ "$cores" =~ ^[1-9][0-9]*$ ]] || die "--cores-per-gpu: expected a positive integer, got '$cores'"
write_sets() {
  printf '%s\n' "${sets[@]}" > "$STUDY_DIR/sets.txt"
  [ -z "$cores" ] || echo "cores-per-gpu=$cores" >> "$STUDY_DIR/sets.txt"
}
for c in $(tr , ' ' <<< "$configs"); do [ -f "$c" ] || die "--configs: $c does not exist"; done

if [ "$local" = 1 ]; then
  # ---- --local: every element here, in turn (GPU counts instead of node counts) ----
  [ "$emulate" = 0 ] && [ ${#wait[@]} -eq 0 ] && [ ${#sbatch_opts[@]} -eq 0 ] \
    || die "--local runs here: --emulate-nodes, --wait and sbatch options do not apply"
  SCRIPT=$0
  # shellcheck source=jobs/gmi_common.sh
  source "$(dirname "$0")/gmi_common.sh"
  have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  [ "${have:-0}" -gt 0 ] || have=1  # host builds: one "GPU", the CPU
  if [ -z "$gpus" ]; then
    gpus=1; n=2
    while [ "$n" -le "$have" ]; do gpus+=",$n"; n=$((n * 2)); done
  fi
  for v in $(tr , ' ' <<< "$gpus"); do
    [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "--gpus: expected positive integers, got '$v'"
    [ "$v" -le "$have" ] || die "--gpus: $v GPU(s) asked for, this machine has $have"
  done
  # The first $1 logical CPUs, whole cores first (a core's hyperthreads next to each other).
  cpu_list() {
    local f l out=() seen=" "
    for f in /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list; do
      l=$(< "$f")
      [[ "$seen" == *" $l "* ]] && continue
      seen+="$l "
      for part in ${l//,/ }; do
        if [[ "$part" == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
      done
    done
    [ "${#out[@]}" -ge "$1" ] || { echo "scaling_study.sh: error: --cores-per-gpu: $1 CPUs needed, this machine shows ${#out[@]}" >&2; return 1; }
    local IFS=,
    echo "${out[*]:0:$1}"
  }
  if [ -n "$cores" ]; then
    command -v taskset > /dev/null || die "--cores-per-gpu with --local confines runs with taskset, which is not installed"
    for n in $(tr , ' ' <<< "$gpus"); do cpu_list $((cores * n)) > /dev/null || exit 2; done
  fi
  mkdir -p "$STUDY_DIR/results" "$STUDY_DIR/logs" || die "cannot create $STUDY_DIR"
  : > "$STUDY_DIR/study.txt"
  write_sets
  failed=0; i=0
  for n in $(tr , ' ' <<< "$gpus"); do for g in $(tr , ' ' <<< "$gmis"); do
    for c in $(tr , ' ' <<< "$configs"); do for s in $(tr , ' ' <<< "$seeds"); do
      echo "$i 1 $g $c $s $n" >> "$STUDY_DIR/study.txt"
      name="n1_gpus${n}_g${g}_$(basename "${c%.*}")_s${s}"
      out="$STUDY_DIR/results/$name.json"
      (
        if [ -n "$cores" ]; then
          cpus=$(cpu_list $((cores * n))) || exit 2
          taskset -p -c "$cpus" $BASHPID > /dev/null || die "taskset could not confine the run to CPUs $cpus"
          log "confined to CPUs $cpus"
        fi
        NODES=1 GMIS_PER_GPU=$g GPUS_PER_NODE=$n LAUNCHER=mpirun
        gmi_settings
        export CUDA_VISIBLE_DEVICES
        CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1)))
        element_sets "$g"
        layout=(--set "gmi.per_gpu=$g" --set "gmi.gpus_per_node=$n")
        [ "$MPS" = off ] && [ "$g" -gt 1 ] && layout+=(--set gmi.backend=none)
        log "element $i: $n GPU(s) x $g GMI(s), $c, seed $s -> $out"
        launch bench --config "$c" --num-envs $((envs_per_gpu * n)) --iterations "$iterations" --warmup "$warmup" \
          --set "train.seed=$s" "${SETS[@]}" "${layout[@]}" --json "$out"
        wait_launch
        exit "$LAUNCH_RC"
      ) > "$STUDY_DIR/logs/$name.log" 2>&1
      rc=$?
      [ "$rc" -eq 0 ] || { failed=$((failed + 1)); echo "scaling_study.sh: element $i ($name) failed (status $rc): $STUDY_DIR/logs/$name.log" >&2; }
      echo "scaling_study.sh: element $i: $n GPU(s) x $g GMI(s), $(basename "$c"), seed $s: status $rc"
      i=$((i + 1))
    done; done
  done; done
  echo "scaling_study.sh: $i element(s), $failed failed; then: postprocess/scaling.py $STUDY_DIR"
  [ "$failed" -eq 0 ]
  exit
fi
command -v sbatch > /dev/null || die "sbatch not found: run this where jobs are submitted (or use --local)"

mkdir -p "$STUDY_DIR/results" "$STUDY_DIR/logs" || die "cannot create $STUDY_DIR"
STUDY_DIR=$(cd "$STUDY_DIR" && pwd)
: > "$STUDY_DIR/study.txt"
write_sets
jobs_submitted=()
pids=()
for n in $(tr , ' ' <<< "$nodes"); do
  i=0
  for g in $(tr , ' ' <<< "$gmis"); do
    for c in $(tr , ' ' <<< "$configs"); do
      for s in $(tr , ' ' <<< "$seeds"); do
        echo "$i $n $g $c $s" >> "$STUDY_DIR/study.txt"
        i=$((i + 1))
      done
    done
  done
  alloc=$n
  [ "$emulate" = 1 ] && alloc=1
  exports="ALL,GMI_STUDY_ELEMENT=1,GMI_STUDY_DIR=$STUDY_DIR,GMI_STUDY_NODES=$n,GMI_STUDY_ENVS_PER_GPU=$envs_per_gpu"
  exports+=",GMI_STUDY_ITERATIONS=$iterations,GMI_STUDY_WARMUP=$warmup,GMI_STUDY_EMULATE=$emulate"
  cmd=(sbatch --parsable --nodes="$alloc" --exclusive --array=0-$((i - 1)) --job-name=gmi_study_n$n
       --output="$STUDY_DIR/logs/%x_%a.out" --export="$exports" "${wait[@]}" "${sbatch_opts[@]}" "$0")
  if [ ${#wait[@]} -gt 0 ]; then
    "${cmd[@]}" > "$STUDY_DIR/logs/submit_n$n.txt" & pids+=($!)
  else
    id=$("${cmd[@]}") || die "sbatch failed for $n node(s)"
    jobs_submitted+=("$id")
    echo "scaling_study.sh: $n node(s): job array $id, $i element(s)"
  fi
done
if [ ${#pids[@]} -gt 0 ]; then
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  echo "scaling_study.sh: all elements finished (status $rc); postprocess/scaling.py $STUDY_DIR"
  exit $rc
fi
echo "scaling_study.sh: results in $STUDY_DIR/results; then: postprocess/scaling.py $STUDY_DIR"
