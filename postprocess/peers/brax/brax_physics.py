# Brax's `generalized` pipeline (brax 0.14.2) and MJX on the models bench_physics steps, loaded from
# the same XML: jit(vmap(5 x step)) from the initial pose with fixed random controls, STEPS env
# steps timed after two untimed ones, as `bench_physics --steps STEPS` does; one JSON line per
# point.
#   python3 brax_physics.py STEPS PIPELINE,... MODEL,... ENVS,...   (PIPELINE generalized or mjx)
# Models are looked up in $GMI_MUJOCO_ASSETS.  Brax's pipeline takes only Euler and has no PGS:
# models that say otherwise run with Euler and Newton there (compare with bench_physics MODE euler).
# Brax's loader fuses bodies without joints into their parents (mjcf.load_mjmodel), as its envs do.
import json, os, sys, time
import jax, jax.numpy as jnp, mujoco

assets = os.environ["GMI_MUJOCO_ASSETS"]
steps = int(sys.argv[1])


def generalized(path):
    from brax.io import mjcf
    from brax.generalized import pipeline
    m = mjcf.load_mjmodel(path)  # Brax fuses bodies without joints into their parents
    m.opt.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
    if m.opt.solver == int(mujoco.mjtSolver.mjSOL_PGS):
        m.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON)
    s = mjcf.load_model(m)
    s0 = pipeline.init(s, s.init_q, jnp.zeros(s.qd_size()))
    return m, s0, lambda st, ctrl: pipeline.step(s, st, ctrl), lambda st: st.q, "euler"


def mjx_pipeline(path):
    from mujoco import mjx
    m = mujoco.MjModel.from_xml_path(path)
    if m.opt.solver == int(mujoco.mjtSolver.mjSOL_PGS):
        m.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON)
    mx = mjx.put_model(m)
    integ = ["euler", "rk4", "implicit", "implicitfast"][m.opt.integrator]
    return m, mjx.make_data(mx), lambda d, ctrl: mjx.step(mx, d.replace(ctrl=ctrl)), lambda d: d.qpos, integ


for pipe in sys.argv[2].split(","):
    for xml in sys.argv[3].split(","):
        for n in [int(x) for x in sys.argv[4].split(",")]:
            try:
                path = f"{assets}/{xml}"
                m, s0, one, pos, integ = (generalized if pipe == "generalized" else mjx_pipeline)(path)
                batch = jax.vmap(lambda _: s0)(jnp.arange(n))

                def env_step(s, ctrl):
                    s, _ = jax.lax.scan(lambda s, _: (one(s, ctrl), None), s, None, length=5)
                    return s

                step = jax.jit(jax.vmap(env_step))
                ctrl = 0.4 * jax.random.uniform(jax.random.PRNGKey(0), (n, m.nu), minval=-1, maxval=1)
                t0 = time.time(); batch = step(batch, ctrl); jax.block_until_ready(pos(batch)); tc = time.time() - t0
                # a second untimed call (warm-up).  On 2026-12-06 (one H100, one untimed call) the
                # generalized pipeline timed 17 k env-steps/s on brax_ant.xml at 4096 envs, 40x below
                # Brax's own ant env in jit(vmap(env.step)) (669 k on 2026-11-25); no retrace shows on
                # the CPU, the cause is not found, and those figures are not used
                batch = step(batch, ctrl); jax.block_until_ready(pos(batch))
                t0 = time.time()
                for _ in range(steps):
                    batch = step(batch, ctrl)
                jax.block_until_ready(pos(batch))
                dt = time.time() - t0
                print(json.dumps(dict(peer="brax-" + pipe if pipe == "generalized" else "mjx", model=xml, envs=n,
                                      frame_skip=5, integrator=integ, env_steps_per_s=n * steps / dt,
                                      compile_s=round(tc, 1), device=str(jax.devices()[0]))), flush=True)
            except Exception as e:
                print(json.dumps(dict(peer=pipe, model=xml, envs=n, error=repr(e)[:400])), flush=True)
