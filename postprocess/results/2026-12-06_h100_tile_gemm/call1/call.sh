#!/usr/bin/env bash
# Call 1: tile GEMM correctness and a first A/B on SyntheticHumanoid (layered kernels).
set -u
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b; source .gpu/env.sh /tmp/b
B=/tmp/b/bin; O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
for t in test_mlp test_blas test_ppo test_offpolicy test_multi_agent; do
  timeout 300 $B/$t --gtest_brief=1 > $O/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $O/$t.log | head -3 | tr '\n' ' ')"
done
run() { local name=$1; shift; timeout 200 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --warmup 2 --iterations 4 --phase-iterations 0 --set device.fused_kernels=off --json $O/$name.json "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(python3 -c "import json;d=json.load(open('$O/$name.json'));print(' '.join('%d:%.2fM(%.1f/%.1fms)'%(r['num_envs'],r['env_steps_per_s']/1e6,r['rollout_ms'],r['update_ms']) for r in d['results']))" 2>&1)"; }
for rep in 1 2; do
for m in tf32 fp32; do
  for t in true false; do
    run h256_${m}_tile${t}_$rep --num-envs 4096,65536 --set device.matmul=$m --set device.tile_gemm=$t
  done
done
done
for t in true false; do
  run h512_tf32_tile${t} --num-envs 4096,65536 --set device.matmul=tf32 --set device.tile_gemm=$t --set "policy.actor_hidden=[512,512,512]" --set "policy.critic_hidden=[512,512,512]"
done
timeout 200 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --set device.fused_kernels=off --set device.matmul=tf32 --json $O/kt_h256_tf32_tile.json > $O/kt.log 2>&1; echo "kt rc=$?"
python3 -c "
import json;d=json.load(open('$O/kt_h256_tf32_tile.json'));r=d['results'][-1]
for k in r['kernel_times'][:25]: print('%-50s %6.1f %8.2f'%(k['name'][:50],k['calls_per_iteration'],k['ms_per_iteration']))"
for tl in 1 2; do
  GMI_TILE_GEMM_TILES=$tl run h256_tf32_tiles${tl} --num-envs 4096,65536 --set device.matmul=tf32
  GMI_TILE_GEMM_TILES=$tl run h256_fp32_tiles${tl} --num-envs 4096,65536 --set device.matmul=fp32
done
