#!/usr/bin/env bash
# Sweeps (issue 35) beside the layouts a user would pick instead, in one call on the GPU machine:
#   cartpole  config/bench_cartpole_ppo.yaml (4096 envs, 128 steps, 4x4, 2x64), 300 iterations per
#             run: one run alone; `gmi_drl sweep` of 8 seeds with 8, 4 and the measured GMIs per GPU
#             (fp32; 8 also tf32); PureJaxRL one agent x 4096 envs and jax.vmap of 8 agents x 4096
#             (JAX default = TF32, and `highest`), and its demo point 2048 agents x 4 envs
#   exact     3 seeds as a sweep of 3 GMIs under MPS and each alone (device.fused_kernels on):
#             metrics.csv (learning columns) and the final checkpoint compared bit for bit
#   grid      config/cartpole_ppo.yaml, 8 seeds x 8 learning rates (64 runs) as one sweep, one run
#             killed with SIGKILL (the oldest run 10 s in), then postprocess/sweep.py; beside 16 runs one
#             after another
#   hopper    config/hopper_ppo.yaml (CleanRL's settings), 20 iterations per run: 8 seeds as a sweep
#             (8 GMIs, 2 of the 16 CPUs each) beside 8 runs one after another with all 16 CPUs
# Usage, from the repository root on the GPU machine:
#   PJR=.peers/pjr postprocess/peers/sweep_peers.sh GMI_DRL OUTDIR cartpole exact grid hopper
# Writes every run's log, sweep.csv and metrics into OUTDIR and OUTDIR/summary.json (rates: the sum of
# the runs' median samples_per_s while they ran side by side, and env steps / wall time end to end,
# process start-up included).
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 GMI_DRL OUTDIR cartpole|exact|grid|hopper..." >&2; exit 2; }
gmi=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/sweep_peers}
rm -rf "$work"; mkdir -p "$work"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 > "$out/device.txt"
timed() {  # timed NAME COMMAND...: wall time and status into OUTDIR/times.jsonl, output into NAME.log
  local name=$1; shift
  echo "== $name: $*"
  local t0 t1 rc
  t0=$(date +%s.%N); "$@" > "$out/$name.log" 2>&1; rc=$?; t1=$(date +%s.%N)
  echo "{\"name\": \"$name\", \"rc\": $rc, \"wall_s\": $(python3 -c "print($t1 - $t0)")}" >> "$out/times.jsonl"
  grep -E "sweep done|sweep:|done:|error" "$out/$name.log" | tail -n 3
}
keep() {  # keep DIR NAME: the small files of a run or sweep directory into OUTDIR/NAME
  mkdir -p "$out/$2"
  (cd "$1" && find . \( -name metrics.csv -o -name sweep.csv -o -name status -o -name 'sweep_*' -o -name '*.log' \) \
     -size -4M -exec cp --parents {} "$out/$2/" \;)
}
bench=(--config config/bench_cartpole_ppo.yaml --set train.total_env_steps=157286400 --set checkpoint.interval=0
       --set train.log_interval=100 --set log.tensorboard=false)
for w in "$@"; do
  case $w in
  cartpole)
    for m in fp32 tf32; do
      timed "alone_$m" "$gmi" "${bench[@]}" --set device.matmul=$m --run-dir "$work/alone_$m"; keep "$work/alone_$m" "alone_$m"
      timed "sweep8x8_$m" "$gmi" sweep "${bench[@]}" --set device.matmul=$m --seeds 1..8 --per-gpu 8 --sweep-dir "$work/sweep8x8_$m"
      keep "$work/sweep8x8_$m" "sweep8x8_$m"
    done
    timed sweep8x4_fp32 "$gmi" sweep "${bench[@]}" --seeds 1..8 --per-gpu 4 --sweep-dir "$work/sweep8x4_fp32"
    keep "$work/sweep8x4_fp32" sweep8x4_fp32
    timed sweep8_measured_fp32 "$gmi" sweep "${bench[@]}" --seeds 1..8 --sweep-dir "$work/sweep8_measured_fp32"
    keep "$work/sweep8_measured_fp32" sweep8_measured_fp32
    for p in default highest; do
      extra=(); [ "$p" = default ] || extra=(--matmul-precision "$p")
      timed "pjr_$p" python3 "$here/purejaxrl_cartpole.py" --harness "${PJR:?set PJR}" "${extra[@]}" --num-envs 4096 \
        --agents 1 8 --updates 40 --json "$out/pjr_$p.jsonl"
    done
    timed pjr_demo python3 "$here/purejaxrl_cartpole.py" --harness "$PJR" --num-envs 4 --agents 2048 --json "$out/pjr_demo.jsonl"
    ;;
  exact)
    small=(--config config/bench_cartpole_ppo.yaml --set train.total_env_steps=10485760 --set checkpoint.interval=10
           --set device.fused_kernels=on --set train.log_interval=100)
    timed exact_sweep "$gmi" sweep "${small[@]}" --seeds 1..3 --per-gpu 3 --sweep-dir "$work/exact"
    for s in 1 2 3; do timed "exact_alone$s" "$gmi" "${small[@]}" --seed $s --run-dir "$work/exact_alone/seed$s"; done
    # The same runs with the same SM share as in the sweep (a sweep of one run on a 3-GMI GPU), and
    # a sweep without MPS (one GMI per GPU: the runs one after another on the whole GPU).
    for s in 1 2 3; do timed "exact_share$s" "$gmi" sweep "${small[@]}" --seeds $s --per-gpu 3 --sweep-dir "$work/exact_share$s"; done
    timed exact_whole "$gmi" sweep "${small[@]}" --seeds 1..3 --per-gpu 1 --sweep-dir "$work/exact_whole"
    keep "$work/exact" exact; keep "$work/exact_alone" exact_alone; keep "$work/exact_whole" exact_whole
    python3 - "$work" > "$out/exact.json" <<'EOF'
import csv, glob, json, os, sys
import h5py, numpy as np
w = sys.argv[1]
TIMING = {"wall_time_s", "samples_per_s", "time_rollout_s", "time_update_s", "time_iteration_s"}
def cols(d):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(open(d + "/metrics.csv"))]
def data(path):
    out = {}
    with h5py.File(path) as f:
        c = f["metrics"].attrs["columns"]; c = (c.decode() if isinstance(c, bytes) else c).split(",")
        def visit(n, o):
            if isinstance(o, h5py.Dataset):
                v = o[()]
                out[n] = v[:, [i for i, x in enumerate(c) if x not in TIMING]] if n == "metrics/table" else v
        f.visititems(visit)
    return out
res = {}
pairs = [(f"{w}/exact/seed{s}", f"{w}/exact_alone/seed{s}", f"sweep_vs_alone_seed{s}") for s in (1, 2, 3)]
pairs += [(f"{w}/exact/seed{s}", f"{w}/exact_share{s}/seed{s}", f"sweep_vs_alone_same_share_seed{s}") for s in (1, 2, 3)]
pairs += [(f"{w}/exact_whole/seed{s}", f"{w}/exact_alone/seed{s}", f"sweep_whole_gpu_vs_alone_seed{s}") for s in (1, 2, 3)]
for a, b, name in pairs:
    if not glob.glob(a + "/checkpoints/*.h5") or not glob.glob(b + "/checkpoints/*.h5"):
        res[name] = "missing"
        continue
    fa, fb = sorted(glob.glob(a + "/checkpoints/*.h5"))[-1], sorted(glob.glob(b + "/checkpoints/*.h5"))[-1]
    da, db = data(fa), data(fb)
    same = set(da) == set(db) and all(np.array_equal(np.asarray(da[k]), np.asarray(db[k]),
                                                     equal_nan=np.asarray(da[k]).dtype.kind == "f") for k in da)
    ca, cb = cols(a), cols(b)
    first = next((i + 1 for i, (x, y) in enumerate(zip(ca, cb)) if x != y), None)
    res[name] = {"metrics_equal": ca == cb, "first_differing_iteration": first, "checkpoint_equal": same,
                       "checkpoint": os.path.basename(fa), "rows": len(cols(a))}
print(json.dumps(res, indent=1))
EOF
    cat "$out/exact.json"
    ;;
  grid)
    lrs=1e-4,2.5e-4,5e-4,1e-3,2e-3,3e-3,5e-3,1e-2
    cfg=(--config config/cartpole_ppo.yaml --set checkpoint.interval=20)
    ( sleep 10; pkill -KILL -o -f -- "--run-dir $work/grid/c" ) &
    killer=$!
    t0=$(date +%s.%N)
    timed grid_sweep "$gmi" sweep "${cfg[@]}" --seeds 1..8 --grid ppo.learning_rate=$lrs --sweep-dir "$work/grid"
    timed grid_analyse python3 postprocess/sweep.py "$work/grid"
    t1=$(date +%s.%N)
    echo "{\"name\": \"grid_sweep_and_analysis\", \"rc\": 0, \"wall_s\": $(python3 -c "print($t1 - $t0)")}" >> "$out/times.jsonl"
    wait $killer
    keep "$work/grid" grid
    cp "$work/grid"/sweep_*.png "$out/grid/" 2>/dev/null
    t0=$(date +%s.%N)
    for i in $(seq 1 16); do
      lr=$(echo $lrs | cut -d, -f$(( (i - 1) % 8 + 1 )))
      "$gmi" "${cfg[@]}" --set ppo.learning_rate=$lr --seed $(( (i - 1) / 8 + 1 )) --run-dir "$work/seq/run$i" > "$out/seq_run$i.log" 2>&1
    done
    t1=$(date +%s.%N)
    echo "{\"name\": \"grid_16_one_after_another\", \"rc\": 0, \"wall_s\": $(python3 -c "print($t1 - $t0)")}" >> "$out/times.jsonl"
    ;;
  hopper)
    hop=(--config config/hopper_ppo.yaml --set train.total_env_steps=40960 --set checkpoint.interval=0)
    timed hopper_sweep "$gmi" sweep "${hop[@]}" --seeds 1..8 --per-gpu 8 --sweep-dir "$work/hopper"
    keep "$work/hopper" hopper_sweep
    t0=$(date +%s.%N)
    for s in $(seq 1 8); do "$gmi" "${hop[@]}" --seed $s --run-dir "$work/hopper_seq/seed$s" > "$out/hopper_seq$s.log" 2>&1; done
    t1=$(date +%s.%N)
    echo "{\"name\": \"hopper_8_one_after_another\", \"rc\": 0, \"wall_s\": $(python3 -c "print($t1 - $t0)")}" >> "$out/times.jsonl"
    keep "$work/hopper_seq" hopper_seq
    ;;
  *) echo "sweep_peers: unknown workload '$w'" >&2; exit 2 ;;
  esac
done
# Rates: per run the median samples_per_s of its iterations (the first one left out: start-up).
python3 - "$out" > "$out/summary.json" <<'EOF'
import csv, glob, json, os, statistics, sys
out = sys.argv[1]
times = {j["name"]: j for j in map(json.loads, open(f"{out}/times.jsonl"))}
def runs(d):
    res = []
    for m in sorted(glob.glob(f"{out}/{d}/**/metrics.csv", recursive=True)):
        rows = list(csv.DictReader(open(m)))
        if len(rows) > 1:
            res.append({"median_rate": statistics.median(float(r["samples_per_s"]) for r in rows[1:]),
                        "env_steps": float(rows[-1]["env_steps"])})
    return res
s = {"device": open(f"{out}/device.txt").read().strip(), "times": times, "layouts": {}}
for d in sorted(os.listdir(out)):
    if os.path.isdir(f"{out}/{d}") and d in times or d.startswith(("alone_", "sweep8", "hopper")):
        r = runs(d)
        if r:
            wall = times.get(d, {}).get("wall_s")
            s["layouts"][d] = {"runs": len(r), "sum_median_rate": sum(x["median_rate"] for x in r),
                               "env_steps": sum(x["env_steps"] for x in r), "wall_s": wall,
                               "end_to_end_rate": sum(x["env_steps"] for x in r) / wall if wall else None}
for f in glob.glob(f"{out}/pjr_*.jsonl"):
    s[os.path.basename(f)] = [json.loads(l) for l in open(f) if '"steps_per_s"' in l]
try:
    s["exact"] = json.load(open(f"{out}/exact.json"))
except (OSError, ValueError) as e:
    s["exact"] = f"not measured ({e})"
print(json.dumps(s, indent=1))
EOF
cat "$out/summary.json"
