# Brax's own PPO trainer (brax 0.14.2) with its published settings for `ant` or `humanoid`, on the
# `generalized` or `mjx` backend; one JSON line per evaluation (env steps, wall seconds since the
# start, compile included, Brax's deterministic eval return) and a summary line.
#   python3 brax_ppo.py BACKEND ENV STEPS [NUM_EVALS]
# Copied from ../shared/peers/brax/brax_ppo.py with the env's settings from Brax's training
# notebook and the number of evaluations as an argument.
import json, sys, time
import jax, jax.numpy as jnp
try:
    jax.device_put_replicated
except AttributeError:
    def _dpr(x, devices):  # removed from recent JAX; brax 0.14.2 still calls it (one device here)
        return jax.tree.map(lambda a: jax.device_put(jnp.stack([jnp.asarray(a)] * len(devices)), devices[0]), x)
    jax.device_put_replicated = _dpr
from brax import envs
from brax.training.agents.ppo import train as ppo

backend, envname, steps = sys.argv[1], sys.argv[2], int(float(sys.argv[3]))
num_evals = int(sys.argv[4]) if len(sys.argv) > 4 else 8
SETTINGS = {  # Brax's training notebook (brax/training/learner.ipynb at 0.14.2)
    "ant": dict(reward_scaling=10, episode_length=1000, normalize_observations=True, action_repeat=1,
                unroll_length=5, num_minibatches=32, num_updates_per_batch=4, discounting=0.97,
                learning_rate=3e-4, entropy_cost=1e-2, num_envs=4096, batch_size=2048),
    "humanoid": dict(reward_scaling=0.1, episode_length=1000, normalize_observations=True, action_repeat=1,
                     unroll_length=10, num_minibatches=32, num_updates_per_batch=8, discounting=0.97,
                     learning_rate=3e-4, entropy_cost=1e-3, num_envs=2048, batch_size=1024),
}
env = envs.get_environment(envname, backend=backend)
t0 = time.time()
log = []


def progress(n, m):
    log.append(dict(steps=int(n), t=round(time.time() - t0, 1), eval_return=float(m.get("eval/episode_reward", float("nan"))),
                    sps=float(m.get("training/sps", float("nan")))))
    print(json.dumps(dict(progress=log[-1])), flush=True)


ppo.train(environment=env, progress_fn=progress, num_timesteps=steps, num_evals=num_evals, seed=1, **SETTINGS[envname])
print(json.dumps(dict(peer="brax_ppo", version="0.14.2", env=envname, backend=backend, steps=steps, settings=SETTINGS[envname],
                      wall_s=round(time.time() - t0, 1), log=log, device=str(jax.devices()[0]))), flush=True)
