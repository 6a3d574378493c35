#!/usr/bin/env bash
# Call 15: _m = main 0a0cefb, _n = multi-discrete branch (MultiDiscrete heads; config/tag_continuous_ppo.yaml
# sets env.multi_discrete_actions true). Tag points as ppo_peers.sh, WarpDrive (fp32, and tf32 through
# TORCH_ALLOW_TF32_CUBLAS_OVERRIDE) in the same call. Saves after every step.
set -u
T0=$(date +%s)
mkdir -p /tmp/g && tar xJf .gpu/t15.tar.xz -C /tmp/g; source .gpu/env.sh /tmp/g
B=/tmp/g/bin; O=/tmp/t15; mkdir -p $O
save() { tar czf $OUT/t15.tar.gz -C /tmp t15; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
tests() { local v=$1; shift; for t in "$@"; do timeout 150 $B/${t}_$v --gtest_brief=1 > $O/${t}_$v.log 2>&1
  echo "$t $v rc=$? $(grep -E 'PASSED|FAILED' $O/${t}_$v.log | head -6 | tr '\n' ' ') t=$(( $(date +%s) - T0 ))"; done; save; }
run() { local v=$1 name=$2; shift 2; timeout 150 $B/gmi_drl_$v bench --num-envs 2000 --warmup 1 --iterations 3 --phase-iterations 0 --json $O/${v}_$name.json "$@" > $O/${v}_$name.log 2>&1; echo "$v $name rc=$? $(python3 -c "import json;d=json.load(open('$O/${v}_$name.json'));print(' '.join('%d:%.1fk(%.1f/%.1fms)%s|%s'%(r['num_envs'],r['env_steps_per_s']/1e3,r['rollout_ms'],r['update_ms'],r.get('kernels',''),r.get('kernel_trials','')) for r in d['results']))" 2>&1) t=$(( $(date +%s) - T0 ))"; save; }
kt() { local v=$1 name=$2; shift 2; timeout 120 $B/gmi_drl_$v bench --num-envs 2000 --warmup 1 --iterations 1 --kernel-times 1 --set device.graphs=off --json $O/${v}_kt_$name.json "$@" > $O/${v}_kt_$name.log 2>&1; echo "$v kt $name rc=$?"
python3 -c "
import json;d=json.load(open('$O/${v}_kt_$name.json'));r=d['results'][-1]
print('rollout %.1f update %.1f ms'%(r['rollout_ms'],r['update_ms']))
for k in r['kernel_times'][:18]: print('%-60s %6.1f %8.2f'%(k['name'][:60],k['calls_per_iteration'],k['ms_per_iteration']))"; save; }
TC=config/tag_continuous_ppo.yaml
tc5=(--config $TC --set env.num_taggers=1 --set env.num_runners=4 --set env.num_other_agents_observed=4 --set ppo.num_steps=250)
tc45=(--config $TC --set env.num_taggers=4 --set env.num_runners=41 --set ppo.num_steps=50)
gw1000=(--config config/tag_gridworld_ppo.yaml --set env.num_taggers=999 --set env.use_full_observation=false --set ppo.num_steps=10)
gw5=(--config config/tag_gridworld_ppo.yaml)
TM=.gpu/tc_main.yaml   # main's config (no env.multi_discrete_actions key)
tc5m=(--config $TM --set env.num_taggers=1 --set env.num_runners=4 --set env.num_other_agents_observed=4 --set ppo.num_steps=250)
tc45m=(--config $TM --set env.num_taggers=4 --set env.num_runners=41 --set ppo.num_steps=50)
tests n test_ppo_loss test_sample test_vtrace test_tag test_multi_agent
run n tc45 "${tc45[@]}"
run m tc45 "${tc45m[@]}"
run n tc45_tf32 "${tc45[@]}" --set device.matmul=tf32
run n tc5 "${tc5[@]}"
run m tc5 "${tc5m[@]}"
run n tc5_tf32 "${tc5[@]}" --set device.matmul=tf32
run n tc45_joint "${tc45[@]}" --set env.multi_discrete_actions=false
( cd .peers/wd && OUT=$O/wd bash run_device.sh --points gw5,gw1000,tc5,tc45 ) > $O/wd.log 2>&1; echo "wd rc=$? t=$(( $(date +%s) - T0 ))"; grep -E '^(TRAIN|ERROR)' $O/wd.log | cut -c1-300; save
( cd .peers/wd && TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 OUT=$O/wd_tf32 bash run_device.sh --points tc5,tc45 ) > $O/wd_tf32.log 2>&1; echo "wd tf32 rc=$? t=$(( $(date +%s) - T0 ))"; grep -E '^(TRAIN|ERROR)' $O/wd_tf32.log | cut -c1-300; save
run n gw1000 "${gw1000[@]}"
run n gw5 "${gw5[@]}"
kt n tc45 "${tc45[@]}"
kt n tc45_tf32 "${tc45[@]}" --set device.matmul=tf32
run m tc45_tf32 "${tc45m[@]}" --set device.matmul=tf32
echo "done t=$(( $(date +%s) - T0 ))"
