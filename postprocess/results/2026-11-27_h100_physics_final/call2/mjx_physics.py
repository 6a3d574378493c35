# MJX (MuJoCo's pipeline in JAX) on the Gymnasium models bench_physics steps, with the same options:
# jit(vmap(5 x mjx.step)) from the initial pose with fixed random controls; one JSON line each.
#   python3 mjx_physics.py STEPS MODEL:MODE,... [N,...]   (MODE full: the model as it is; smooth: constraint
#   solver off; N: numbers of envs, default 4096,65536)
# times exactly STEPS env steps after the first (compiling) one, as bench_physics --steps STEPS does.
import json, os, sys, time
import jax, jax.numpy as jnp, mujoco
from mujoco import mjx
assets = os.environ["GMI_MUJOCO_ASSETS"]
steps = int(sys.argv[1])
for case in sys.argv[2].split(","):
    xml, mode = case.split(":")
    m = mujoco.MjModel.from_xml_path(f"{assets}/{xml}")
    if mode == "smooth":
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    if m.opt.solver == int(mujoco.mjtSolver.mjSOL_PGS):
        # MJX has no PGS (Humanoid's solver): Newton, which like the device pipeline solves the
        # constraint problem to its minimiser (and with the constraint solver off nothing is solved)
        m.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON)
    for n in [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "4096,65536").split(",")]:
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
            t0 = time.time()
            for _ in range(steps): batch = step(batch, ctrl)
            jax.block_until_ready(batch.qpos); k = steps
            dt = time.time() - t0
            print(json.dumps(dict(peer="mjx", version="3.17.0", model=xml, envs=n, frame_skip=5,
                                  pipeline="full (contacts, limits)" if mode == "full" else "smooth (constraints off)",
                                  env_steps_per_s=n * k / dt, compile_s=round(tc, 1), device=str(jax.devices()[0]))), flush=True)
        except Exception as e:
            print(json.dumps(dict(peer="mjx", model=xml, mode=mode, envs=n, error=repr(e)[:400])), flush=True)
