#!/usr/bin/env bash
# Call 6: main (7689945: vectorised gather, two-pass bias gradients) and the split-k branch (wip),
# GPU tests, SyntheticHumanoid PPO beside PureJaxRL, kernel times. Re-packed after every step.
set -u
for v in main wip; do mkdir -p /tmp/$v && tar xJf .gpu/$v.tar.xz -C /tmp/$v; done
source .gpu/env.sh /tmp/main
export XLA_PYTHON_CLIENT_PREALLOCATE=false
O=/tmp/t6; mkdir -p $O
save() { tar czf $OUT/t6.tar.gz -C /tmp t6; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
tests() { local v=$1; shift; for t in "$@"; do
  timeout 150 /tmp/$v/bin/$t --gtest_brief=1 > $O/${v}_$t.log 2>&1
  echo "$v $t rc=$? $(grep -E 'PASSED|FAILED' $O/${v}_$t.log | head -4 | tr '\n' ' ')"; done; save; }
run() { local v=$1 name=$2; shift 2; timeout 150 /tmp/$v/bin/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --warmup 2 --iterations 4 --phase-iterations 0 --json $O/${v}_$name.json "$@" > $O/${v}_$name.log 2>&1; echo "$v $name rc=$? $(python3 -c "import json;d=json.load(open('$O/${v}_$name.json'));print(' '.join('%d:%.3fM(%.1f/%.1fms)'%(r['num_envs'],r['env_steps_per_s']/1e6,r['rollout_ms'],r['update_ms']) for r in d['results']))" 2>&1)"; save; }
kt() { local v=$1; shift; timeout 100 /tmp/$v/bin/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --json $O/${v}_kt.json "$@" > $O/${v}_kt.log 2>&1; echo "$v kt rc=$?"
python3 -c "
import json;d=json.load(open('$O/${v}_kt.json'));r=d['results'][-1]
for k in r['kernel_times'][:16]: print('%-60s %6.1f %8.2f'%(k['name'][:60],k['calls_per_iteration'],k['ms_per_iteration']))"; save; }
pjr() { local p=$1 h=$2 extra=(); [ "$p" = default ] || extra=(--matmul-precision "$p")
  (cd .peers/pjr && timeout 200 python3 bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01 --hidden $h "${extra[@]}") > $O/pjr_humanoid_${p}_${h//,/x}.jsonl 2> $O/pjr_humanoid_${p}_${h//,/x}.err
  echo "pjr $p $h rc=$?"; grep -E '^\{' $O/pjr_humanoid_${p}_${h//,/x}.jsonl | cut -c1-200; save; }
tests main test_mlp test_ppo
run main h256_tf32 --set device.matmul=tf32
tests wip test_mlp
run wip h256_tf32 --set device.matmul=tf32
pjr default 256,256
kt main --set device.matmul=tf32
kt wip --set device.matmul=tf32
run main h256_fp32 --set device.matmul=fp32
pjr highest 256,256
hs=(--set "policy.actor_hidden=[512,512,512]" --set "policy.critic_hidden=[512,512,512]")
run main h512_tf32 "${hs[@]}" --set device.matmul=tf32
run wip h512_tf32 "${hs[@]}" --set device.matmul=tf32
pjr default 512,512,512
tests main test_blas test_offpolicy test_multi_agent
tests wip test_blas
