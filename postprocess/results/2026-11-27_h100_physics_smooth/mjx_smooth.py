# MJX (MuJoCo's pipeline in JAX) on the same Gymnasium models with the constraint solver off, as
# bench_physics runs them: jit(vmap(5 x mjx.step)) with fixed random controls; one JSON line each.
import json, os, sys, time
import jax, jax.numpy as jnp, mujoco
from mujoco import mjx
assets = os.environ["GMI_MUJOCO_ASSETS"]
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
for xml in sys.argv[2].split(","):
    m = mujoco.MjModel.from_xml_path(f"{assets}/{xml}")
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    m.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON)  # MJX has no PGS; no constraint is solved here anyway
    for n in [4096, 65536]:
        try:
            mx = mjx.put_model(m)
            d0 = mjx.make_data(mx)
            batch = jax.vmap(lambda _: d0)(jnp.arange(n))
            def env_step(d, ctrl):
                d = d.replace(ctrl=ctrl)
                d, _ = jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=5)
                return d
            step = jax.jit(jax.vmap(env_step))
            ctrl = 0.4 * jax.random.uniform(jax.random.PRNGKey(0), (n, m.nu), minval=-1, maxval=1)
            t0 = time.time(); batch = step(batch, ctrl); jax.block_until_ready(batch.qpos); tc = time.time() - t0
            k = 0; t0 = time.time()
            while time.time() - t0 < seconds:
                for _ in range(10): batch = step(batch, ctrl)
                jax.block_until_ready(batch.qpos); k += 10
            dt = time.time() - t0
            print(json.dumps(dict(peer="mjx", version=mjx.__version__ if hasattr(mjx, "__version__") else "3.17.0", model=xml, envs=n,
                                  frame_skip=5, pipeline="smooth (constraints off)", env_steps_per_s=n * k / dt, compile_s=round(tc, 1),
                                  device=str(jax.devices()[0]))), flush=True)
        except Exception as e:
            print(json.dumps(dict(peer="mjx", model=xml, envs=n, error=repr(e)[:400])), flush=True)
