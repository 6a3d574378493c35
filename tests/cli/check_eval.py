#!/usr/bin/env python3
"""`gmi_drl eval` on a trained policy, through the real command line:

  trained   train CartPole-v1 with config/cartpole_ppo.yaml, then evaluate its final checkpoint:
            deterministic (mode) over 100 episodes reaches >= 475; the JSON has exactly 100
            episodes whose statistics match its summary; the same seed gives the same episodes;
            the trajectory file (--out) holds every step, and the returns of the episodes it
            counted are the sums of its rewards; under mpiexec -n 2 the 100 episodes are split
            over the GMIs, merged on rank 0, and each GMI writes its own trajectory file; the
            same with an early policy whose episodes differ in length (11 episodes over 3 envs,
            6 + 5 on two GMIs), and another seed gives other episodes; the serving templates
            (mp-dp on 3 GMIs, dp-mp on 4) serve the same episodes as dp on 2, sampled or
            deterministic; eval refuses a training template and --out under a serving one

  export    `gmi_drl export --onnx` of short runs of Pendulum-v1 (continuous, observation
            normalisation on), CartPole-v1 (discrete) and, in builds with MuJoCo, Hopper-v5: the
            model passes onnx.checker, and onnxruntime's actions on the observations of
            `gmi_drl eval --deterministic --out` equal eval's (max abs diff <= 1e-5; discrete:
            equal); Hopper's trajectory holds its simulator state (qpos, qvel) at every step

  check_eval.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import json
import os
import subprocess

import h5py
import numpy as np

import harness
from harness import env_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, env=env_for(), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def counted_returns(path):
    """Rebuild from the trajectory the returns eval counted: per env, its first `target` episodes,
    in the order eval stores them (env by env)."""
    f = h5py.File(path, "r")
    reward, done = f["reward"][()], f["terminated"][()] | f["truncated"][()]
    n_eps, n_envs = len(f["episode_return"]), reward.shape[1]
    target = [n_eps // n_envs + (1 if i < n_eps % n_envs else 0) for i in range(n_envs)]
    out = []
    for i in range(n_envs):
        ret, got = 0.0, []
        for t in range(reward.shape[0]):
            ret += float(reward[t, i])
            if done[t, i]:
                got.append(ret)
                ret = 0.0
        assert len(got) >= target[i], (i, len(got), target[i])
        out += got[:target[i]]
    return np.array(out), f["episode_return"][()], f["obs"].shape


def mode_trained(a):
    w = a.workdir
    run([a.gmi, "--config", os.path.join(ROOT, "config/cartpole_ppo.yaml"), "--run-dir", "run",
         "--log-level", "warn"], w)
    ckpts = sorted(os.listdir(os.path.join(w, "run/checkpoints")))
    ckpt = os.path.join("run/checkpoints", ckpts[-1])

    ev = [a.gmi, "eval", "--checkpoint", ckpt, "--episodes", "100", "--deterministic"]
    out = run(ev + ["--json", "det.json", "--out", "traj.h5", "--num-envs", "16"], w)
    print(out.strip().splitlines()[-3])
    j = json.load(open(os.path.join(w, "det.json")))
    assert j["episodes"] == 100 and len(j["returns"]) == 100 and len(j["lengths"]) == 100, j
    assert abs(np.mean(j["returns"]) - j["return_mean"]) < 1e-3 * max(1, abs(j["return_mean"])), j
    assert abs(np.std(j["returns"]) - j["return_std"]) < 1e-3 * max(1, j["return_std"]), j
    assert j["return_mean"] >= 475, f"deterministic return {j['return_mean']} < 475"
    assert j["env_steps"] >= sum(j["lengths"]), j
    assert j["deterministic"] is True and j["envs_per_gmi"] == 16

    rebuilt, recorded, shape = counted_returns(os.path.join(w, "traj.h5"))
    assert shape[1:] == (16, 4), shape
    np.testing.assert_allclose(np.sort(rebuilt), np.sort(recorded), rtol=1e-5)
    np.testing.assert_allclose(rebuilt, recorded, rtol=1e-5)
    np.testing.assert_allclose(np.sort(recorded), np.sort(j["returns"]), rtol=1e-5)

    # Sampled actions: reproducible from the seed, different with another seed.
    run(ev[:-1] + ["--json", "s1.json", "--seed", "7"], w)
    run(ev[:-1] + ["--json", "s2.json", "--seed", "7"], w)
    s1, s2 = (json.load(open(os.path.join(w, f))) for f in ("s1.json", "s2.json"))
    assert s1["returns"] == s2["returns"], "the same seed gave other episodes"

    # Two GMIs: the episodes are split and merged; one trajectory file per GMI.
    run([a.mpiexec, "-n", "2", a.gmi] + ev[1:] + ["--json", "mpi.json", "--out", "trajm.h5", "--num-envs", "8"], w)
    m = json.load(open(os.path.join(w, "mpi.json")))
    assert m["gmis"] == 2 and m["episodes"] == 100 and len(m["returns"]) == 100, m
    assert m["return_mean"] >= 475, m
    for r in (0, 1):
        rebuilt, recorded, _ = counted_returns(os.path.join(w, f"trajm.gmi{r}.h5"))
        assert len(recorded) == 50, len(recorded)
        np.testing.assert_allclose(rebuilt, recorded, rtol=1e-5)
    # An early policy, whose episodes differ in length: the bookkeeping (each env's first episodes,
    # in its own slots; an uneven split over GMIs and envs) against the trajectory, and seeds.
    run([a.gmi, "--config", os.path.join(ROOT, "config/cartpole_ppo.yaml"), "--run-dir", "early",
         "--set", "train.total_env_steps=2048", "--log-level", "warn"], w)
    early = os.path.join("early/checkpoints", sorted(os.listdir(os.path.join(w, "early/checkpoints")))[-1])
    ev = [a.gmi, "eval", "--checkpoint", early, "--episodes", "11", "--num-envs", "3"]
    run(ev + ["--json", "e1.json", "--out", "early.h5", "--seed", "7"], w)
    run(ev + ["--json", "e2.json", "--seed", "8"], w)
    e1, e2 = (json.load(open(os.path.join(w, f))) for f in ("e1.json", "e2.json"))
    assert len(set(e1["lengths"])) > 3, f"an early policy's episodes should differ: {e1['lengths']}"
    assert e1["returns"] != e2["returns"], "another seed gave the same episodes"
    rebuilt, recorded, _ = counted_returns(os.path.join(w, "early.h5"))
    np.testing.assert_allclose(rebuilt, recorded, rtol=1e-5)
    np.testing.assert_allclose(np.sort(recorded), np.sort(e1["returns"]), rtol=1e-5)
    run([a.mpiexec, "-n", "2", a.gmi] + ev[1:] + ["--json", "e3.json", "--out", "earlym.h5", "--seed", "7"], w)
    e3 = json.load(open(os.path.join(w, "e3.json")))
    assert len(e3["returns"]) == 11, e3
    for r, count in ((0, 6), (1, 5)):
        rebuilt, recorded, _ = counted_returns(os.path.join(w, f"earlym.gmi{r}.h5"))
        assert len(recorded) == count, (r, len(recorded))
        np.testing.assert_allclose(rebuilt, recorded, rtol=1e-5)
    # The serving templates: 2 simulator GMIs served by one agent GMI (mp-dp) or by one agent each
    # (dp-mp) serve the episodes 2 GMIs serve under dp, sampled actions included.
    for n, template in ((3, "mp-dp"), (4, "dp-mp")):
        run([a.mpiexec, "-n", str(n), a.gmi] + ev[1:] + ["--json", f"{template}.json", "--seed", "7",
                                                       "--set", f"mapping.template={template}"], w)
        t = json.load(open(os.path.join(w, f"{template}.json")))
        assert (t["mapping_template"], t["simulator_gmis"], t["gmis"]) == (template, 2, n), t
        assert t["returns"] == e3["returns"] and t["lengths"] == e3["lengths"], (template, t["returns"], e3["returns"])
    # Deterministic, the early policy (episodes of many lengths): 4 simulators served by 2 agents, each
    # agent's simulators not consecutive (0 and 2, 1 and 3), against dp on 4 GMIs.
    det = ev[1:] + ["--deterministic", "--seed", "3"]
    run([a.mpiexec, "-n", "4", a.gmi] + det + ["--json", "det_dp4.json"], w)
    run([a.mpiexec, "-n", "6", a.gmi] + det + ["--json", "det_mpdp6.json", "--set", "mapping.template=mp-dp",
                                              "--set", "mapping.agents_per_gpu=2", "--set", "channels.max_in_flight=1"], w)
    d4, d6 = (json.load(open(os.path.join(w, f))) for f in ("det_dp4.json", "det_mpdp6.json"))
    assert d6["simulator_gmis"] == 4 and len(set(d4["lengths"])) > 3, (d6, d4["lengths"])
    assert (d6["returns"], d6["lengths"]) == (d4["returns"], d4["lengths"]), "mp-dp (2 agents) served other episodes"
    assert abs(d6["env_steps"] - d4["env_steps"]) < 1e-9, ("steps counted differently", d6["env_steps"], d4["env_steps"])
    for args, want in ((["--set", "mapping.template=ea-t"], "mapping.template: ea-t is a training template"),
                       (["--set", "mapping.template=mp-dp", "--out", "x.h5"], "--out: trajectories are written under")):
        p = subprocess.run([a.mpiexec, "-n", "2", a.gmi] + ev[1:] + args, cwd=w, env=env_for(), capture_output=True,
                           text=True, timeout=300)
        errs = [l for l in p.stderr.splitlines() if l.startswith("gmi_drl:")]
        assert p.returncode == 2 and len(errs) == 1 and want in errs[0], (args, p.returncode, p.stderr)

    print(f"deterministic {j['return_mean']:.1f} +- {j['return_std']:.1f}; sampled (seed 7) "
          f"{s1['return_mean']:.1f}; 2 GMIs {m['return_mean']:.1f}")


def mode_export(a):
    import onnx
    import onnxruntime as ort
    w = a.workdir
    tasks = [("pendulum_ppo.yaml", ["--set", "ppo.normalize_obs=true", "--set", "train.total_env_steps=8192"]),
             ("cartpole_ppo.yaml", ["--set", "train.total_env_steps=4096"])]
    if os.environ.get("GMI_TEST_MUJOCO") == "1":
        tasks.append(("hopper_ppo.yaml", ["--set", "env.num_envs=2", "--set", "ppo.num_steps=64",
                                          "--set", "ppo.num_minibatches=2", "--set", "train.total_env_steps=256"]))
    for cfg, sets in tasks:
        name = cfg.split("_")[0]
        run([a.gmi, "--config", os.path.join(ROOT, "config", cfg), "--run-dir", name, "--log-level", "warn"] + sets, w)
        ckpt = os.path.join(name, "checkpoints", sorted(os.listdir(os.path.join(w, name, "checkpoints")))[-1])
        run([a.gmi, "export", "--checkpoint", ckpt, "--onnx", name + ".onnx"], w)
        model = onnx.load(os.path.join(w, name + ".onnx"))
        onnx.checker.check_model(model)
        run([a.gmi, "eval", "--checkpoint", ckpt, "--episodes", "2", "--num-envs", "2", "--deterministic",
             "--out", name + ".h5"], w)
        f = h5py.File(os.path.join(w, name + ".h5"), "r")
        obs = f["obs"][()].reshape(-1, f["obs"].shape[-1]).astype(np.float32)
        sess = ort.InferenceSession(os.path.join(w, name + ".onnx"))
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"obs": obs})))
        want = f["action"][()].reshape(obs.shape[0], -1)
        if "logits" in got:
            assert np.array_equal(got["action"].reshape(want.shape), want.astype(np.int64)), name
            diff = 0.0
        else:
            diff = float(np.abs(got["action"] - want).max())
            assert diff <= 1e-5, f"{name}: max abs diff {diff}"
            env_diff = float(np.abs(got["env_action"] - f["env_action"][()].reshape(want.shape)).max())
            assert env_diff <= 1e-5, f"{name}: env_action max abs diff {env_diff}"
        if name == "hopper":
            assert f["qpos"].shape[:2] == f["obs"].shape[:2] and f["qpos"].shape[2] == 6, f["qpos"].shape
            assert f["qvel"].shape[2] == 6, f["qvel"].shape
        print(f"{name}: {obs.shape[0]} observations, max abs diff {diff:.3g}")


if __name__ == "__main__":
    harness.main("check_eval", ["trained", "export"], globals())
