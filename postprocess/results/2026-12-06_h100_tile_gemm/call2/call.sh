#!/usr/bin/env bash
# Call 2: GPU tests; SyntheticHumanoid PPO with device.tile_gemm on/off beside PureJaxRL (same call).
set -u
mkdir -p /tmp/b && tar xJf .gpu/c1.tar.xz -C /tmp/b; source .gpu/env.sh /tmp/b
export XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/b/bin; O=/tmp/t2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
for t in test_mlp test_blas test_ppo test_offpolicy test_multi_agent; do
  timeout 300 $B/$t --gtest_brief=1 > $O/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $O/$t.log | head -3 | tr '\n' ' ')"
done
run() { local name=$1; shift; timeout 200 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --warmup 2 --iterations 4 --phase-iterations 0 --json $O/$name.json "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(python3 -c "import json;d=json.load(open('$O/$name.json'));print(' '.join('%d:%.3fM(%.1f/%.1fms)'%(r['num_envs'],r['env_steps_per_s']/1e6,r['rollout_ms'],r['update_ms']) for r in d['results']))" 2>&1)"; }
for h in 256,256 512,512,512; do
  tag=${h//,/x}; hs=(--set "policy.actor_hidden=[$h]" --set "policy.critic_hidden=[$h]")
  run gmi_humanoid_${tag}_tf32_auto "${hs[@]}" --set device.matmul=tf32
  run gmi_humanoid_${tag}_tf32_tileoff "${hs[@]}" --set device.matmul=tf32 --set device.tile_gemm=false
  run gmi_humanoid_${tag}_fp32_auto "${hs[@]}" --set device.matmul=fp32
  run gmi_humanoid_${tag}_fp32_tileoff "${hs[@]}" --set device.matmul=fp32 --set device.tile_gemm=false
  run gmi_humanoid_${tag}_tf32_auto_rep2 "${hs[@]}" --set device.matmul=tf32
  run gmi_humanoid_${tag}_tf32_tileoff_rep2 "${hs[@]}" --set device.matmul=tf32 --set device.tile_gemm=false
done
export GMI_MUJOCO_ASSETS=/tmp/b/assets
for t in true false; do for v in "half_cheetah_sac|256" "bench_humanoid_sac|256" "half_cheetah_sac|1024"; do
  IFS='|' read -r cfg bs <<< "$v"; n=upd_${cfg}_${bs}_tile$t
  timeout 120 $B/gmi_drl bench --config config/$cfg.yaml --mode update --num-envs 1 --iterations 3000 --warmup 300 \
    --set sac.batch_size=$bs --set device.tile_gemm=$t --json $O/$n.json > $O/$n.log 2>&1
  echo "$n rc=$? $(python3 -c "import json; r=json.load(open('$O/$n.json'))['results'][0]; print(r['ms_per_update'], r['kokkos_kernels_per_iteration'], r['blas_calls_per_iteration'])" 2>&1 | tail -1)"
done; done
for p in highest default; do
  extra=(); [ "$p" = default ] || extra=(--matmul-precision "$p")
  (cd .peers/pjr && timeout 400 python3 bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01 "${extra[@]}") > $O/pjr_humanoid_$p.jsonl 2> $O/pjr_humanoid_$p.err
  echo "pjr $p rc=$?"; grep -E '^\{' $O/pjr_humanoid_$p.jsonl | cut -c1-220
done
timeout 200 $B/gmi_drl bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --set device.matmul=tf32 --json $O/kt_h256_tf32_tile.json > $O/kt.log 2>&1; echo "kt rc=$?"
python3 -c "
import json;d=json.load(open('$O/kt_h256_tf32_tile.json'));r=d['results'][-1]
for k in r['kernel_times'][:22]: print('%-55s %6.1f %8.2f'%(k['name'][:55],k['calls_per_iteration'],k['ms_per_iteration']))"
tar czf $OUT/t2.tar.gz -C /tmp t2
