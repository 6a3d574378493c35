#!/usr/bin/env bash
# MuJoCo env stepping (issue 31) beside EnvPool 1.2.5, in one call on the GPU machine: random
# actions, Hopper / Ant / Humanoid v5.
#   sync    64 envs on 1, 2, 4, 8, 16 threads (gmi_drl bench-env; EnvPool num_envs = batch_size = 64)
#   groups  128 envs in groups of 64 on 16 threads (gmi_drl env.batch_size=64; EnvPool's async mode,
#           num_envs 128, batch_size 64, recv/send)
# gmi_drl runs each point twice (plain and env.pin_threads), EnvPool once (its harness,
# ../shared/peers/envpool/bench_envpool.py, on PYTHONPATH=$ENVPOOL/site); REPS=n repeats the
# whole set n times, alternating, and the ledger takes each side's median.
# Usage, from the repository root on the GPU machine:
#   ENVPOOL=.peers/envpool postprocess/peers/envpool_peers.sh GMI_DRL OUTDIR [TASK:STEPS...]
# Writes OUTDIR/gmi-*.json (bench-env), OUTDIR/envpool.jsonl, OUTDIR/summary.json (every sample)
# and OUTDIR/peers_new.json (ledger rows: gmi_drl's better median of plain and pinned against
# EnvPool's median; postprocess/peers/ledger.py merge).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 GMI_DRL OUTDIR [TASK:STEPS...]" >&2; exit 2; }
gmi=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
tasks=${*:-"Hopper-v5:400 Ant-v5:200 Humanoid-v5:150"}
mkdir -p "$out"
envpool=${ENVPOOL:-.peers/envpool}
names=$(for ts in $tasks; do echo -n "${ts%%:*} "; done)
reps=${REPS:-1}
for rep in $(seq "$reps"); do  # gmi_drl and EnvPool alternate, so a slow spell of the machine hits both
  for ts in $tasks; do
    t=${ts%%:*}; s=${ts##*:}
    for pin in false true; do
      "$gmi" bench-env --name "$t" --num-envs 64 --threads 1,2,4,8,16 --steps "$s" --warmup 20 \
        --set env.pin_threads=$pin --json "$out/gmi-sync-$pin-$rep-$t.json" 2>&1 | grep "env steps"
      "$gmi" bench-env --name "$t" --num-envs 128 --threads 16 --steps "$s" --warmup 20 --set env.batch_size=64 \
        --set env.pin_threads=$pin --json "$out/gmi-groups-$pin-$rep-$t.json" 2>&1 | grep "env steps"
    done
  done
  # shellcheck disable=SC2086
  PYTHONPATH="$envpool/site" timeout 400 python3 "$envpool/bench_envpool.py" --tasks $names \
    --min-seconds "${ENVPOOL_SECONDS:-2}" >> "$out/envpool.jsonl" 2>> "$out/envpool.log"
  grep -v "^#" "$out/envpool.log" | tail -n 18
done
python3 - "$out" "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" "$(nproc)" <<'PY'
import datetime, glob, json, os, statistics, sys
out, gpu, cores = sys.argv[1], sys.argv[2] or "no GPU", sys.argv[3]
peer, gmi = {}, {}  # (task, mode, threads) -> samples; gmi: per pinning
for line in open(os.path.join(out, "envpool.jsonl")):
    if line.startswith("{"):
        p = json.loads(line)
        if "env_steps_per_s" in p:
            peer.setdefault((p["task"], p["mode"], p["threads"]), []).append(p["env_steps_per_s"])
for f in glob.glob(os.path.join(out, "gmi-*.json")):
    _, kind, pin = os.path.basename(f).split("-")[:3]
    j = json.load(open(f))
    for r in j["results"]:
        key = (j["env"], "sync" if kind == "sync" else "async", r["threads"])
        gmi.setdefault(key, {}).setdefault(pin, []).append(r["env_steps_per_s"])
med = statistics.median
best = {k: max(med(v) for v in by_pin.values()) for k, by_pin in gmi.items()}
json.dump([{"task": k[0], "mode": k[1], "threads": k[2], "envpool": peer.get(k, []),
            "gmi_drl": gmi[k].get("false", []), "gmi_drl_pinned": gmi[k].get("true", [])} for k in sorted(gmi)],
          open(os.path.join(out, "summary.json"), "w"), indent=1)
peer = {k: med(v) for k, v in peer.items()}
rows = []
for key in sorted(best):
    if key not in peer:
        continue
    task, mode, threads = key
    setting = (f"64 envs, {threads} threads" if mode == "sync" else
               f"128 envs in groups of 64, {threads} threads (EnvPool: async, batch_size 64)")
    rows.append({
        "date": datetime.date.today().isoformat(),
        "device": f"{gpu} machine, {cores} CPU cores",
        "same_call": True,
        "command": "ENVPOOL=.peers/envpool postprocess/peers/envpool_peers.sh GMI_DRL OUT "
                   "(gmi_drl bench-env, the better median of env.pin_threads false/true; EnvPool: bench_envpool.py; "
                   "medians of REPS alternating repetitions)",
        "workload": f"env/{task}/{'sync' if mode == 'sync' else 'groups'}/{threads}-threads",
        "precision": "float64 physics",
        "unit": f"env-steps/s, random actions, {setting}",
        "peer": f"EnvPool 1.2.5 {mode}",
        "peer_value": peer[key],
        "gmi_drl_value": best[key],
    })
    print(f"{task:12s} {mode:5s} T={threads:<2d} gmi_drl {best[key]:>10,.0f}  EnvPool {peer[key]:>10,.0f}  "
          f"{best[key] / peer[key]:.2f}x")
json.dump(rows, open(os.path.join(out, "peers_new.json"), "w"), indent=1)
PY
