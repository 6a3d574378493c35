# Review fixes checked on one GPU: tune --templates dp,e-at (bench under e-at), e-at training's logs.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i37t.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
B=/tmp/b/bin; W=/tmp/we; mkdir -p $W
{
timeout 150 $B/gmi_drl tune --config config/bench_cartpole_ppo.yaml --templates dp,e-at --max-gmis-per-gpu 3 \
  --env-counts 4096,8192 --probe-iterations 3 --probe-warmup 1 --workdir $W/tune --json $W/tune.json --out $W/tuned.yaml > $W/tune.log 2>&1
echo "tune rc=$?"; tail -12 $W/tune.log | cut -c1-200; cat $W/tuned.yaml
python3 -c "
import json; e=json.load(open('$W/tune/probe-e-at-3x4096.json')); r=e['results'][0]
print('bench e-at:', e['template'], e['simulators_per_trainer'], 'batch', e['batch_size'], 'steps/s', round(r['env_steps_per_s']), 'updates/s', r['updates_per_s'], 'kernels', r['kokkos_kernels_per_iteration'], 'path', r['kernels'])"
timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 $B/gmi_drl --config config/cartpole_ppo.yaml --set mapping.template=e-at \
  --set env.num_envs=1024 --set train.total_env_steps=2000000 --run-dir $W/run > $W/run.out 2> $W/run.err
echo "e-at run rc=$? stderr lines from trainer: $(grep -c 'rank' $W/run.err)"; grep rank $W/run.err | cut -c1-160
tail -2 $W/run.out | cut -c1-200
cp $W/tune.json $OUT/
} 2>&1 | tee $OUT/log.txt
