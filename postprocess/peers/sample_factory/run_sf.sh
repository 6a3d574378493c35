#!/usr/bin/env bash
# Sample Factory 2.1.1 (APPO code path, SF's MuJoCo example settings) on Gymnasium MuJoCo v5 tasks, one after
# the other, on the GPU machine (no network: everything but torch/numpy comes from .peers/sf/site).
#
#   bash .peers/sf/run_sf.sh                       # Hopper-v5 Ant-v5 Humanoid-v5, 120 s each, 16 workers, gpu
#   SF_ENVS="Hopper-v5" SF_SECONDS=60 SF_HIDDEN=256,256 bash .peers/sf/run_sf.sh -- --batch_size=2048
#
# Knobs (environment): SF_ENVS (space-separated gymnasium ids), SF_SECONDS (train seconds per env),
#   SF_WORKERS (default nproc), SF_HIDDEN (64,64), SF_DEVICE (gpu|cpu), SF_SEED (0), SF_TARGETS
#   ("Hopper-v5=1000 Ant-v5=2000 ..." -> --target-return per env), SF_PY (python3). Extra arguments are passed
#   to sf_mujoco.py (put Sample Factory's own --key=value flags after a lone "--").
# Output: $OUT (or /tmp/sf_out): sf_results.jsonl (one result.json per line) and sf_log.txt (all logs);
#   each run's one-line summary ("SF_RESULT {...}") is echoed to stdout.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${SF_PY:-python3}"
OUT_DIR="${OUT:-/tmp/sf_out}"
mkdir -p "$OUT_DIR"
RES="$OUT_DIR/sf_results.jsonl"; LOG="$OUT_DIR/sf_log.txt"
: > "$RES"; : > "$LOG"
export PYTHONPATH="$HERE/site${PYTHONPATH:+:$PYTHONPATH}"
export MUJOCO_GL=disable PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

echo "== preflight" | tee -a "$LOG"
(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) 2>&1 | head -2 | tee -a "$LOG"
"$PY" - <<'PYEOF' 2>&1 | tee -a "$LOG"
import importlib, os
from importlib.metadata import version
for m, d in (("numpy", "numpy"), ("torch", "torch"), ("gymnasium", "gymnasium"), ("mujoco", "mujoco"),
             ("sample_factory", "sample-factory"), ("faster_fifo", "faster-fifo"), ("signal_slot", "signal-slot-mp"),
             ("tensorboardX", "tensorboardX"), ("psutil", "psutil")):
    try:
        mod = importlib.import_module(m)
        print(f"{m:15s} {version(d):12s} {os.path.dirname(mod.__file__)}")
    except Exception as e:
        print(f"{m:15s} IMPORT FAILED: {type(e).__name__}: {e}")
import torch
print("cuda:", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "-",
      "| cpus:", os.cpu_count())
PYEOF

for env in ${SF_ENVS:-Hopper-v5 Ant-v5 Humanoid-v5}; do
  tgt=()
  for kv in ${SF_TARGETS:-}; do [ "${kv%%=*}" = "$env" ] && tgt=(--target-return "${kv#*=}"); done
  d="$(mktemp -d /tmp/sf_res.XXXXXX)"
  echo "== $env" | tee -a "$LOG"
  "$PY" "$HERE/sf_mujoco.py" --env "$env" --out "$d" --train-for-seconds "${SF_SECONDS:-120}" \
    --num-workers "${SF_WORKERS:-$(nproc)}" --hidden "${SF_HIDDEN:-64,64}" --device "${SF_DEVICE:-gpu}" \
    --seed "${SF_SEED:-0}" "${tgt[@]}" "$@" >> "$LOG" 2>&1
  rc=$?
  if [ -s "$d/result.json" ]; then "$PY" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$d/result.json" >> "$RES"
  else echo "{\"peer\": \"sample-factory\", \"env\": \"$env\", \"completed\": false, \"rc\": $rc}" >> "$RES"; fi
  grep -a "SF_RESULT\|SF_WATCHDOG" "$LOG" | tail -1
  [ "$rc" -ne 0 ] && { echo "   rc=$rc; last log lines:"; grep -av "Fps is\|Avg episode\|Saving" "$LOG" | tail -15 | cut -c1-300; }
  rm -rf "$d"
done
echo "== results in $RES, log in $LOG"
