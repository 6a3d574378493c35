"""postprocess/scaling.py and postprocess/learning.py on small generated data: the numbers in the
tables against values computed here by hand, the plots opened as images, bad input as one error
line."""
import csv
import json
import math
import os
import subprocess
import sys

import matplotlib.image as mpimg
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALING = os.path.join(ROOT, "postprocess", "scaling.py")
LEARNING = os.path.join(ROOT, "postprocess", "learning.py")


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)


def bench_json(path, nodes, gmis_per_gpu, seed, sps, gpus_per_node=8):
    gpus = nodes * gpus_per_node
    d = {"benchmark": "ppo_end_to_end", "config": "config/bench_cartpole_ppo.yaml", "seed": seed,
         "gmis": gpus * gmis_per_gpu, "nodes": nodes, "gpus": gpus, "gmis_per_gpu": [gmis_per_gpu] * gpus,
         "backend": "mps", "reduce": "har (ipc)", "env": "CartPole-v1",
         "results": [{"num_envs": 16384 * gpus, "env_steps_per_s": sps, "iteration_ms": 100.0,
                      "rollout_ms": 30.0, "update_ms": 60.0}]}
    with open(path, "w") as f:
        json.dump(d, f)


def opens_as_png(path):
    img = mpimg.imread(path)
    return img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100


@pytest.fixture
def study(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    # 1 GMI/GPU: 1e6 steps/s per node, 90 % efficient at 2 nodes, 80 % at 4; two seeds.
    for seed, jitter in [(1, 0.99), (2, 1.01)]:
        bench_json(res / f"n1_g1_s{seed}.json", 1, 1, seed, 1e6 * jitter)
        bench_json(res / f"n2_g1_s{seed}.json", 2, 1, seed, 2 * 0.9e6 * jitter)
        bench_json(res / f"n4_g1_s{seed}.json", 4, 1, seed, 4 * 0.8e6 * jitter)
    # 4 GMIs/GPU, one seed, 1 and 2 nodes: 3e6 then 5.4e6 (90 %).
    bench_json(res / "n1_g4_s1.json", 1, 4, 1, 3e6)
    bench_json(res / "n2_g4_s1.json", 2, 4, 1, 5.4e6)
    return tmp_path


def test_scaling_table_and_plots(study):
    p = run(SCALING, str(study))
    assert p.returncode == 0, p.stderr
    rows = [l for l in p.stdout.splitlines() if l.startswith("| bench_cartpole_ppo")]
    assert len(rows) == 5
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    by = {(int(c[2]), int(c[3])): c for c in cells}
    # mean over the seeds, normalised to 1 node, ideal = GPUs / GPUs at 1 node, efficiency
    assert by[(1, 1)][1] == "16384"
    assert by[(1, 1)][7].startswith("1e+06 ±")
    assert by[(1, 2)][9:12] == ["1.80", "2", "90 %"]
    assert by[(1, 4)][9:12] == ["3.20", "4", "80 %"]
    assert by[(4, 2)][9:12] == ["1.80", "2", "90 %"]
    assert by[(1, 4)][4] == "32" and by[(4, 2)][5] == "64"  # GPUs, GMIs
    assert "mean efficiency over the 3 scaled point(s): 87 % of linear" in p.stdout
    assert open(study / "scaling.md").read() in p.stdout
    for name in ["throughput_vs_gmis.png", "efficiency_vs_nodes.png", "phase_times.png"]:
        assert opens_as_png(study / name), name


def test_scaling_bad_input(tmp_path):
    p = run(SCALING, str(tmp_path))
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "no results" in p.stderr
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "x.json").write_text("{\"benchmark\": 1}")
    p = run(SCALING, str(tmp_path))
    assert p.returncode == 2 and "x.json: not a gmi_drl bench result" in p.stderr
    p = run(SCALING, str(tmp_path / "missing"))
    assert p.returncode == 2 and "not a directory" in p.stderr


def metrics(run_dir, returns, steps_per_iter=1000, seconds_per_iter=0.5):
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "metrics.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["iteration", "env_steps", "wall_time_s", "episode_return_mean"])
        for i, r in enumerate(returns, 1):
            w.writerow([i, i * steps_per_iter, i * seconds_per_iter, "nan" if math.isnan(r) else r])


def test_learning_table_and_plots(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    metrics(a, [10, 20, math.nan, 40, 50, 60, 70, 80, 90, 100])
    metrics(b, [5] * 20, steps_per_iter=2000, seconds_per_iter=1.0)
    out = tmp_path / "plots"
    p = run(LEARNING, a, b, "--labels", "fast,flat", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "| fast | 10 | 10000 | 5.0 | 100.00 | 100.00 | - |" in p.stdout
    assert "| flat | 20 | 40000 | 20.0 | 5.00 | 5.00 | - |" in p.stdout
    for name in ["learning_steps.png", "learning_time.png"]:
        assert opens_as_png(out / name), name
    # published returns beside the runs
    p = run(LEARNING, a, b, "--labels", "fast,flat", "--reference", "95.5,-", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "| fast | 10 | 10000 | 5.0 | 100.00 | 100.00 | 95.50 |" in p.stdout
    assert "| flat | 20 | 40000 | 20.0 | 5.00 | 5.00 | - |" in p.stdout


def test_learning_time_to_return(tmp_path):
    # Smoothed over 2 iterations a is 10, 15, 25, 35, ...: 30 at iteration 4 (2.0 s, 4000 steps);
    # b (5 throughout) never; their mean needs a's curve at 55: iteration 6 (3.0 s).
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    metrics(a, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
    metrics(b, [5] * 20, steps_per_iter=2000, seconds_per_iter=0.25)
    p = run(LEARNING, a, b, "--labels", "fast,flat", "--smooth", "2", "--threshold", "30", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "| fast | 2.0 | 4000 |" in p.stdout
    assert "| flat | not reached | - |" in p.stdout
    assert "mean of the 2 runs' curves reaches 30 at 3.0 s" in p.stdout
    p = run(LEARNING, a, b, "--smooth", "2", "--threshold", "60", "--out", str(tmp_path))
    assert "mean of the 2 runs' curves does not reach 60 (within the shortest run, 5.0 s)" in p.stdout
    p = run(LEARNING, a, "--smooth", "1", "--threshold", "70", "--out", str(tmp_path))
    assert "| a | 3.5 | 7000 |" in p.stdout and "mean of the 1 runs' curves reaches 70 at 3.5 s" in p.stdout


def test_learning_bad_input(tmp_path):
    p = run(LEARNING, str(tmp_path / "nope"))
    assert p.returncode == 2 and "no metrics.csv" in p.stderr
    metrics(str(tmp_path / "a"), [1, 2])
    p = run(LEARNING, str(tmp_path / "a"), "--labels", "x,y")
    assert p.returncode == 2 and "--labels: 2 label(s) for 1 run(s)" in p.stderr
    p = run(LEARNING, str(tmp_path / "a"), "--reference", "1,2")
    assert p.returncode == 2 and "--reference: 2 value(s) for 1 run(s)" in p.stderr
    p = run(LEARNING, str(tmp_path / "a"), "--reference", "high")
    assert p.returncode == 2 and "--reference: expected numbers or '-'" in p.stderr


BENCH_TABLE = os.path.join(ROOT, "postprocess", "bench_table.py")


def test_bench_table_gpu_busy(tmp_path):
    # NVML's utilisation where the JSON has it, '-' where it is null or absent (earlier versions).
    path = tmp_path / "b.json"
    point = {"env_steps_per_s": 2.5e6, "iteration_ms": 4.0, "rollout_ms": 1.0, "update_ms": 3.0,
             "kokkos_kernels_per_iteration": 10, "blas_calls_per_iteration": 2, "kernels": "fused"}
    path.write_text(json.dumps({"device": "CUDA device 0: NVIDIA H100 80GB HBM3, 132 SMs", "results": [
        dict(point, num_envs=64, gpu_util_pct=91.4), dict(point, num_envs=128, gpu_util_pct=None),
        dict(point, num_envs=256)]}))
    p = run(BENCH_TABLE, str(path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().split("\n")
    assert lines[0].endswith("| GPU busy |")
    assert lines[2] == "| NVIDIA H100 80GB HBM3 | fused / fp32 | 64 | 2.5 M | 4.0 | 1.0 | 3.0 | 10 | 2 | 91 % |"
    assert lines[3].endswith("| 10 | 2 | - |") and lines[4].endswith("| 10 | 2 | - |")
    # Another JSON: one error line naming the file.
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"cp_64": {"env_steps_per_s": 1}}))
    p = run(BENCH_TABLE, str(other))
    assert p.returncode != 0 and p.stderr.strip().count("\n") == 0 and "is not a `gmi_drl bench --json` result" in p.stderr


def test_bench_table_phases(tmp_path):
    # One size, two phases: the shares and rates computed by hand; the furthest phase marked.
    path = tmp_path / "b.json"
    path.write_text(json.dumps({
        "device": "CUDA device 0: NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB", "matmul": "tf32",
        "results": [{"num_envs": 4096, "kernels": "fused", "furthest_from_limit": "env_step", "phases": [
            {"phase": "env_step", "ms": 1.0, "flops_per_s": 0.0, "bytes_per_s": 2.5e11, "flop_peak_fraction": 0.0,
             "bandwidth_peak_fraction": 0.0746},
            {"phase": "update_fused", "ms": 3.0, "flops_per_s": 5.0e13, "bytes_per_s": 1e9,
             "flop_peak_fraction": 0.101, "bandwidth_peak_fraction": 0.0003}]}]}))
    p = run(BENCH_TABLE, "--phases", str(path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().split("\n")
    assert lines[2] == ("| NVIDIA H100 80GB HBM3 | fused / tf32 | 4096 | env_step * | 1.000 | 25.0 % | 0 | 250.0 "
                        "| 0.0 % | 7.5 % |")
    assert lines[3] == ("| NVIDIA H100 80GB HBM3 | fused / tf32 | 4096 | update_fused | 3.000 | 75.0 % | 50000 | 1.0 "
                        "| 10.1 % | 0.0 % |")
    # A result without phases: one error line.
    path.write_text(json.dumps({"device": "host", "results": [{"num_envs": 8}]}))
    p = run(BENCH_TABLE, "--phases", str(path))
    assert p.returncode != 0 and p.stderr.strip().count("\n") == 0 and "no per-phase results" in p.stderr


def test_peer_ledger_add_and_render(tmp_path):
    ledger = tmp_path / "peers.json"
    ledger.write_text(json.dumps([{"date": "2026-11-25", "device": "H100", "workload": "ppo/CartPole-v1/64x64/4096",
                                   "precision": "fp32", "unit": "env-steps/s", "peer": "old", "peer_value": 1.0,
                                   "gmi_drl_value": 2.0, "same_call": True, "command": "x"}]))
    gmi = tmp_path / "gmi.json"
    gmi.write_text(json.dumps({"device": "NVIDIA H100", "results": [
        {"num_envs": 4096, "env_steps_per_s": 3.0e6, "kernels": "fused"},
        {"num_envs": 65536, "env_steps_per_s": 9.0e6, "kernels": "layered"},
        {"num_envs": 8, "env_steps_per_s": 1.0}]}))
    peer = tmp_path / "peer.jsonl"
    peer.write_text('{"jax": "0.11.2"}\nnot json\n'
                    '{"num_envs": 4096, "hidden": [512, 512], "steps_per_s": 9.9e9}\n'
                    '{"num_envs": 4096, "hidden": [256, 256], "steps_per_s": 1.5e6}\n'
                    '{"num_envs": 65536, "hidden": "256,256", "steps_per_s": 6.0e6}\n')
    r = run(os.path.join(ROOT, "postprocess", "peers", "ledger.py"), "--ledger", str(ledger), "add", "--gmi", str(gmi),
            "--peer", str(peer), "--workload", "ppo/SyntheticHumanoid-v0/256x256", "--hidden", "256x256",
            "--precision", "tf32", "--peer-name", "PureJaxRL", "--command", "bench", "--date", "2026-11-26")
    assert r.returncode == 0, r.stderr
    assert "no peer line for num_envs 8" in r.stderr
    rows = json.loads(ledger.read_text())
    assert len(rows) == 3 and rows[0]["peer"] == "old"  # older entries stay
    assert rows[1]["workload"] == "ppo/SyntheticHumanoid-v0/256x256/4096"
    assert rows[1]["peer_value"] == 1.5e6 and rows[1]["gmi_drl_value"] == 3.0e6  # the 256x256 line, not 512x512
    assert rows[2]["peer_value"] == 6.0e6 and rows[2]["gmi_drl_kernels"] == "layered" and rows[2]["same_call"]
    r = run(os.path.join(ROOT, "postprocess", "peers", "ledger.py"), "--ledger", str(ledger), "render", "--since",
            "2026-11-26")
    assert r.returncode == 0, r.stderr
    assert "#### ppo/SyntheticHumanoid" in r.stdout and "| 2.00x |" in r.stdout and "1.50x" in r.stdout
    assert "old" not in r.stdout
    more = tmp_path / "more.json"
    more.write_text(json.dumps([dict(rows[1], workload="ppo/x/1")]))
    r = run(os.path.join(ROOT, "postprocess", "peers", "ledger.py"), "--ledger", str(ledger), "merge", str(more))
    assert r.returncode == 0, r.stderr
    assert [e["workload"] for e in json.loads(ledger.read_text())][-1] == "ppo/x/1"


def test_results_readme_holds_the_current_ledger(tmp_path):
    # postprocess/results/README.md's ledger block is what `ledger.py render --readme` writes now.
    readme = os.path.join(ROOT, "postprocess", "results", "README.md")
    copy = tmp_path / "README.md"
    copy.write_text(open(readme).read())
    r = run(os.path.join(ROOT, "postprocess", "peers", "ledger.py"), "render", "--readme", str(copy))
    assert r.returncode == 0, r.stderr
    assert copy.read_text() == open(readme).read(), \
        "postprocess/results/README.md's ledger tables are stale: run postprocess/peers/ledger.py render --readme " \
        "postprocess/results/README.md"
    bad = tmp_path / "no_block.md"
    bad.write_text("# nothing here\n")
    r = run(os.path.join(ROOT, "postprocess", "peers", "ledger.py"), "render", "--readme", str(bad))
    assert r.returncode != 0 and "no '<!-- rendered from peers.json" in r.stderr
