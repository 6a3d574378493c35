#!/usr/bin/env bash
# Call 7: PPO's update epochs as CUDA graphs (device.graphs): GPU tests (bitwise graph vs direct),
# Humanoid-sized and CartPole PPO with graphs on and off, PureJaxRL beside. Re-packed every step.
set -u
mkdir -p /tmp/g && tar xJf .gpu/graph.tar.xz -C /tmp/g; source .gpu/env.sh /tmp/g
export XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/g/bin; O=/tmp/t7; mkdir -p $O
save() { tar czf $OUT/t7.tar.gz -C /tmp t7; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
run() { local name=$1 cfg=$2 envs=$3; shift 3; timeout 150 $B/gmi_drl bench --config config/$cfg --num-envs $envs --warmup 2 --iterations 4 --phase-iterations 0 --json $O/$name.json "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(python3 -c "import json;d=json.load(open('$O/$name.json'));print(' '.join('%d:%.3fM(%.1f/%.1fms)'%(r['num_envs'],r['env_steps_per_s']/1e6,r['rollout_ms'],r['update_ms']) for r in d['results']))" 2>&1)"; save; }
timeout 150 $B/test_ppo --gtest_brief=1 > $O/test_ppo.log 2>&1; echo "test_ppo rc=$? $(grep -E 'PASSED|FAILED' $O/test_ppo.log | head -4 | tr '\n' ' ')"; save
for g in on off; do
  run h256_tf32_g$g bench_synthetic_humanoid_ppo.yaml 4096,65536 --set device.matmul=tf32 --set device.graphs=$g
done
(cd .peers/pjr && timeout 200 python3 bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01 --hidden 256,256) > $O/pjr_humanoid_default_256x256.jsonl 2> $O/pjr_h.err; echo "pjr humanoid rc=$?"; grep -E '^\{' $O/pjr_humanoid_default_256x256.jsonl | cut -c1-200; save
# the three-pass bias sums (uncommitted build: gmi_drl_bias, test_mlp_bias) beside main's
timeout 120 $B/test_mlp_bias --gtest_brief=1 > $O/test_mlp_bias.log 2>&1; echo "test_mlp_bias rc=$? $(grep -E 'PASSED|FAILED' $O/test_mlp_bias.log | head -4 | tr '\n' ' ')"; save
B0=$B; B=/tmp/g/bin_bias; mkdir -p $B; cp $B0/gmi_drl_bias $B/gmi_drl
run h256_tf32_goff_bias bench_synthetic_humanoid_ppo.yaml 4096,65536 --set device.matmul=tf32 --set device.graphs=off
run h256_tf32_gon_bias bench_synthetic_humanoid_ppo.yaml 4096,65536 --set device.matmul=tf32 --set device.graphs=on
timeout 100 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --set device.matmul=tf32 --json $O/kt_bias.json > $O/kt_bias.log 2>&1; echo "kt_bias rc=$?"; grep -E 'bias_grad|gemm NT 256' $O/kt_bias.log; save
B=$B0
for g in on off; do
  run cp_tf32_g$g bench_cartpole_ppo.yaml 4096,16384,65536 --set device.matmul=tf32 --set device.graphs=$g
done
for t in test_mlp test_shuffle test_adam test_multi_agent test_offpolicy; do
  timeout 150 $B/$t --gtest_brief=1 > $O/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $O/$t.log | head -4 | tr '\n' ' ')"; done; save
timeout 120 mpiexec -n 2 $B/test_data_parallel --gtest_brief=1 > $O/test_data_parallel.log 2>&1; echo "test_data_parallel np2 rc=$? $(grep -E 'PASSED|FAILED' $O/test_data_parallel.log | head -4 | tr '\n' ' ')"; save
timeout 100 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --set device.matmul=tf32 --json $O/kt.json > $O/kt.log 2>&1; echo "kt rc=$?"
python3 -c "
import json;d=json.load(open('$O/kt.json'));r=d['results'][-1]
for k in r['kernel_times'][:12]: print('%-60s %6.1f %8.2f'%(k['name'][:60],k['calls_per_iteration'],k['ms_per_iteration']))"; save
for g in on off; do
  run h256_fp32_g$g bench_synthetic_humanoid_ppo.yaml 4096,65536 --set device.matmul=fp32 --set device.graphs=$g
done
(cd .peers/pjr && timeout 200 python3 bench_pjr.py) > $O/pjr_cartpole.jsonl 2> $O/pjr_c.err; echo "pjr cartpole rc=$?"; grep -E '^\{' $O/pjr_cartpole.jsonl | cut -c1-200; save
