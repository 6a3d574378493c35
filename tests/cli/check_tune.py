#!/usr/bin/env python3
"""`gmi_drl tune` with real probes (`mpiexec -np G gmi_drl bench`, a job per layout sent its env
counts in turn, or a job per point) on a tiny grid: 2..1 GMIs x 4, 8, 16 envs per GMI of CartPole.

  probes    --exhaustive probes all 6 points, chooses the best it measured, and reports what
            Algorithm 1 would choose on the same measurements; --replay of its JSON makes that
            same choice; the overlay it writes trains as is (`--config base --config tuned.yaml`
            under mpiexec -n G); a probe that fails (out of memory) and one that hangs
            (--probe-timeout) are recorded and the search goes on, inside a layout's job too; a
            launcher that does not forward its input makes tune warn and probe a job per point;
            --budget-minutes cuts the
            search after the first probe and keeps the best so far; SIGTERM during a probe ends
            that probe's processes and tune reports and writes the best so far
  templates --templates dp,e-at: both templates' grids (e-at: env counts per simulator GMI, no
            split of one GMI), the best of both chosen, the same choice on replay, and an e-at
            overlay (mapping.template, env.num_envs per simulator) that trains as is
  async     --templates dp,ea-t,async: the serving templates' probes (bench under ea-t and async:
            the trainers time their iterations while the serving GMIs roll out, then stop them;
            env counts per serving GMI), an async overlay that trains as is, and what tune and
            bench refuse under them (--mode serve, --kernel-times), and bench --more-from-stdin's
            counts (each checked; its JSON keeps the points before a bad one)

  check_tune.py MODE --gmi PATH/TO/gmi_drl --mpiexec MPIEXEC --workdir DIR
"""
import json
import os
import re
import signal
import subprocess
import time

import harness
from harness import env_for

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = "env: {name: CartPole-v1}\nppo: {num_steps: 32, num_minibatches: 2, update_epochs: 2}\n"
GRID = ["--max-gmis-per-gpu", "2", "--env-counts", "4,8,16", "--probe-iterations", "2", "--probe-warmup", "1"]


def tune(a, args, extra_env=None, status=0, grid=None):
    p = subprocess.run([a.gmi, "tune", "--config", "base.yaml"] + (grid or GRID) + args, cwd=a.workdir,
                       env=env_for(extra_env), capture_output=True, text=True, timeout=600)
    if p.returncode != status:
        raise SystemExit(f"tune {args}: exit status {p.returncode}, expected {status}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def keys(path):
    """per_gpu and num_envs of a config file (tune's overlay, or a run's resolved config.yaml)."""
    text = open(path).read()
    g = re.search(r"^gmi:\n(?:  .*\n)*?  per_gpu: (\d+)$", text, re.M)
    n = re.search(r"^env:\n(?:  .*\n)*?  num_envs: (\d+)$", text, re.M)
    assert g and n, text
    return int(g.group(1)), int(n.group(1))


def probe_json(directory, templ, g, n, steppers):
    """The bench JSON of a probe of `templ` with g GMIs per GPU x n envs per GMI that steps envs
    (`steppers` of them), and its result there: a job of one layout holds its points in turn."""
    prefix = f"probe-{g}x" if templ == "dp" else f"probe-{templ}-{g}x"
    for name in sorted(os.listdir(directory)):
        if name.startswith(prefix) and name.endswith(".json"):
            j = json.load(open(os.path.join(directory, name)))
            for r in j["results"]:
                if r["num_envs"] == steppers * n:
                    return j, r
    raise AssertionError(f"no probe of {templ} {g}x{n} in {directory}: {os.listdir(directory)}")


def points(j):
    return {(p["gmis_per_gpu"], p["envs_per_gmi"]): p for p in j["points"]}


def chosen_overlay_trains(a, measured, templates, grid, templ, words, steps, line):
    """A replay of `measured` edited so that `templ`'s 3 GMIs x 4 envs measured best: tune chooses
    it (`words`: the env count's GMIs), its overlay sets the template and the counts, and trains as
    is under mpiexec -n 3 (`line`: what the run says of its roles)."""
    w = a.workdir
    for p in measured["points"]:
        if p["template"] == templ and p["gmis_per_gpu"] == 3 and p["envs_per_gmi"] == 4:
            p["samples_per_s"] = p["system_samples_per_s"] = 1e12
    json.dump(measured, open(os.path.join(w, "edited.json"), "w"))
    out = tune(a, ["--templates", templates, "--replay", "edited.json", "--exhaustive", "--out", f"t-{templ}.yaml"],
               grid=grid)
    assert f"chosen: {templ}: 3 GMI(s) per GPU x 4 envs per {words} GMI" in out, out
    text = open(os.path.join(w, f"t-{templ}.yaml")).read()
    assert keys(os.path.join(w, f"t-{templ}.yaml")) == (3, 4) and f"mapping:\n  template: {templ}\n" in text, text
    p = subprocess.run([a.mpiexec, "-n", "3", a.gmi, "--config", "base.yaml", "--config", f"t-{templ}.yaml",
                        "--set", f"train.total_env_steps={steps}", "--run-dir", f"run-{templ}"],
                       cwd=w, env=env_for(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and line in p.stdout, p.stdout + p.stderr


def mode_probes(a):
    w = a.workdir
    open(os.path.join(w, "base.yaml"), "w").write(BASE)

    # The whole grid, and Algorithm 1 on its measurements.
    out = tune(a, ["--exhaustive", "--json", "ex.json", "--out", "tuned.yaml", "--workdir", "p1",
                   "--launcher", a.mpiexec])
    ex = json.load(open(os.path.join(w, "ex.json")))
    pts = points(ex)
    assert len(pts) == 6 and all(p["status"] == "probed" for p in pts.values()), out
    best = max(pts.values(), key=lambda p: p["system_samples_per_s"])
    assert ex["chosen"]["gmis_per_gpu"] == best["gmis_per_gpu"] and ex["chosen"]["envs_per_gmi"] == best["envs_per_gmi"]
    assert all(p["memory_per_gmi"] > 0 and p["memory_budget_per_gmi"] > 0 for p in pts.values())
    assert "algorithm1" in ex and ex["probes"] == 6, ex.keys()
    assert "<== chosen" in out and "Algorithm 1 on these measurements" in out, out
    # One job per layout (--probe-jobs layout, the default): 2 jobs, each given its 3 env counts.
    logs = sorted(f for f in os.listdir(os.path.join(w, "p1")) if f.endswith(".log"))
    assert logs == ["probe-1x4.log", "probe-2x4.log"] and ex["probe_jobs"] == "layout", logs
    assert [r["num_envs"] for r in json.load(open(os.path.join(w, "p1", "probe-2x4.json")))["results"]] == [8, 16, 32]
    # A job per point: 6 jobs.
    tune(a, ["--exhaustive", "--json", "exp.json", "--workdir", "p1p", "--launcher", a.mpiexec, "--probe-jobs", "point"])
    assert all(p["status"] == "probed" for p in points(json.load(open(os.path.join(w, "exp.json")))).values())
    assert len([f for f in os.listdir(os.path.join(w, "p1p")) if f.endswith(".log")]) == 6

    # Replaying the measurements: the search itself, without processes, chooses as reported.
    tune(a, ["--replay", "ex.json", "--json", "re.json"])
    re_ = json.load(open(os.path.join(w, "re.json")))
    a1 = ex["algorithm1"]["chosen"]
    assert (re_["chosen"]["gmis_per_gpu"], re_["chosen"]["envs_per_gmi"]) == (a1["gmis_per_gpu"], a1["envs_per_gmi"])
    assert re_["probes"] == ex["algorithm1"]["probes"] <= 6

    # The overlay trains as is.
    g, n = keys(os.path.join(w, "tuned.yaml"))
    assert (g, n) == (best["gmis_per_gpu"], best["envs_per_gmi"]), (g, n)
    subprocess.run([a.mpiexec, "-n", str(g), a.gmi, "--config", "base.yaml", "--config", "tuned.yaml",
                    "--set", f"train.total_env_steps={2 * 32 * n * g}", "--run-dir", "run", "--log-level", "warn"],
                   cwd=w, env=env_for(), check=True, timeout=300)
    assert keys(os.path.join(w, "run/config.yaml")) == (g, n)

    # A probe that fails, one that hangs and one that fails once: each failed one is tried once
    # more, a point is "failed" only when both attempts fail, the search goes on, and the choice
    # line says how many failed and were retried.
    flaky = f"{HERE}/flaky_launcher.py {a.mpiexec}"
    out = tune(a, ["--json", "flaky.json", "--workdir", "p2", "--launcher", flaky, "--probe-timeout", "5",
                   "--alpha", "0"], {"FLAKY_FAIL": "2x8", "FLAKY_HANG": "1x4", "FLAKY_FAIL_ONCE": "2x4"})
    fl = points(json.load(open(os.path.join(w, "flaky.json"))))
    assert fl[(2, 4)]["status"] == "probed" and fl[(2, 4)]["attempts"] == 2, fl[(2, 4)]
    assert "the first attempt failed: exit status 1" in fl[(2, 4)]["note"], fl[(2, 4)]
    assert fl[(2, 8)]["status"] == "failed" and fl[(2, 8)]["attempts"] == 2, fl[(2, 8)]
    assert "failed twice: exit status 1: gmi_drl: error: not enough device memory" in fl[(2, 8)]["note"], fl[(2, 8)]
    assert fl[(2, 16)]["status"] == "not visited"
    assert fl[(1, 4)]["status"] == "failed" and "failed twice: timed out after 5 s" in fl[(1, 4)]["note"], fl[(1, 4)]
    assert fl[(2, 4)]["chosen"], fl
    assert fl[(1, 4)]["seconds"] < 30
    assert re.search(r"chosen: 2 GMI\(s\) per GPU x 4 envs per GMI: .* \(2 failed twice, 3 retried: the choice is among "
                     r"the probes that ran; see the table\)", out), out

    # A launcher that does not pass its input on: the layout's job ends after its first point, tune
    # says why and probes a job per point from then on; every point is measured.
    open(os.path.join(w, "nostdin.sh"), "w").write(f'#!/bin/sh\nexec {a.mpiexec} "$@" < /dev/null\n')
    os.chmod(os.path.join(w, "nostdin.sh"), 0o755)
    out = tune(a, ["--exhaustive", "--json", "ns.json", "--workdir", "p9", "--launcher", os.path.join(w, "nostdin.sh")])
    ns = points(json.load(open(os.path.join(w, "ns.json"))))
    assert all(p["status"] == "probed" and p["attempts"] == 1 for p in ns.values()), ns
    assert "the launcher does not forward its standard input to rank 0; a job per point from here on" in out, out
    assert len([f for f in os.listdir(os.path.join(w, "p9")) if f.endswith(".log")]) == 6

    # The time budget: spent after the first probe; the best so far is reported.
    out = tune(a, ["--json", "cut.json", "--workdir", "p3", "--launcher", a.mpiexec, "--budget-minutes", "0.0001"])
    cut = json.load(open(os.path.join(w, "cut.json")))
    assert cut["cut"] and cut["probes"] == 1 and cut["chosen"]["gmis_per_gpu"] == 2, cut
    assert "the search was cut by --budget-minutes" in out, out
    # SIGTERM while a probe hangs: its processes are ended, the best so far is written.
    if os.path.exists(os.path.join(w, ".flaky-hanging")):
        os.remove(os.path.join(w, ".flaky-hanging"))
    p = subprocess.Popen([a.gmi, "tune", "--config", "base.yaml"] + GRID +
                         ["--json", "int.json", "--out", "int.yaml", "--workdir", "p4", "--launcher", flaky],
                         cwd=w, env=env_for({"FLAKY_HANG": "2x8"}), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    t0 = time.time()
    while not os.path.exists(os.path.join(w, ".flaky-hanging")) and time.time() - t0 < 120:
        time.sleep(0.2)
    time.sleep(1)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    assert "interrupted by signal 15, this is the best found so far" in out, out
    it = json.load(open(os.path.join(w, "int.json")))
    assert it["chosen"]["gmis_per_gpu"] == 2 and it["chosen"]["envs_per_gmi"] == 4, it["chosen"]
    assert keys(os.path.join(w, "int.yaml")) == (2, 4)
    left = subprocess.run(["pgrep", "-f", "flaky_launcher.py"], capture_output=True, text=True).stdout.split()
    assert not left, f"probe processes left after SIGTERM: {left}"

    print(f"exhaustive best {best['gmis_per_gpu']}x{best['envs_per_gmi']}, Algorithm 1 {a1['gmis_per_gpu']}x"
          f"{a1['envs_per_gmi']} with {ex['algorithm1']['probes']} of 6 probes")


def mode_templates(a):
    """--templates dp,e-at: each template's grid is probed (under e-at the env counts are per
    simulator GMI, and one GMI per GPU cannot split), the best of all is chosen, a replay makes
    the same choices, and an e-at choice is an overlay that trains as is."""
    w = a.workdir
    open(os.path.join(w, "base.yaml"), "w").write(BASE)
    grid = ["--max-gmis-per-gpu", "3", "--env-counts", "4,8,16"]
    out = tune(a, ["--templates", "dp,e-at", "--exhaustive", "--json", "t.json", "--workdir", "p5",
                   "--launcher", a.mpiexec], grid=grid)
    t = json.load(open(os.path.join(w, "t.json")))
    pts = {(p["template"], p["gmis_per_gpu"], p["envs_per_gmi"]): p for p in t["points"]}
    assert len(pts) == 18, pts.keys()
    assert all(pts[("dp", g, n)]["status"] == "probed" for g in (1, 2, 3) for n in (4, 8, 16)), out
    assert all(pts[("e-at", g, n)]["status"] == "probed" for g in (2, 3) for n in (4, 8, 16)), out
    assert all(pts[("e-at", 1, n)]["status"] == "invalid" and "under e-at 1 GMI(s) per GPU" in pts[("e-at", 1, n)]["note"]
               for n in (4, 8, 16)), out
    best = max((p for p in t["points"] if p["status"] == "probed"), key=lambda p: p["system_samples_per_s"])
    assert t["chosen"]["template"] == best["template"] and t["chosen"]["gmis_per_gpu"] == best["gmis_per_gpu"], t["chosen"]
    assert re.search(r"^\s*template\s+GMIs", out, re.M) and re.search(r"^\s+e-at\s+3\s+8\s", out, re.M), out
    # An e-at probe steps 2 simulators x 8 envs for its trainer: the batch of dp's 1 GMI x 16 envs.
    e, er = probe_json(os.path.join(w, "p5"), "e-at", 3, 8, 2)
    d, dr = probe_json(os.path.join(w, "p5"), "dp", 1, 16, 1)
    assert e["template"] == "e-at" and e["simulators_per_trainer"] == 2, e
    assert er["num_envs"] == 16 and er["env_steps_per_iteration"] == 16 * 32, er
    assert dr["env_steps_per_iteration"] == 16 * 32 and er["minibatch_size"] == dr["minibatch_size"] == 256, (er, dr)
    # The trainer's counts, not rank 0's (a simulator): updates, kernels.
    assert er["updates_per_s"] > 0 and er["kokkos_kernels_per_iteration"] > 0, er
    # A replay makes Algorithm 1's choice over both templates.
    tune(a, ["--templates", "dp,e-at", "--replay", "t.json", "--json", "tr.json"], grid=grid)
    tr = json.load(open(os.path.join(w, "tr.json")))
    a1 = t["algorithm1"]["chosen"]
    assert (tr["chosen"]["template"], tr["chosen"]["gmis_per_gpu"], tr["chosen"]["envs_per_gmi"]) == \
        (a1["template"], a1["gmis_per_gpu"], a1["envs_per_gmi"]), (tr["chosen"], a1)
    # Where e-at measured best (here: a replay of measurements edited so), the overlay sets the
    # template, its env count is per simulator, and it trains as is.
    chosen_overlay_trains(a, t, "dp,e-at", grid, "e-at", "simulator", 512,
                          "1 trainer GMI(s), each acting and learning for 2 simulator GMI(s) x 4 envs")
    # 256 minibatches: one GMI's 4 envs x 32 steps do not split into them, a trainer's 2 x 4 do; a
    # trainer with 1 simulator is refused without a probe; e-at is chosen.
    out = tune(a, ["--templates", "dp,e-at", "--json", "mb.json", "--out", "mb.yaml", "--workdir", "p6",
                   "--launcher", a.mpiexec, "--set", "ppo.num_minibatches=256"],
               grid=["--max-gmis-per-gpu", "3", "--env-counts", "4", "--probe-iterations", "1", "--probe-warmup", "0"])
    mb = {(p["template"], p["gmis_per_gpu"]): p for p in json.load(open(os.path.join(w, "mb.json")))["points"]}
    assert all(mb[("dp", g)]["status"] == "invalid" for g in (1, 2, 3)), out
    assert mb[("e-at", 2)]["status"] == "invalid" and "each trainer GMI steps its 1 simulator GMIs' envs, 1 x " \
        "env.num_envs = 4" in mb[("e-at", 2)]["note"] \
        and "ppo.num_minibatches" in mb[("e-at", 2)]["note"] and mb[("e-at", 2)]["attempts"] == 0, mb[("e-at", 2)]
    assert mb[("e-at", 3)]["status"] == "probed" and mb[("e-at", 3)]["chosen"], out
    assert not os.path.exists(os.path.join(w, "p6", "probe-e-at-2x4.log"))
    # The time budget covers both templates: spent after the first probe, e-at's points are cut.
    out = tune(a, ["--templates", "dp,e-at", "--json", "cut.json", "--workdir", "p7", "--launcher", a.mpiexec,
                   "--budget-minutes", "0.0001"], grid=grid)
    cut = {(p["template"], p["gmis_per_gpu"], p["envs_per_gmi"]): p for p in json.load(open(os.path.join(w, "cut.json")))["points"]}
    assert sum(p["status"] == "probed" for p in cut.values()) == 1, out
    assert all(p["status"] == "cut" and p["note"] == "time budget spent" for k, p in cut.items() if k[0] == "e-at"), out
    # Only the training templates are searched.
    p = subprocess.run([a.gmi, "tune", "--config", "base.yaml", "--templates", "mp-dp"], cwd=w, env=env_for(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--templates" in p.stderr, p.stderr
    print(f"templates: best measured {best['template']} {best['gmis_per_gpu']}x{best['envs_per_gmi']}, "
          f"Algorithm 1 {a1['template']} {a1['gmis_per_gpu']}x{a1['envs_per_gmi']}")


def mode_async(a):
    """--templates dp,ea-t,async: bench probes each serving template's points (the trainers' rates
    and counts, env counts per serving GMI), the best of all is chosen, and an async choice is an
    overlay that trains as is; --mode serve and --kernel-times are refused under them."""
    w = a.workdir
    open(os.path.join(w, "base.yaml"), "w").write(BASE)
    grid = ["--max-gmis-per-gpu", "3", "--env-counts", "4,8", "--probe-iterations", "3", "--probe-warmup", "1"]
    out = tune(a, ["--templates", "dp,ea-t,async", "--exhaustive", "--json", "s.json", "--workdir", "p8",
                   "--launcher", a.mpiexec], grid=grid)
    s = json.load(open(os.path.join(w, "s.json")))
    pts = {(p["template"], p["gmis_per_gpu"], p["envs_per_gmi"]): p for p in s["points"]}
    assert len(pts) == 18, pts.keys()
    for t in ("ea-t", "async"):
        assert all(pts[(t, g, n)]["status"] == "probed" and pts[(t, g, n)]["samples_per_s"] > 0
                   for g in (2, 3) for n in (4, 8)), out
        assert all(pts[(t, 1, n)]["status"] == "invalid" and f"under {t} 1 GMI(s) per GPU" in pts[(t, 1, n)]["note"]
                   and "serving GMIs each" in pts[(t, 1, n)]["note"] for n in (4, 8)), out
    assert re.search(r"^\s+async\s+3\s+8\s", out, re.M) and "envs/serving" in out, out
    best = max((p for p in s["points"] if p["status"] == "probed"), key=lambda p: p["system_samples_per_s"])
    assert (s["chosen"]["template"], s["chosen"]["gmis_per_gpu"], s["chosen"]["envs_per_gmi"]) == \
        (best["template"], best["gmis_per_gpu"], best["envs_per_gmi"]), s["chosen"]
    # An async probe: 2 serving GMIs x 8 envs for one trainer, timed by the trainer (its updates and
    # kernels); its rollouts' own rate is the serving GMIs', not reported.
    for t in ("ea-t", "async"):
        e, r = probe_json(os.path.join(w, "p8"), t, 3, 8, 2)
        assert e["template"] == t and e["simulators_per_trainer"] == 2, e
        assert r["num_envs"] == 16 and r["env_steps_per_iteration"] == 16 * 32 and r["env_steps_per_s"] > 0, r
        assert r["updates_per_s"] > 0 and r["kokkos_kernels_per_iteration"] > 0 and r["update_ms"] > 0, r
        assert r["rollout_env_steps_per_s"] == 0 and r["memory_per_gmi"] > 0, r
    # Where async measured best (a replay edited so), the overlay trains as is.
    chosen_overlay_trains(a, s, "dp,ea-t,async", grid, "async", "serving", 1024,
                          "1 trainer GMI(s), each learning from the rollouts of 2 serving GMI(s) x 4 envs")
    # Serving templates train only: tune refuses --mode serve under them, before any probe; bench
    # refuses --mode serve and --kernel-times.
    p = subprocess.run([a.gmi, "tune", "--config", "base.yaml", "--templates", "dp,async", "--mode", "serve"], cwd=w,
                       env=env_for(), capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--mode serve: tune measures mapping.template async in --mode train only" in p.stderr, \
        p.stderr
    for extra, what in ((["--mode", "serve"], "mapping.template: ea-t: bench measures training under it (--mode train)"),
                        (["--kernel-times", "1"], "--kernel-times: times the kernels of rank 0's iterations")):
        p = subprocess.run([a.mpiexec, "-n", "3", a.gmi, "bench", "--config", "base.yaml", "--set",
                            "mapping.template=ea-t", "--set", "gmi.per_gpu=3", "--num-envs", "8"] + extra,
                           cwd=w, env=env_for(), capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and what in p.stderr + p.stdout, p.stdout + p.stderr
    # bench --more-from-stdin: counts after --num-envs, checked as they are (blank lines skipped); a
    # line that is no count is one error line; an unwritable --json is one line before any point.
    for text, what in (("16\n\n8x\n", "--more-from-stdin: '8x' is not an env count"),
                       ("16\n9\n", "--more-from-stdin: 9 is not a positive count that splits evenly over 2 serving "
                                   "GMI(s)")):
        if os.path.exists(os.path.join(w, "more.json")):
            os.remove(os.path.join(w, "more.json"))
        p = subprocess.run([a.mpiexec, "-n", "3", a.gmi, "bench", "--config", "base.yaml", "--set",
                            "mapping.template=async", "--set", "gmi.per_gpu=3", "--num-envs", "8", "--iterations", "1",
                            "--warmup", "0", "--more-from-stdin", "--json", "more.json"],
                           cwd=w, env=env_for(), input=text, capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and what in p.stderr + p.stdout, p.stdout + p.stderr
        assert [r["num_envs"] for r in json.load(open(os.path.join(w, "more.json")))["results"]] == [8, 16]
    p = subprocess.run([a.mpiexec, "-n", "2", a.gmi, "bench", "--config", "base.yaml", "--set", "gmi.per_gpu=2",
                        "--num-envs", "8", "--more-from-stdin", "--json", "no/such/dir/x.json"],
                       cwd=w, env=env_for(), input="16\n", capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "--json no/such/dir/x.json: cannot write" in p.stderr + p.stdout, p.stdout + p.stderr
    print(f"async: best measured {best['template']} {best['gmis_per_gpu']}x{best['envs_per_gmi']} "
          f"({best['system_samples_per_s']:.0f} samples/s)")


if __name__ == "__main__":
    harness.main("check_tune", ["probes", "templates", "async"], globals())
