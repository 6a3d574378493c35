#!/usr/bin/env python3
"""Multi-GMI runs through the real command line under mpiexec (no GPU needed):

  train   4 GMIs on 2 emulated GPUs train one policy: exit 0, the layout table, the reduction
          strategy, metrics counting the steps of all GMIs
  mps     gmi.backend mps with a stand-in nvidia-cuda-mps-control (tests/cli/fake-mps): the
          node's first rank starts one daemon in a job-private directory and stops it at exit,
          also when that rank is killed with SIGKILL; every GMI gets its SM share
  reuse   a daemon already answering in gmi.mps_dir is used, neither started nor stopped
  fail    a daemon that cannot start: one error line, status 2; an error after the daemon
          started: the daemon is still stopped; a daemon that never answers: the same within the
          start's 40 s bound
  errors  layouts the config cannot run: one error line naming the key
  bench   bench-reduce and bench on 4 and 2 GMIs write JSON with every strategy and the layout;
          bench-channels on 3 GMIs writes every plan's row, routes by the roles under ea-t (role
          table printed), and names a package a plan leaves out;
          bench --mode serve times rollouts only; the JSON has each GMI's memory and share; a
          host-simulated env (Hopper, MuJoCo builds) on a rank bound to one core warns that its
          environment threads share that core
  learn   2 GMIs x 4 envs (the single-GMI batch of config/cartpole_ppo.yaml) learn CartPole:
          an iteration's mean return >= 475 within 500k steps, as one GMI does

  check_gmis.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = ("env:\n  name: CartPole-v1\n  num_envs: 4\nppo:\n  num_steps: 16\n  num_minibatches: 2\n"
       "train:\n  total_env_steps: 1024\n  log_interval: 1\n")


def fail(msg, p=None):
    print("check_gmis: " + msg)
    if p is not None:
        print("--- stdout\n" + p.stdout + "\n--- stderr\n" + p.stderr)
    sys.exit(1)


def run(a, np, args, env=None, status=0):
    e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    e.update(env or {})
    p = subprocess.run([a.mpiexec, "-n", str(np), "--oversubscribe", a.gmi] + args,
                       capture_output=True, text=True, timeout=240, env=e)
    if status is not None and p.returncode != status:
        fail(f"expected exit status {status}, got {p.returncode}: {' '.join(args)}", p)
    return p


def mode_train(a, cfg):
    run_dir = os.path.join(a.workdir, "run")
    p = run(a, 4, ["--config", cfg, "--run-dir", run_dir, "--set", "gmi.gpus_per_node=2",
                   "--set", "reduce.strategy=har"])
    out = p.stdout
    for pat in [r"4 GMI\(s\) on 2 GPU\(s\) of 1 node\(s\), backend none",
                r"\n\s+3\s+0\s+1\s+1\s", r"gradient reduction: har \(ipc, rings\) over 4 GMI\(s\)",
                r"4 GMI\(s\) x 64 env steps = 256 per iteration", r"4 envs x 16 steps = 64 samples/iteration per GMI",
                r"done: 1024 env steps"]:
        if not re.search(pat, out):
            fail(f"stdout lacks /{pat}/", p)
    if p.stderr.strip():
        fail("stderr not empty", p)
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    if [int(float(r["env_steps"])) for r in rows] != [256, 512, 768, 1024]:
        fail("metrics env_steps do not count all GMIs: " + str([r["env_steps"] for r in rows]))


def fake_env(a, extra=None):
    log = os.path.join(a.workdir, "mps.log")
    env = {"PATH": os.path.join(HERE, "fake-mps") + os.pathsep + os.environ["PATH"],
           "GMI_FAKE_MPS_LOG": log, "TMPDIR": a.workdir}
    env.pop("CUDA_MPS_PIPE_DIRECTORY", None)
    env.update(extra or {})
    return env, log


def lines(path):
    return open(path).read().split("\n")[:-1] if os.path.exists(path) else []


def start_and_quit(log):
    """The stand-in daemon's log once it holds a start and a quit (the quit is sent by a detached
    watcher after the owner exits: allow it up to 10 s)."""
    for _ in range(100):
        if len(lines(log)) >= 2:
            break
        time.sleep(0.1)
    return lines(log)


def mode_mps(a, cfg):
    env, log = fake_env(a)
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "run"),
                   "--set", "gmi.backend=mps"], env)
    # The quit runs detached, completing once the GMIs have exited: allow it a moment.
    for _ in range(100):
        if len(lines(log)) >= 2 and not os.path.exists(lines(log)[0].split(" ", 1)[1]):
            break
        time.sleep(0.1)
    got = lines(log)
    if len(got) != 2 or not got[0].startswith("start ") or not got[1].startswith("quit "):
        fail(f"expected one start and one quit of the daemon, got {got}", p)
    pipe = got[0].split(" ", 1)[1]
    if not pipe.startswith(os.path.join(a.workdir, "gmi_drl-mps-")):
        fail(f"pipe directory {pipe} is not job-private under $TMPDIR", p)
    if os.path.exists(pipe):
        fail(f"pipe directory {pipe} left behind", p)
    if not re.search(r"backend mps", p.stdout) or not re.search(r"\n\s+1\s+0\s+0\s+1\s+50\s", p.stdout):
        fail("layout table does not show backend mps with 50 % SMs per GMI", p)
    # The daemon's owner (rank 0) killed with SIGKILL: the daemon is still told to quit.
    os.remove(log)
    env["GMI_DRL_FAULT"] = "kill@2:0"
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "killed"),
                   "--set", "gmi.backend=mps"], env, status=None)
    got = start_and_quit(log)
    if p.returncode == 0 or len(got) != 2 or not got[1].startswith("quit "):
        fail(f"owner killed: expected the daemon's start and quit, got {got}", p)
    # The user's CUDA_MPS_PIPE_DIRECTORY with no daemon in it (a site wrapper's export): the job's
    # daemon lives in a directory of the job's own, and the user's directory stays as it was.
    user = os.path.join(a.workdir, "user-mps")
    os.makedirs(user)
    os.remove(log)
    env.pop("GMI_DRL_FAULT")
    env["CUDA_MPS_PIPE_DIRECTORY"] = user
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "user"), "--set", "gmi.backend=mps"], env)
    got = start_and_quit(log)
    if len(got) != 2 or not got[0].startswith("start " + os.path.join(a.workdir, "gmi_drl-mps-")) or \
            os.listdir(user) or "no daemon answers in CUDA_MPS_PIPE_DIRECTORY=" + user not in p.stdout:
        fail(f"a daemonless CUDA_MPS_PIPE_DIRECTORY: expected a job-private daemon, got {got}", p)
    # GMIs without MPS under that variable: they drop it (CUDA would try to connect there).
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "user-none"), "--set", "gmi.backend=none"], env)
    if "the GMIs run without MPS and without that variable" not in p.stdout:
        fail("backend none under a daemonless CUDA_MPS_PIPE_DIRECTORY: expected the variable dropped", p)


def mode_reuse(a, cfg):
    pipe = os.path.join(a.workdir, "running-mps")
    os.makedirs(pipe)
    open(os.path.join(pipe, "control"), "w").close()
    env, log = fake_env(a)
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "run"),
                   "--set", "gmi.backend=mps", "--set", "gmi.mps_dir=" + pipe], env)
    if lines(log):
        fail(f"a running daemon must be used as is, got {lines(log)}", p)


def mode_fail(a, cfg):
    env, log = fake_env(a, {"GMI_FAKE_MPS_FAIL": "1"})
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "run"),
                   "--set", "gmi.backend=mps"], env, status=None)
    if p.returncode == 0:
        fail("a daemon that cannot start must fail the run", p)
    errs = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:")]
    want = r"^gmi_drl: error: gmi.backend mps: 'nvidia-cuda-mps-control -d' failed with status 1: fake failure"
    if len(errs) != 1 or not re.match(want, errs[0]):
        fail(f"expected one line /{want}/, got {errs}", p)
    # An error after the daemon started (a strategy the layout cannot run): it is still stopped.
    env, log = fake_env(a, {"GMI_FAKE_MPS_LOG": os.path.join(a.workdir, "mps2.log")})
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "run2"),
                   "--set", "gmi.backend=mps", "--set", "reduce.strategy=mrr"], env, status=None)
    got = start_and_quit(env["GMI_FAKE_MPS_LOG"])
    if p.returncode == 0 or len(got) != 2 or not got[1].startswith("quit "):
        fail(f"after an error the daemon must still be stopped once, got {got}", p)
    # A daemon that starts but never answers (a stuck daemon or server): one error line within the
    # start's bound (40 s, each try's own timeout cut to what is left, rounded up to whole seconds),
    # and the daemon stopped once the job has exited.
    env, log = fake_env(a, {"GMI_FAKE_MPS_LOG": os.path.join(a.workdir, "mps3.log"), "GMI_FAKE_MPS_HANG": "1"})
    t0 = time.time()
    p = run(a, 2, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "run3"), "--set", "gmi.backend=mps"], env,
            status=None)
    took = time.time() - t0
    errs = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:")]
    want = r"^gmi_drl: error: gmi.backend mps: the MPS daemon started in .* did not answer within 40 s \(last try: status 124"
    if p.returncode != 2 or len(errs) != 1 or not re.match(want, errs[0]) or took > 60:
        fail(f"a daemon that never answers: expected status 2 and one line /{want}/ within 60 s, got status "
             f"{p.returncode} after {took:.0f} s: {errs}", p)
    for _ in range(50):  # its watcher stops it once the job's first rank has exited
        got = start_and_quit(env["GMI_FAKE_MPS_LOG"])
        if len(got) == 2:
            break
        time.sleep(0.1)
    if len(got) != 2 or not got[1].startswith("quit "):
        fail(f"a daemon that never answers must still be stopped once, got {got}", p)
    print(f"a daemon that never answers: status 2 after {took:.0f} s, stopped")


def mode_errors(a, cfg):
    cases = [
        (4, ["--set", "gmi.per_gpu=3"], r"^gmi_drl: error: gmi.per_gpu: 3 GMIs per GPU x 1 GPUs per node needs 3 ranks on every node, but node 0 \('.*'\) has 4"),
        (2, ["--set", "reduce.strategy=mrr"], r"^gmi_drl: error: reduce.strategy: mrr needs GMIs per GPU <= GPUs"),
        (2, ["--set", "gmi.gpus_per_node=2", "--set", "reduce.strategy=hybrid", "--set", "reduce.hybrid_k=2"],
         r"^gmi_drl: error: reduce.hybrid_k: 2 exceeds the 1 GMIs per GPU"),
        (3, ["--set", "gmi.sm_share=[50, 50]"], r"^gmi_drl: error: gmi.sm_share: 2 values, but GPU 0 of node 0 has 3 GMI\(s\)"),
        (3, ["--set", "gmi.sm_share=[30]", "--set", "gmi.backend=none"], None),
        (2, ["--set", "gmi.backend=mig"], r"^gmi_drl: error: gmi.backend: mig needs a CUDA build"),
    ]
    for np, args, want in cases:
        p = run(a, np, ["--config", cfg, "--run-dir", os.path.join(a.workdir, "run%d" % np)] + args,
                status=None)
        if want is None:
            if p.returncode != 0 or "apply only with gmi.backend mps" not in p.stdout + p.stderr:
                fail(f"{args}: expected a warning and success", p)
            continue
        errs = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:")]
        if p.returncode == 0 or len(errs) != 1 or not re.match(want, errs[0]):
            fail(f"{args}: expected one line /{want}/, got {errs}", p)


def mode_bench(a, cfg):
    import json
    out = os.path.join(a.workdir, "reduce.json")
    p = run(a, 4, ["bench-reduce", "--config", cfg, "--set", "gmi.gpus_per_node=2", "--sizes", "10,1000",
                   "--runs", "3", "--warmup", "1", "--json", out])
    j = json.load(open(out))
    if (j["gmis"], j["gpus"], j["gmis_per_gpu"]) != (4, 2, [2, 2]):
        fail("bench-reduce JSON layout: " + str(j), p)
    got = sorted({r["strategy"] for r in j["results"]})
    want = sorted(["floor (ring among GPU leaders)", "mpr", "mrr", "har-ipc", "har-ipc-barriers", "har-mpi", "hybrid k=1",
                   "hybrid k=2"])
    if got != want or len(j["results"]) != 2 * len(want):
        fail(f"bench-reduce strategies {got}, expected {want} at 2 sizes", p)
    if [x["floats"] for x in j["auto"]] != [10, 1000]:
        fail("bench-reduce JSON lacks auto's choices: " + str(j["auto"]), p)
    # Experience channels: every plan moves the config's packages; a bad plan is one line.
    out = os.path.join(a.workdir, "channels.json")
    p = run(a, 3, ["bench-channels", "--config", cfg, "--steps", "50", "--warmup", "5", "--plans", "auto", "per-type",
                   "single", "obs,action;reward,log_prob,value;terminated,truncated", "--json", out])
    j = json.load(open(out))
    rows = {r["plan"]: r for r in j["results"]}
    if (j["producers"], j["consumers"], len(j["packages"]), len(rows)) != (2, 1, 7, 4):
        fail("bench-channels JSON: " + str(j), p)
    if rows["per-type"]["num_channels"] != 7 or rows["single"]["num_channels"] != 1 or \
            any(r["measured_bytes_per_s"] <= 0 or r["top_mov"] <= 0 for r in rows.values()):
        fail("bench-channels rows: " + str(rows), p)
    # Under ea-t the routes come from the roles: 2 GPUs x 2 GMIs, slot 0 of each GPU trains.
    p = run(a, 4, ["bench-channels", "--config", cfg, "--set", "gmi.gpus_per_node=2", "--set", "mapping.template=ea-t",
                   "--steps", "20", "--warmup", "2", "--plans", "auto", "--json", out])
    j = json.load(open(out))
    if (j["mapping_template"], j["producers"], j["consumers"]) != ("ea-t", 2, 2) or \
            not re.search(r"\n +0 +0 +0 +0  T +1\n +1 +0 +0 +1  E\+A +0\n", p.stdout + p.stderr):
        fail("bench-channels under ea-t: expected 2 producers, 2 trainers and the role table: " + str(j), p)
    p = run(a, 2, ["bench-channels", "--config", cfg, "--plans", "obs;action"], status=None)
    errs = [l for l in p.stderr.split("\n") if l.startswith("gmi_drl:")]
    if p.returncode != 2 or len(errs) != 1 or "--plans: 'reward' is in no channel" not in errs[0]:
        fail(f"bench-channels with a plan that leaves out 'reward': expected one line, got {errs}", p)
    out = os.path.join(a.workdir, "ppo.json")
    p = run(a, 2, ["bench", "--config", cfg, "--num-envs", "8", "--iterations", "1", "--warmup", "0",
                   "--set", "reduce.strategy=mpr", "--json", out])
    j = json.load(open(out))
    r = j["results"][0]
    if (j["gmis"], j["reduce"], r["num_envs"], r["envs_per_gmi"], r["env_steps_per_iteration"]) != (2, "mpr", 8, 4, 128):
        fail("bench JSON: " + str(j), p)
    if r["memory_per_gmi"] <= 0 or j["memory_budget_per_gmi"] <= 0 or j["mode"] != "train":
        fail("bench JSON lacks memory or mode: " + str(j), p)
    # The per-phase profile: every phase that took time, the reduction among them (2 GMIs), the
    # work counted, and the printed table.
    phases = {x["phase"]: x for x in r.get("phases", [])}
    if not {"env_step", "inference", "advantages", "reduction", "optimizer"} <= set(phases) or \
            phases["inference"]["flops"] <= 0 or phases["reduction"]["bytes"] <= 0 or \
            j["profiled_iterations"] != 2 or "peaks" not in j:
        fail("bench JSON lacks the phases: " + str(r.get("phases")), p)
    if not re.search(r"phases at 8 envs \(4 per GMI; 2 profiled iterations", p.stdout + p.stderr) or \
            "update_" not in p.stdout + p.stderr:
        fail("bench did not print the phase table", p)
    p = run(a, 2, ["bench", "--config", cfg, "--num-envs", "8", "--iterations", "2", "--warmup", "0",
                   "--mode", "serve", "--json", out])
    j = json.load(open(out))
    if j["mode"] != "serve" or j["benchmark"] != "ppo_serve" or j["results"][0]["update_ms"] != 0:
        fail("bench --mode serve JSON: " + str(j), p)
    for fused in ("on", "off"):  # serving through the fused rollout kernel and through the layered actor
        p = run(a, 1, ["bench", "--config", cfg, "--num-envs", "8", "--iterations", "1", "--warmup", "0",
                       "--mode", "serve", "--set", "device.fused_kernels=" + fused, "--json", out])
        if json.load(open(out))["results"][0]["env_steps_per_s"] <= 0:
            fail("bench --mode serve with device.fused_kernels=" + fused, p)
    # --kernel-times: every kernel and BLAS call of the extra iterations by name, the longest first.
    p = run(a, 1, ["bench", "--config", cfg, "--num-envs", "8", "--iterations", "1", "--warmup", "0",
                   "--phase-iterations", "0", "--kernel-times", "2", "--json", out])
    kt = json.load(open(out))["results"][0].get("kernel_times", [])
    names = [k["name"] for k in kt]
    if not any(n.startswith("gmi::blas::gemm NN ") for n in names) or "gmi::optim::adam_step" not in names or \
            [k["ms_per_iteration"] for k in kt] != sorted((k["ms_per_iteration"] for k in kt), reverse=True) or \
            "kernel by kernel at 8 envs" not in p.stdout + p.stderr:
        fail("bench --kernel-times: " + str(kt[:5]), p)
    # A multi-agent game benches without the phase profile (its roles are not split into phases).
    tag = os.path.join(os.path.dirname(os.path.dirname(HERE)), "config", "tag_gridworld_ppo.yaml")
    p = run(a, 1, ["bench", "--config", tag, "--num-envs", "4", "--iterations", "1", "--warmup", "0",
                   "--set", "ppo.num_steps=8", "--set", "ppo.num_minibatches=1", "--json", out])
    if json.load(open(out))["profiled_iterations"] != 0 or json.load(open(out))["results"][0]["env_steps_per_s"] <= 0:
        fail("bench of a multi-agent game", p)
    if os.environ.get("GMI_TEST_MUJOCO") == "1" and len(os.sched_getaffinity(0)) >= 2:
        e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        hopper = os.path.join(os.path.dirname(os.path.dirname(HERE)), "config", "hopper_ppo.yaml")
        for bind, warned in (("core", True), ("none", False)):
            p = subprocess.run([a.mpiexec, "-n", "1", "--bind-to", bind, a.gmi, "bench", "--config", hopper,
                                "--num-envs", "8", "--iterations", "1", "--warmup", "0",
                                "--set", "ppo.num_steps=32", "--set", "ppo.num_minibatches=2"],
                               capture_output=True, text=True, timeout=240, env=e)
            said = "environment thread(s) share them" in p.stdout + p.stderr
            if p.returncode != 0 or said != warned:
                fail(f"--bind-to {bind}: the affinity warning should {'' if warned else 'not '}be printed", p)
    p = run(a, 2, ["bench", "--config", cfg, "--num-envs", "7"], status=2)
    if not re.search(r"gmi_drl: error: --num-envs: 7 is not a positive count that splits evenly over 2 GMI", p.stderr):
        fail("uneven --num-envs must be refused", p)


def mode_learn(a, cfg):
    root = os.path.dirname(os.path.dirname(HERE))
    run_dir = os.path.join(a.workdir, "run")
    p = run(a, 2, ["--config", os.path.join(root, "config", "cartpole_ppo.yaml"), "--run-dir", run_dir,
                   "--set", "env.num_envs=4", "--set", "gmi.gpus_per_node=2", "--set", "reduce.strategy=har"])
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    best = max((float(r["episode_return_mean"]) for r in rows if r["episode_return_mean"] != "nan"), default=-1)
    steps = next((int(float(r["env_steps"])) for r in rows
                  if r["episode_return_mean"] != "nan" and float(r["episode_return_mean"]) >= 475), None)
    print(f"check_gmis learn: best iteration return {best:.1f}, first >= 475 at {steps} env steps")
    if steps is None:
        fail(f"2 GMIs did not learn CartPole: best iteration return {best:.1f} < 475", p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "mps", "reuse", "fail", "errors", "bench", "learn"])
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    cfg = os.path.join(a.workdir, "c.yaml")
    with open(cfg, "w") as f:
        f.write(CFG)
    globals()["mode_" + a.mode](a, cfg)
    print("check_gmis " + a.mode + ": ok")


if __name__ == "__main__":
    main()
