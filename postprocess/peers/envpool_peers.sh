#!/usr/bin/env bash
# MuJoCo env stepping (issue 31) beside EnvPool 1.2.5, in one call on the GPU machine: random
# actions, Hopper / Ant / Humanoid v5.
#   sync    64 envs on 1, 2, 4, 8, 16 threads (gmi_drl bench-env; EnvPool num_envs = batch_size = 64)
#   groups  128 envs in groups of 64 on 16 threads (gmi_drl env.batch_size=64; EnvPool's async mode,
#           num_envs 128, batch_size 64, recv/send)
# gmi_drl runs each point twice (plain and env.pin_threads), EnvPool once (its harness,
# ../shared/peers/envpool/bench_envpool.py, on PYTHONPATH=$ENVPOOL/site).
# Usage, from the repository root on the GPU machine:
#   ENVPOOL=.peers/envpool postprocess/peers/envpool_peers.sh GMI_DRL OUTDIR [TASK:STEPS...]
# Writes OUTDIR/gmi-*.json (bench-env), OUTDIR/envpool.jsonl and OUTDIR/peers_new.json (ledger rows:
# gmi_drl's better of plain and pinned against EnvPool; postprocess/peers/ledger.py merge).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 GMI_DRL OUTDIR [TASK:STEPS...]" >&2; exit 2; }
gmi=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
tasks=${*:-"Hopper-v5:400 Ant-v5:200 Humanoid-v5:150"}
mkdir -p "$out"
envpool=${ENVPOOL:-.peers/envpool}
for ts in $tasks; do
  t=${ts%%:*}; s=${ts##*:}
  for pin in false true; do
    "$gmi" bench-env --name "$t" --num-envs 64 --threads 1,2,4,8,16 --steps "$s" --warmup 20 \
      --set env.pin_threads=$pin --json "$out/gmi-sync-$pin-$t.json" 2>&1 | grep "env steps"
    "$gmi" bench-env --name "$t" --num-envs 128 --threads 16 --steps "$s" --warmup 20 --set env.batch_size=64 \
      --set env.pin_threads=$pin --json "$out/gmi-groups-$pin-$t.json" 2>&1 | grep "env steps"
  done
done
names=$(for ts in $tasks; do echo -n "${ts%%:*} "; done)
# shellcheck disable=SC2086
PYTHONPATH="$envpool/site" timeout 400 python3 "$envpool/bench_envpool.py" --tasks $names \
  > "$out/envpool.jsonl" 2> "$out/envpool.log"
grep -v "^#" "$out/envpool.log" | tail -n 20
python3 - "$out" "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" "$(nproc)" <<'PY'
import datetime, glob, json, os, sys
out, gpu, cores = sys.argv[1], sys.argv[2] or "no GPU", sys.argv[3]
peer = {}
for line in open(os.path.join(out, "envpool.jsonl")):
    if line.startswith("{"):
        p = json.loads(line)
        if "env_steps_per_s" in p:
            peer[(p["task"], p["mode"], p["threads"])] = p["env_steps_per_s"]
best = {}
for f in glob.glob(os.path.join(out, "gmi-*.json")):
    kind = os.path.basename(f).split("-")[1]
    j = json.load(open(f))
    for r in j["results"]:
        key = (j["env"], "sync" if kind == "sync" else "async", r["threads"])
        best[key] = max(best.get(key, 0.0), r["env_steps_per_s"])
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
                   "(gmi_drl bench-env, the better of env.pin_threads false/true; EnvPool: bench_envpool.py)",
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
