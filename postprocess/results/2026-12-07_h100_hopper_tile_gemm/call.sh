#!/usr/bin/env bash
# Call 11 (t10 + the Hopper tile kernels: gmi_drl_sm90, test_mlp_sm90, bench_sm90): why gmi_drl bench segfaults at bcc6697 (gmi_drl_dbg prints DBG lines
# from a SIGSEGV handler; gdb where the image has it), then wip/bias-three-pass (gmi_drl_wip)
# against main (gmi_drl_main = 7689945's code) on SyntheticHumanoid beside PureJaxRL.
# As run (call 11, 2026-12-07 04:21 UTC, one H100 80GB HBM3, driver 580.159.04, 170 s).  The
# binaries came in .gpu/cmb2.tar.xz (git-ignored; stripped, with the libraries the image lacks):
#   gmi_drl_main  7689945's code (= main 97e540f's src/ and kernels/)
#   gmi_drl_sm90  wip/sm90-tile-gemm at acf251e (main + the Hopper tile kernels); test_mlp_sm90, test_ppo_sm90
#   gmi_drl_wip   wip/bias-three-pass at 2faa98b (three-pass bias sums, head_grads); test_mlp_wip, test_ppo_wip
#   gmi_drl_dbg   bcc6697 (PPO update graphs) + the wip above + a SIGSEGV handler printing DBG lines
# .gpu/bench_sm90 is bench_sm90.cu here (nvcc -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -O3
# -DNDEBUG -I<cutlass>/include bench_sm90.cu -o bench_sm90 -lcublas).
set -u
mkdir -p /tmp/g && tar xJf .gpu/cmb2.tar.xz -C /tmp/g
source .gpu/env.sh /tmp/g
export XLA_PYTHON_CLIENT_PREALLOCATE=false
B=/tmp/g/bin; O=/tmp/t11; mkdir -p $O
save() { tar czf $OUT/t11.tar.gz -C /tmp t11; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
which gdb
timeout 60 .gpu/bench_sm90 > $O/bench_sm90.jsonl 2> $O/bench_sm90.err; echo "bench_sm90 rc=$?"; cat $O/bench_sm90.jsonl | cut -c1-900; tail -3 $O/bench_sm90.err; save
b() { local bin=$1 name=$2 cfg=$3 envs=$4; shift 4; timeout 60 $B/$bin bench --config config/$cfg --num-envs $envs --warmup 1 --iterations 2 --phase-iterations 0 --json $O/$name.json "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(grep -E 'DBG|^\[.*\] +[0-9]+ +[0-9]+ ' $O/$name.log | head -14 | cut -c1-200 | tr '\n' '|')"; save; }
OMPI_MCA_opal_signal="" b gmi_drl_dbg dbg_h bench_synthetic_humanoid_ppo.yaml 4096 --set device.graphs=off
OMPI_MCA_opal_signal="" b gmi_drl_dbg dbg_cp bench_cartpole_ppo.yaml 4096 --set device.graphs=off
if which gdb > /dev/null; then
  timeout 90 gdb -batch -ex 'set pagination off' -ex run -ex bt -ex 'info registers rip rsp' -ex 'x/12gx $sp' --args $B/gmi_drl_bcc bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096 --warmup 1 --iterations 2 --phase-iterations 0 --set device.graphs=off > $O/gdb.log 2>&1
  echo "gdb rc=$?"; grep -A25 'SIGSEGV' $O/gdb.log | head -40; save
fi
tests() { for t in "$@"; do timeout 150 $B/$t --gtest_brief=1 > $O/$t.log 2>&1
  echo "$t rc=$? $(grep -E 'PASSED|FAILED' $O/$t.log | head -6 | tr '\n' ' ')"; done; save; }
run() { local v=$1 name=$2; shift 2; timeout 150 $B/gmi_drl_$v bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 4096,65536 --warmup 2 --iterations 4 --phase-iterations 0 --json $O/${v}_$name.json "$@" > $O/${v}_$name.log 2>&1; echo "$v $name rc=$? $(python3 -c "import json;d=json.load(open('$O/${v}_$name.json'));print(' '.join('%d:%.3fM(%.1f/%.1fms)'%(r['num_envs'],r['env_steps_per_s']/1e6,r['rollout_ms'],r['update_ms']) for r in d['results']))" 2>&1)"; save; }
kt() { local v=$1; shift; timeout 100 $B/gmi_drl_$v bench --config config/bench_synthetic_humanoid_ppo.yaml --num-envs 65536 --warmup 1 --iterations 2 --kernel-times 2 --set device.graphs=off --json $O/${v}_kt.json "$@" > $O/${v}_kt.log 2>&1; echo "$v kt rc=$?"
python3 -c "
import json;d=json.load(open('$O/${v}_kt.json'));r=d['results'][-1]
for k in r['kernel_times'][:14]: print('%-60s %6.1f %8.2f'%(k['name'][:60],k['calls_per_iteration'],k['ms_per_iteration']))"; save; }
pjr() { local p=$1 h=$2 extra=(); [ "$p" = default ] || extra=(--matmul-precision "$p")
  (cd .peers/pjr && timeout 200 python3 bench_pjr_synth.py --normalize-env 0 --lr 2.5e-4 --ent-coef 0.01 --hidden $h "${extra[@]}") > $O/pjr_humanoid_${p}_${h//,/x}.jsonl 2> $O/pjr_humanoid_${p}_${h//,/x}.err
  echo "pjr $p $h rc=$?"; grep -E '^\{' $O/pjr_humanoid_${p}_${h//,/x}.jsonl | cut -c1-200; save; }
tests test_mlp_sm90 test_mlp_wip
run main h256_tf32 --set device.matmul=tf32
run sm90 h256_tf32 --set device.matmul=tf32
run wip h256_tf32 --set device.matmul=tf32
pjr default 256,256
run sm90 h256_tf32_b --set device.matmul=tf32
run main h256_tf32_b --set device.matmul=tf32
run wip h256_tf32_b --set device.matmul=tf32
kt main --set device.matmul=tf32
kt sm90 --set device.matmul=tf32
kt wip --set device.matmul=tf32
hs=(--set "policy.actor_hidden=[512,512,512]" --set "policy.critic_hidden=[512,512,512]")
run main h512_tf32 "${hs[@]}" --set device.matmul=tf32
run sm90 h512_tf32 "${hs[@]}" --set device.matmul=tf32
run wip h512_tf32 "${hs[@]}" --set device.matmul=tf32
pjr default 512,512,512
run main h256_fp32 --set device.matmul=fp32
run wip h256_fp32 --set device.matmul=fp32
pjr highest 256,256
tests test_ppo_wip test_ppo_sm90
