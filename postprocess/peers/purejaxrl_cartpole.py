# PureJaxRL's PPO (purejaxrl/ppo.py, gymnax CartPole-v1) at gmi_drl's config/bench_cartpole_ppo.yaml
# sizes: 2x64 tanh actor and critic, 128 steps per rollout, 4 epochs x 4 minibatches.  One jitted
# train() of --updates updates per point, called twice (the first compiles); throughput = env steps
# of the second call / its wall time.  One JSON line per point on stdout (and in --json).
# The harness (PureJaxRL, gymnax, the distrax stand-in) is fetched code assembled outside the
# repository by ../shared/peers/pjr/assemble.sh; --harness names its folder.
#   python3 postprocess/peers/purejaxrl_cartpole.py --harness .peers/pjr --num-envs 4096 16384 65536
#   ... --matmul-precision highest     # full fp32 products (JAX's default on H100 is TF32)
#   ... --agents 8 --num-envs 4096      # jax.vmap of train() over 8 seeds (independent agents), as
#                                       # PureJaxRL's README trains many seeds at once
import argparse, contextlib, json, os, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--harness", required=True, help="folder assembled by ../shared/peers/pjr/assemble.sh")
ap.add_argument("--num-envs", type=int, nargs="+", default=[4096, 16384, 65536])
ap.add_argument("--updates", type=int, default=20)
ap.add_argument("--agents", type=int, nargs="+", default=[1],
                help="independent agents (seeds) per point, jax.vmap over train(): every num-envs with every count")
ap.add_argument("--matmul-precision", default=None, help="jax.default_matmul_precision (default: JAX's)")
ap.add_argument("--json", default="", help="write the JSON lines here too")
args = ap.parse_args()

json_path = os.path.abspath(args.json) if args.json else ""
sys.path.insert(0, os.path.abspath(args.harness))
os.chdir(args.harness)
import jax, jax.numpy as jnp  # noqa: E402
import ppo  # noqa: E402  (PureJaxRL's purejaxrl/ppo.py)

prec = args.matmul_precision
ctx = jax.default_matmul_precision(prec) if prec else contextlib.nullcontext()
dev = jax.devices()[0]
head = dict(peer="PureJaxRL", jax=jax.__version__, device=str(getattr(dev, "device_kind", dev)),
            matmul_precision=prec or "default", env="CartPole-v1", hidden="64x64", num_steps=128,
            update_epochs=4, num_minibatches=4)
print(json.dumps(head), flush=True)
out = open(json_path, "w") if json_path else None
with ctx:
    for n, agents in [(n, k) for k in args.agents for n in args.num_envs]:
        cfg = {"LR": 2.5e-4, "NUM_ENVS": n, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": n * 128 * args.updates,
               "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2,
               "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh",
               "ENV_NAME": "CartPole-v1", "ANNEAL_LR": True, "DEBUG": False}
        train = ppo.make_train(cfg)
        f = jax.jit(jax.vmap(train)) if agents > 1 else jax.jit(train)
        key = jax.random.split(jax.random.PRNGKey(0), agents) if agents > 1 else jax.random.PRNGKey(0)
        t0 = time.time(); r = f(key); jax.block_until_ready(r); t1 = time.time()
        r = f(key); jax.block_until_ready(r); t2 = time.time()
        steps = n * 128 * args.updates * agents
        row = dict(head, num_envs=n, agents=agents, env_steps=steps, first_s=round(t1 - t0, 3), run_s=round(t2 - t1, 4),
                   steps_per_s=steps / (t2 - t1),
                   last_update_mean_return=float(jnp.mean(r["metrics"]["returned_episode_returns"][..., -1, :, :]
                                                          if agents > 1 else r["metrics"]["returned_episode_returns"][-1])))
        print(json.dumps(row), flush=True)
        if out:
            out.write(json.dumps(row) + "\n"); out.flush()
        del r, f
