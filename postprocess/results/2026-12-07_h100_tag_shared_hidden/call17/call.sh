#!/usr/bin/env bash
# Call 17: _n = main with MultiDiscrete heads (66c9994), _s = + shared hidden layers (policy.shared_hidden), the
# trunk's gradient in one pass (value head's rank-one term, sum, derivative) and the lane-parallel loss for groups.
# Tag points as ppo_peers.sh, WarpDrive (fp32, and tf32 through TORCH_ALLOW_TF32_CUBLAS_OVERRIDE) in the same call.
set -u
T0=$(date +%s)
mkdir -p /tmp/g && tar xJf .gpu/t17.tar.xz -C /tmp/g; source .gpu/env.sh /tmp/g
B=/tmp/g/bin; O=/tmp/t17; mkdir -p $O
save() { tar czf $OUT/t17.tar.gz -C /tmp t17; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
tests() { local v=$1; shift; for t in "$@"; do timeout 200 $B/${t}_$v --gtest_brief=1 > $O/${t}_$v.log 2>&1
  echo "$t $v rc=$? $(grep -E 'PASSED|FAILED' $O/${t}_$v.log | head -6 | tr '\n' ' ') t=$(( $(date +%s) - T0 ))"; done; save; }
run() { local v=$1 name=$2; shift 2; timeout 150 $B/gmi_drl_$v bench --num-envs 2000 --warmup 1 --iterations 3 --phase-iterations 0 --json $O/${v}_$name.json "$@" > $O/${v}_$name.log 2>&1; echo "$v $name rc=$? $(python3 -c "import json;d=json.load(open('$O/${v}_$name.json'));print(' '.join('%d:%.1fk(%.1f/%.1fms)%s|%s'%(r['num_envs'],r['env_steps_per_s']/1e3,r['rollout_ms'],r['update_ms'],r.get('kernels',''),r.get('kernel_trials','')) for r in d['results']))" 2>&1) t=$(( $(date +%s) - T0 ))"; save; }
kt() { local v=$1 name=$2; shift 2; timeout 120 $B/gmi_drl_$v bench --num-envs 2000 --warmup 1 --iterations 1 --kernel-times 1 --set device.graphs=off --json $O/${v}_kt_$name.json "$@" > $O/${v}_kt_$name.log 2>&1; echo "$v kt $name rc=$?"
python3 -c "
import json;d=json.load(open('$O/${v}_kt_$name.json'));r=d['results'][-1]
print('rollout %.1f update %.1f ms'%(r['rollout_ms'],r['update_ms']))
for k in r['kernel_times'][:14]: print('%-60s %6.1f %8.2f'%(k['name'][:60],k['calls_per_iteration'],k['ms_per_iteration']))"; save; }
TC=config/tag_continuous_ppo.yaml
tc5=(--config $TC --set env.num_taggers=1 --set env.num_runners=4 --set env.num_other_agents_observed=4 --set ppo.num_steps=250)
tc45=(--config $TC --set env.num_taggers=4 --set env.num_runners=41 --set ppo.num_steps=50)
SH=(--set policy.shared_hidden=true --set "policy.critic_hidden=[256,256]")
tests s test_actor_critic test_ppo test_multi_agent test_ppo_loss
# The same bits as main 0a0cefb (before MultiDiscrete heads and shared layers) for Discrete and
# Gaussian heads, layered and fused: 3 iterations, the checkpoints' /policy/params compared.
same() { local name=$1; shift; for v in m s; do rm -rf /tmp/same_$v; timeout 120 $B/gmi_drl_$v "$@" --set train.run_dir=/tmp/same_$v > $O/same_${name}_$v.log 2>&1; done
python3 -c "
import h5py,glob,numpy as np
a,b=[h5py.File(sorted(glob.glob('/tmp/same_%s/checkpoints/*.h5'%v))[-1],'r') for v in 'ms']
print('same $name', 'params equal' if np.array_equal(a['policy/params'][()],b['policy/params'][()]) else 'PARAMS DIFFER', a['policy/params'].shape)" 2>&1 | tail -1; }
same cartpole_layered --config config/cartpole_ppo.yaml --set train.total_env_steps=3072 --set device.fused_kernels=off
same cartpole_fused --config config/cartpole_ppo.yaml --set train.total_env_steps=3072 --set device.fused_kernels=on
same pendulum_layered --config config/pendulum_ppo.yaml --set train.total_env_steps=12288 --set device.fused_kernels=off
same gw_layered --config config/tag_gridworld_taggers_ppo.yaml --set train.total_env_steps=18000 --set device.fused_kernels=off
same tc_joint_wide_loss --config .gpu/tc_main.yaml --set env.num_envs=50 --set train.total_env_steps=37500 --set device.fused_kernels=off
save
run s tc45 "${tc45[@]}" "${SH[@]}"
run s tc45_tf32 "${tc45[@]}" "${SH[@]}" --set device.matmul=tf32
run s tc5 "${tc5[@]}" "${SH[@]}"
run s tc5_tf32 "${tc5[@]}" "${SH[@]}" --set device.matmul=tf32
run n tc45 --config .gpu/tc_md.yaml --set env.num_taggers=4 --set env.num_runners=41 --set ppo.num_steps=50
( cd .peers/wd && OUT=$O/wd bash run_device.sh --points gw1000,tc5,tc45 ) > $O/wd.log 2>&1; echo "wd rc=$? t=$(( $(date +%s) - T0 ))"; grep -E '^(TRAIN|ERROR)' $O/wd.log | cut -c1-250; save
( cd .peers/wd && TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 OUT=$O/wd_tf32 bash run_device.sh --points tc5,tc45 ) > $O/wd_tf32.log 2>&1; echo "wd tf32 rc=$? t=$(( $(date +%s) - T0 ))"; grep -E '^(TRAIN|ERROR)' $O/wd_tf32.log | cut -c1-250; save
kt s tc45_tf32 "${tc45[@]}" "${SH[@]}" --set device.matmul=tf32
gw1000=(--config config/tag_gridworld_ppo.yaml --set env.num_taggers=999 --set env.use_full_observation=false --set ppo.num_steps=10)
ONE=(--set ppo.update_epochs=1 --set ppo.num_minibatches=1)   # WarpDrive's gradient work: one step a batch
run s tc45_1x1 "${tc45[@]}" "${SH[@]}" "${ONE[@]}"
run s tc5_1x1 "${tc5[@]}" "${SH[@]}" "${ONE[@]}"
run s gw1000_1x1 "${gw1000[@]}" "${ONE[@]}"
run s gw1000 "${gw1000[@]}"
run s tc45_b "${tc45[@]}" "${SH[@]}"
run s tc45_tf32_b "${tc45[@]}" "${SH[@]}" --set device.matmul=tf32
echo "done t=$(( $(date +%s) - T0 ))"
