#!/usr/bin/env bash
# Call 4: the review's fixes (sm_80 guard, batch buckets, timing alone on the GPU, test settings
# restored): GPU tests and the Humanoid-sized bench.
set -u
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b; source .gpu/env.sh /tmp/b
B=/tmp/b/bin; O=/tmp/t4; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
for t in test_mlp test_blas test_ppo test_offpolicy test_multi_agent; do
  timeout 300 $B/$t --gtest_brief=1 > $O/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $O/$t.log | head -3 | tr '\n' ' ')"
done
for m in tf32 fp32; do
timeout 100 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --warmup 2 --iterations 4 --set device.matmul=$m --json $O/h256_$m.json > $O/h256_$m.log 2>&1
echo "h256 $m $(python3 -c "import json;d=json.load(open('$O/h256_$m.json'));print(' '.join('%d:%.3fM'%(r['num_envs'],r['env_steps_per_s']/1e6) for r in d['results']))")"
done
timeout 120 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --warmup 2 --iterations 3 --kernel-times 2 --set device.matmul=tf32 --json $O/kt_tf32.json > $O/kt_tf32.log 2>&1; echo "kt rc=$?"
grep -A30 -i "kernel" $O/kt_tf32.log | tail -32
tar czf $OUT/t4.tar.gz -C /tmp t4
