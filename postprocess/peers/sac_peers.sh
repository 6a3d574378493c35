#!/usr/bin/env bash
# gmi_drl's SAC and its peers on CleanRL's settings, in one call on the GPU machine: HalfCheetah-v5,
# one env, 12,000 env steps (an update every step after learning_starts 5,000), env-steps/s over
# steps 5,000-12,000.  gmi_drl runs config/half_cheetah_sac.yaml with device.graphs on (its update
# events captured and replayed), off, and on with device.gemm_epilogues false (bias, ReLU and bias
# gradients in separate kernels instead of cuBLASLt's epilogues); CleanRL's sac_continuous_action.py (eager PyTorch) and
# LeanRL's (torch.compile and CUDA graphs) run from the harness ../shared/peers/sac/assemble.sh builds.
# Usage, from the repository root on the GPU machine:
#   SAC=.peers/sac postprocess/peers/sac_peers.sh GMI_DRL OUTDIR
# Writes the runs' logs and metrics in OUTDIR, OUTDIR/sac_sps.json (every rate) and
# OUTDIR/peers_new.json (the comparisons).  Back here: `postprocess/peers/ledger.py merge
# OUTDIR/peers_new.json`, then `postprocess/peers/ledger.py render --readme postprocess/results/README.md`.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: SAC=HARNESS $0 GMI_DRL OUTDIR" >&2; exit 2; }
gmi=$(realpath "$1"); out=$(realpath -m "$2")
harness=$(realpath "${SAC:?set SAC to the harness folder of ../shared/peers/sac/assemble.sh}")
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "sac_peers: $*" >&2; exit 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
steps=12000
# run name | the keys it sets
variants=("graphs_on|device.graphs=on" "graphs_off|device.graphs=off"
          "graphs_on_epilogues_off|device.graphs=on device.gemm_epilogues=false")
for v in "${variants[@]}"; do
  name=${v%%|*}; sets=()
  for kv in ${v#*|}; do sets+=(--set "$kv"); done
  echo "== gmi_drl SAC HalfCheetah-v5, ${v#*|}"
  rm -rf "$out/gmi_$name"
  "$gmi" --config config/half_cheetah_sac.yaml --set train.total_env_steps=$steps "${sets[@]}" \
    --set checkpoint.interval=0 --run-dir "$out/gmi_$name" > "$out/gmi_$name.log" 2>&1 ||
    { tail -n 20 "$out/gmi_$name.log"; fail "gmi_drl (${v#*|}) failed"; }
  tail -n 2 "$out/gmi_$name.log"
done
echo "== CleanRL and LeanRL"
rm -rf "$out/peers"
OUT="$out/peers" SAC_STEPS=$steps bash "$harness/run.sh" > "$out/peers.log" 2>&1 || fail "the peers failed (see $out/peers.log)"
grep '^{"bench"' "$out/peers.log" || true
python3 - "$out" "$device" "$steps" <<'PY' || fail "no rates"
import csv, json, os, sys
out, device, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def gmi_sps(run):
    rows = list(csv.DictReader(open(os.path.join(out, run, "metrics.csv"))))
    at = {int(float(r["env_steps"])): float(r["wall_time_s"]) for r in rows}
    lo = 5000 if 5000 in at else min(k for k in at if k >= 5000)
    return (steps - lo) / (at[steps] - at[lo])
rates = {f"gmi_drl {n.replace('_', ' ')}": gmi_sps(f"gmi_{n}") for n in ("graphs_on", "graphs_off", "graphs_on_epilogues_off")}
for line in open(os.path.join(out, "peers", "results.jsonl")):
    r = json.loads(line)
    if r.get("sps") is not None:  # sps: LeanRL's window [learning_starts + burn-in, end), compile excluded
        rates[r["bench"].replace("_sac", "")] = r["sps"]
json.dump({"device": device, "workload": "sac/HalfCheetah-v5/1 env", "steps": steps,
           "unit": "env-steps/s over steps 5000-12000", "rates": rates}, open(os.path.join(out, "sac_sps.json"), "w"), indent=1)
for k, v in rates.items():
    print(f"{k:<28} {v:10.1f} env-steps/s")
json.dump({"results": [{"num_envs": 1, "env_steps_per_s": rates["gmi_drl graphs on"]}]},
          open(os.path.join(out, "gmi_sac.json"), "w"))
for k, v in rates.items():
    if not k.startswith("gmi_drl"):
        with open(os.path.join(out, f"peer_{k}.jsonl"), "w") as f:
            f.write(json.dumps({"num_envs": 1, "steps_per_s": v}) + "\n")
PY
for p in cleanrl leanrl; do
  [ -f "$out/peer_$p.jsonl" ] || fail "no $p rate in $out/peers/results.jsonl"
  name="CleanRL sac_continuous_action.py (PyTorch $(python3 -c 'import torch; print(torch.__version__)'))"
  [ $p = leanrl ] && name="LeanRL sac_continuous_action_torchcompile.py --compile --cudagraphs"
  python3 "$here/ledger.py" --ledger "$out/peers_new.json" add --device "$device" --gmi "$out/gmi_sac.json" \
    --peer "$out/peer_$p.jsonl" --workload sac/HalfCheetah-v5 --precision fp32 --peer-name "$name" \
    --unit "env-steps/s over steps 5000-12000 (an update per step)" \
    --command "SAC=.peers/sac postprocess/peers/sac_peers.sh GMI_DRL OUT (config/half_cheetah_sac.yaml, 12000 steps, device.graphs on)"
done
