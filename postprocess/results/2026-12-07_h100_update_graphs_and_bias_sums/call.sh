#!/usr/bin/env bash
# Call 14: _b = main 706267f + wip/fused-bias-sums (fedac80: the Hopper input gradient sums the
# lower layer's bias gradient in its epilogue; narrow heads' input gradient with bias sums in one pass), _m = main 706267f's gmi_drl, _g = main +
# PPO update graphs (wip/ppo-update-graphs-2), _x = _g with GMI_X leave-one-out knobs in mlp.cpp
# (results wrong; times tell what each part costs). PureJaxRL beside. Saves after every step.
set -u
T0=$(date +%s)
mkdir -p /tmp/g && tar xJf .gpu/t13c.tar.xz -C /tmp/g; source .gpu/env.sh /tmp/g
export XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/g/bin; O=/tmp/t14; mkdir -p $O
save() { tar czf $OUT/t14.tar.gz -C /tmp t14; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
tests() { local v=$1; shift; for t in "$@"; do timeout 150 $B/${t}_$v --gtest_brief=1 > $O/${t}_$v.log 2>&1
  echo "$t $v rc=$? $(grep -E 'PASSED|FAILED' $O/${t}_$v.log | head -6 | tr '\n' ' ') t=$(( $(date +%s) - T0 ))"; done; save; }
run() { local v=$1 name=$2 cfg=$3 envs=$4; shift 4; timeout 150 $B/gmi_drl_$v bench --config config/$cfg --num-envs $envs --warmup 2 --iterations 4 --phase-iterations 0 --json $O/${v}_$name.json "$@" > $O/${v}_$name.log 2>&1; echo "$v $name rc=$? $(python3 -c "import json;d=json.load(open('$O/${v}_$name.json'));print(' '.join('%d:%.3fM(%.1f/%.1fms)%s'%(r['num_envs'],r['env_steps_per_s']/1e6,r['rollout_ms'],r['update_ms'],r.get('kernels','')) for r in d['results']))" 2>&1) t=$(( $(date +%s) - T0 ))"; save; }
kt() { local v=$1; shift; timeout 100 $B/gmi_drl_$v bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --json $O/${v}_kt.json "$@" > $O/${v}_kt.log 2>&1; echo "$v kt rc=$?"
python3 -c "
import json;d=json.load(open('$O/${v}_kt.json'));r=d['results'][-1]
for k in r['kernel_times'][:16]: print('%-60s %6.1f %8.2f'%(k['name'][:60],k['calls_per_iteration'],k['ms_per_iteration']))"; save; }
H=bench_synthetic_humanoid_ppo.yaml
tests b test_mlp test_ppo
tests g test_ppo
run m h256_tf32 $H 4096,65536 --set device.matmul=tf32
run b h256_tf32 $H 4096,65536 --set device.matmul=tf32
run g h256_tf32_on $H 4096,65536 --set device.matmul=tf32 --set device.graphs=on
(cd .peers/pjr && timeout 150 python3 bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01 --hidden 256,256) > $O/pjr_humanoid_default_256x256.jsonl 2> $O/pjr_h.err; echo "pjr humanoid rc=$? t=$(( $(date +%s) - T0 ))"; grep -E '^\{' $O/pjr_humanoid_default_256x256.jsonl | cut -c1-200; save
kt b --set device.matmul=tf32
run b h256_tf32_b $H 4096,65536 --set device.matmul=tf32
run m h256_tf32_b $H 4096,65536 --set device.matmul=tf32
run g h256_tf32_on_b $H 4096,65536 --set device.matmul=tf32 --set device.graphs=on
run m cp_tf32 bench_cartpole_ppo.yaml 4096,16384,65536 --set device.matmul=tf32
run g cp_tf32_on bench_cartpole_ppo.yaml 4096,16384,65536 --set device.matmul=tf32 --set device.graphs=on
run m h256_fp32 $H 4096,65536 --set device.matmul=fp32
run b h256_fp32 $H 4096,65536 --set device.matmul=fp32
tests b test_multi_agent test_offpolicy
tests g test_multi_agent
for x in base nobias nowgrad noside noheadig; do GMI_X=$x run x h256_tf32_$x $H 65536 --set device.matmul=tf32; done
hs=(--set "policy.actor_hidden=[512,512,512]" --set "policy.critic_hidden=[512,512,512]")
run m h512_tf32 $H 4096,65536 "${hs[@]}" --set device.matmul=tf32
run b h512_tf32 $H 4096,65536 "${hs[@]}" --set device.matmul=tf32
echo "done t=$(( $(date +%s) - T0 ))"
