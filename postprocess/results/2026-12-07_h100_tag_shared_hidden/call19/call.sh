#!/usr/bin/env bash
# Call 19: main 5ba1b66 (= the final review fixes: roofline trunk, rollout workspace without a backward buffer, graph test case).
# Tests, main 0a0cefb's bits for CartPole, the tc45 bench, a short training of config/tag_continuous_ppo.yaml.
set -u
T0=$(date +%s)
mkdir -p /tmp/g && tar xJf .gpu/t19.tar.xz -C /tmp/g; source .gpu/env.sh /tmp/g
B=/tmp/g/bin; O=/tmp/t19; mkdir -p $O
save() { tar czf $OUT/t19.tar.gz -C /tmp t19; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
tests() { local v=$1; shift; for t in "$@"; do timeout 200 $B/${t}_$v --gtest_brief=1 > $O/${t}_$v.log 2>&1
  echo "$t $v rc=$? $(grep -E 'PASSED|FAILED' $O/${t}_$v.log | head -6 | tr '\n' ' ') t=$(( $(date +%s) - T0 ))"; done; save; }
run() { local v=$1 name=$2; shift 2; timeout 150 $B/gmi_drl_$v bench --num-envs 2000 --warmup 1 --iterations 3 --phase-iterations 0 --json $O/${v}_$name.json "$@" > $O/${v}_$name.log 2>&1; echo "$v $name rc=$? $(python3 -c "import json;d=json.load(open('$O/${v}_$name.json'));print(' '.join('%d:%.1fk(%.1f/%.1fms)%s|%s'%(r['num_envs'],r['env_steps_per_s']/1e3,r['rollout_ms'],r['update_ms'],r.get('kernels',''),r.get('kernel_trials','')) for r in d['results']))" 2>&1) t=$(( $(date +%s) - T0 ))"; save; }
TC=config/tag_continuous_ppo.yaml
tc45=(--config $TC --set env.num_taggers=4 --set env.num_runners=41 --set ppo.num_steps=50)
tests s test_ppo test_actor_critic test_multi_agent
same() { local name=$1; shift; for v in m s; do rm -rf /tmp/same_$v; timeout 120 $B/gmi_drl_$v "$@" --set train.run_dir=/tmp/same_$v > $O/same_${name}_$v.log 2>&1; done
python3 -c "
import h5py,glob,numpy as np
a,b=[h5py.File(sorted(glob.glob('/tmp/same_%s/checkpoints/*.h5'%v))[-1],'r') for v in 'ms']
print('same $name', 'params equal' if np.array_equal(a['policy/params'][()],b['policy/params'][()]) else 'PARAMS DIFFER', a['policy/params'].shape)" 2>&1 | tail -1; }
same cartpole_layered --config config/cartpole_ppo.yaml --set train.total_env_steps=3072 --set device.fused_kernels=off
run s tc45 "${tc45[@]}"
run s tc45_tf32 "${tc45[@]}" --set device.matmul=tf32
timeout 100 $B/gmi_drl_s --config $TC --set env.num_envs=500 --set train.total_env_steps=1000000 > $O/train_tc.log 2>&1; echo "train rc=$?"; tail -3 $O/train_tc.log | cut -c1-250; save
echo "done t=$(( $(date +%s) - T0 ))"
