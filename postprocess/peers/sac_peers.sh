#!/usr/bin/env bash
# gmi_drl's SAC and its peers on CleanRL's settings, in one call on the GPU machine: HalfCheetah-v5,
# one env, 12,000 env steps (an update every step after learning_starts 5,000).  gmi_drl runs
# config/half_cheetah_sac.yaml with device.graphs on (its update events captured and replayed),
# off, and on with device.gemm_epilogues false (bias, ReLU and bias gradients in separate kernels
# instead of cuBLASLt's epilogues); CleanRL's sac_continuous_action.py (eager PyTorch) and LeanRL's
# (torch.compile and CUDA graphs) run from the harness ../shared/peers/sac/assemble.sh builds.
# Rates (sac_rates.py): env-steps/s over steps 6,000-12,000 for every program (steady state, the
# same steps: no graph capture, no torch.compile in them); [5,000, 12,000) is kept beside.
# Usage, from the repository root on the GPU machine:
#   SAC=.peers/sac postprocess/peers/sac_peers.sh GMI_DRL OUTDIR
# and, here, on the OUTDIR a call brought back (the rates and the ledger lines again; it writes
# into OUTDIR, so copy a read-only fetched folder first):
#   postprocess/peers/sac_peers.sh --analyse OUTDIR
# Writes the runs' logs and metrics in OUTDIR, OUTDIR/sac_sps.json (every rate) and
# OUTDIR/peers_new.json (the comparisons).  Back here: `postprocess/peers/ledger.py merge
# OUTDIR/peers_new.json`, then `postprocess/peers/ledger.py render --readme postprocess/results/README.md`.
set -uo pipefail
usage() { echo "usage: SAC=HARNESS $0 GMI_DRL OUTDIR | $0 --analyse OUTDIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "sac_peers: $*" >&2; exit 1; }
steps=12000

# The rates over the same steps, and one ledger line per peer, from what OUTDIR holds.
analyse() {
  local out=$1 cpu
  cpu=$(cat "$out/cpu.txt" 2>/dev/null || true)
  rm -f "$out/peers_new.json"
  python3 "$here/sac_rates.py" "$out" ${cpu:+--cpu "$cpu"} || fail "no rates"
  local device torch
  device=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['device'])" "$out/sac_sps.json")
  torch=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['versions'].get('torch', '?'))" "$out/sac_sps.json")
  for p in cleanrl leanrl; do
    name="CleanRL sac_continuous_action.py (PyTorch $torch)"
    [ $p = leanrl ] && name="LeanRL sac_continuous_action_torchcompile.py --compile --cudagraphs (PyTorch $torch)"
    python3 "$here/ledger.py" --ledger "$out/peers_new.json" add --device "$device" --gmi "$out/gmi_sac.json" \
      --peer "$out/peer_$p.jsonl" --workload sac/HalfCheetah-v5 --precision fp32 --peer-name "$name" \
      --unit "env-steps/s over steps 6000-12000, the same steps for each (an update per step)" \
      --command "SAC=.peers/sac postprocess/peers/sac_peers.sh GMI_DRL OUT (config/half_cheetah_sac.yaml, 12000 steps, device.graphs on)" \
      ${date:+--date "$date"} || fail "ledger.py add ($p) failed"
  done
}
if [ "$1" = --analyse ]; then
  out=$(realpath "$2"); [ -d "$out" ] || fail "$2 is not a folder"
  date=$(stat -c %y "$out/sac_sps.json" 2>/dev/null | cut -c1-10)
  analyse "$out"; exit 0
fi

gmi=$(realpath "$1"); out=$(realpath -m "$2")
harness=$(realpath "${SAC:?set SAC to the harness folder of ../shared/peers/sac/assemble.sh}")
mkdir -p "$out"
lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1 > "$out/cpu.txt"
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
date=""
analyse "$out"
