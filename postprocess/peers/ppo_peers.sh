#!/usr/bin/env bash
# gmi_drl's PPO and its peers on the same settings, in one call on the GPU machine:
#   cartpole  CartPole-v1 2x64, 4096 / 16384 / 65536 envs: gmi_drl fp32 and tf32 (device.fused_kernels
#             auto) beside PureJaxRL with JAX's `highest` and default (TF32) matmul precision
#   humanoid  SyntheticHumanoid-v0 (376 obs, 17 actions) 256x256 and 512x512x512, 4096 and 65536 envs,
#             the same pairs; gmi_drl also with fused_kernels on and off (auto's choice against both)
#   tag       WarpDrive's four Tag points, 2000 envs (its yaml, networks and trainer), gmi_drl with
#             the same agents, networks and rollout lengths, fused_kernels auto, on and off
# Usage, from the repository root on the GPU machine:
#   PJR=.peers/pjr WD=.peers/warpdrive postprocess/peers/ppo_peers.sh GMI_DRL OUTDIR cartpole humanoid tag
# PJR and WD are the harness folders that ../shared/peers/{pjr,warpdrive}/assemble.sh build (fetched
# peer code, kept out of the repository).  Writes gmi_drl's bench JSONs and the peers' JSON lines in
# OUTDIR, and OUTDIR/peers_new.json: the comparisons.  Back here: `postprocess/peers/ledger.py merge
# OUTDIR/peers_new.json`, then `postprocess/peers/ledger.py render --readme postprocess/results/README.md`.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 GMI_DRL OUTDIR cartpole|humanoid|tag..." >&2; exit 2; }
gmi=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
ledger() { python3 "$here/ledger.py" --ledger "$out/peers_new.json" add --device "$device" "$@"; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
jaxv=$(python3 -c 'import jax; print(jax.__version__)' 2>/dev/null || echo "?")
export XLA_PYTHON_CLIENT_PREALLOCATE=false
fail() { echo "ppo_peers: $*" >&2; exit 1; }
bench() {  # bench NAME ARGS...: one gmi_drl bench, its JSON in OUTDIR/NAME.json (none if it failed)
  local name=$1; shift
  echo "== gmi_drl bench $name: $*"
  rm -f "$out/$name.json"
  "$gmi" bench "$@" --json "$out/$name.json" > "$out/$name.log" 2>&1 || { tail -n 20 "$out/$name.log"; fail "bench $name failed"; }
  grep -vE '^\s*$' "$out/$name.log" | tail -n 12
}
peer() {  # peer FILE COMMAND...: a peer's JSON lines into FILE (none if it failed)
  local file=$1; shift
  rm -f "$file"
  "$@" > "$file.log" 2>&1 || { tail -n 20 "$file.log"; rm -f "$file"; fail "peer run failed: $*"; }
}
for w in "$@"; do
  case $w in
  cartpole)
    for m in fp32 tf32; do
      bench "gmi_cartpole_$m" --config config/bench_cartpole_ppo.yaml --num-envs 4096,16384,65536 --warmup 2 \
        --iterations 5 --set device.matmul=$m
    done
    for p in highest default; do
      extra=(); [ "$p" = default ] || extra=(--matmul-precision "$p")
      echo "== PureJaxRL CartPole, $p"
      peer "$out/pjr_cartpole_$p.jsonl" python3 "$here/purejaxrl_cartpole.py" --harness "${PJR:?set PJR}" "${extra[@]}" \
        --json "$out/pjr_cartpole_$p.jsonl"
    done
    cmd="postprocess/peers/ppo_peers.sh GMI_DRL OUT cartpole (gmi_drl bench --config config/bench_cartpole_ppo.yaml --set device.matmul=M; postprocess/peers/purejaxrl_cartpole.py)"
    ledger --gmi "$out/gmi_cartpole_fp32.json" --peer "$out/pjr_cartpole_highest.jsonl" --workload ppo/CartPole-v1/64x64 \
      --precision "fp32 vs JAX highest" --peer-name "PureJaxRL (JAX $jaxv)" --command "$cmd"
    ledger --gmi "$out/gmi_cartpole_tf32.json" --peer "$out/pjr_cartpole_default.jsonl" --workload ppo/CartPole-v1/64x64 \
      --precision "tf32 vs JAX default (TF32)" --peer-name "PureJaxRL (JAX $jaxv)" --command "$cmd"
    ;;
  humanoid)
    for h in 256,256 512,512,512; do
      tag=${h//,/x}
      for m in fp32 tf32; do
        for f in auto on off; do
          iters=(--phase-iterations 0); [ $f = auto ] && iters=(--phase-iterations 2)
          bench "gmi_humanoid_${tag}_${m}_$f" --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 \
            --warmup 2 --iterations 4 "${iters[@]}" --set "policy.actor_hidden=[$h]" --set "policy.critic_hidden=[$h]" \
            --set device.matmul=$m --set device.fused_kernels=$f
        done
      done
    done
    for p in highest default; do
      extra=(); [ "$p" = default ] || extra=(--matmul-precision "$p")
      echo "== PureJaxRL SyntheticHumanoid, $p"
      peer "$out/pjr_humanoid_$p.jsonl.raw" bash -c "cd '${PJR:?set PJR}' && python3 bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01 ${extra[*]}"
      mv "$out/pjr_humanoid_$p.jsonl.raw.log" "$out/pjr_humanoid_$p.jsonl"
    done
    for h in 256x256 512x512x512; do
      cmd="postprocess/peers/ppo_peers.sh GMI_DRL OUT humanoid (gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --set policy.{actor,critic}_hidden=[${h//x/,}] --set device.matmul=M; bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01)"
      ledger --gmi "$out/gmi_humanoid_${h}_fp32_auto.json" --peer "$out/pjr_humanoid_highest.jsonl" --hidden $h \
        --workload ppo/SyntheticHumanoid-v0/$h --precision "fp32 vs JAX highest" --peer-name "PureJaxRL (JAX $jaxv)" --command "$cmd"
      ledger --gmi "$out/gmi_humanoid_${h}_tf32_auto.json" --peer "$out/pjr_humanoid_default.jsonl" --hidden $h \
        --workload ppo/SyntheticHumanoid-v0/$h --precision "tf32 vs JAX default (TF32)" --peer-name "PureJaxRL (JAX $jaxv)" --command "$cmd"
    done
    ;;
  tag)
    echo "== WarpDrive Tag"
    rm -rf "$out/warpdrive"
    OUT="$out/warpdrive" bash "${WD:?set WD}/run_device.sh" --points gw5,gw1000,tc5,tc45 > "$out/warpdrive.log" 2>&1 ||
      fail "WarpDrive failed (see $out/warpdrive.log)"
    grep -E '^(TRAIN|ERROR)' "$out/warpdrive.log"
    declare -A sets=(
      [gw5]="--config config/tag_gridworld_ppo.yaml"
      [gw1000]="--config config/tag_gridworld_ppo.yaml --set env.num_taggers=999 --set env.use_full_observation=false --set ppo.num_steps=10"
      [tc5]="--config config/tag_continuous_ppo.yaml --set env.num_taggers=1 --set env.num_runners=4 --set env.num_other_agents_observed=4 --set ppo.num_steps=250"
      [tc45]="--config config/tag_continuous_ppo.yaml --set env.num_taggers=4 --set env.num_runners=41 --set ppo.num_steps=50")
    for p in gw5 gw1000 tc5 tc45; do
      for f in auto on off; do
        # shellcheck disable=SC2086
        bench "gmi_tag_${p}_$f" ${sets[$p]} --num-envs 2000 --warmup 1 --iterations 3 --phase-iterations 0 --set device.fused_kernels=$f
      done
      python3 - "$out/warpdrive/results.jsonl" "$p" > "$out/wd_$p.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "train" and r.get("point") == sys.argv[2]:
        print(json.dumps({"point": r["point"], "num_envs": 2000,
                          "steps_per_s": r["trainer_perf_stats"]["Mean steps per sec (total)"]}))
PY
      ledger --gmi "$out/gmi_tag_${p}_auto.json" --peer "$out/wd_$p.jsonl" --workload "ppo/Tag-$p" --precision fp32 \
        --peer-name "WarpDrive (numba backend, TrainerA2C, its yaml)" \
        --unit "env-replica steps/s, end to end (WarpDrive's trainer total)" \
        --command "postprocess/peers/ppo_peers.sh GMI_DRL OUT tag (gmi_drl bench ${sets[$p]} --num-envs 2000; WarpDrive run_device.sh --points $p)"
    done
    ;;
  *) echo "unknown workload '$w' (expected cartpole, humanoid or tag)" >&2; exit 2 ;;
  esac
done
