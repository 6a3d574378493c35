"""postprocess/sweep.py on a generated sweep: two configurations x 4 seeds with known linear curves
and one failed run without metrics.csv; the ranking, means, IQM and bootstrap intervals against
values computed here by hand, the plots opened as images, bad input as one error line."""
import csv
import json
import math
import os
import subprocess
import sys

import matplotlib.image as mpimg
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(ROOT, "postprocess", "sweep.py")
HEADER = ["run", "config", "seed", "status", "final_return", "best_return", "env_steps", "wall_time_s", "attempts",
          "error"]
GOOD = "lr=0.01;clip=0.2"  # every seed ends at 100: the best, and alphabetically after BAD
BAD = "lr=0.001"           # seeds end at 1, 2, 3, 100


def run(*args):
    return subprocess.run([sys.executable, SWEEP, *map(str, args)], capture_output=True, text=True, timeout=120)


def opens_as_png(path):
    img = mpimg.imread(path)
    return os.path.getsize(path) > 0 and img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100


def metrics(run_dir, final, iterations=10, nan_at=(), steps_per_iter=1000, seconds_per_iter=0.5):
    """A linear curve from final / iterations to final; NaN (no episode finished) at nan_at."""
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "metrics.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["iteration", "env_steps", "wall_time_s", "episode_return_mean", "loss"])
        for i in range(1, iterations + 1):
            ret = "nan" if i in nan_at else final * i / iterations
            w.writerow([i, i * steps_per_iter, i * seconds_per_iter, ret, 0.1])


def sweep_csv(d, rows):
    with open(os.path.join(d, "sweep.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)


@pytest.fixture
def sweep(tmp_path):
    rows = []
    for seed in range(1, 5):
        name = f"good_s{seed}"
        metrics(tmp_path / name, 100.0, nan_at=(5,))
        rows.append([name, GOOD, seed, "done", 100, 100, 10000, 5.0, 1, ""])
    # The seed ending at 1 runs 12 iterations (the grid stops at the others' 10000 steps); the
    # seed ending at 3 has no episode in its last iteration (final = the last finite value).
    for seed, final in zip(range(1, 5), [1.0, 2.0, 3.0, 100.0]):
        name = f"bad_s{seed}"
        metrics(tmp_path / name, final, iterations=12 if final == 1.0 else 10)
        if final == 3.0:
            with open(tmp_path / name / "metrics.csv", "a") as f:
                f.write("11,11000,5.5,nan,0.1\n")
        rows.append([name, BAD, seed, "done", "nan", "", {1.0: 12000, 3.0: 11000}.get(final, 10000), "", 1, ""])
    rows.append(["good_s5", GOOD, 5, "failed", "", "", "", "", 2, "CUDA error: out of memory\n(after 2 attempts)"])
    sweep_csv(tmp_path, rows)
    return tmp_path


def table_rows(stdout):
    return [[c.strip() for c in l.strip().strip("|").split("|")] for l in stdout.splitlines()
            if l.startswith("| ") and l[2].isdigit()]


def test_sweep_table_json_and_plots(sweep):
    p = run(sweep, "--boot", 500)
    assert p.returncode == 0, p.stderr
    rows = table_rows(p.stdout)
    assert [r[1] for r in rows] == [GOOD, BAD]  # ranked by mean final return
    assert rows[0][2] == "4/5, 1 failed" and rows[1][2] == "4/4"
    assert rows[0][3] == "100.00 [100.00, 100.00]"  # noiseless: a zero-width interval
    assert rows[1][3].startswith("26.50 [") and rows[1][4].startswith("2.50 [")
    assert rows[0][5:] == ["100.00", "10000", "5.0"]
    # env steps from sweep.csv; wall time from metrics.csv's last rows (6, 5, 5.5, 5 s)
    assert rows[1][5:] == ["26.50", "10750", "5.4"]
    # the failed run listed under the table with its error text, noted as skipped
    assert "failed runs (1):" in p.stdout
    assert f"- good_s5 ({GOOD}, seed 5, 2 attempt(s)): CUDA error: out of memory (after 2 attempts)" in p.stdout
    assert "no metrics.csv, skipped: good_s5 (failed)" in p.stderr

    s = json.load(open(sweep / "sweep_summary.json"))
    assert s["metric"] == "episode_return_mean" and s["boot"] == 500
    good, bad = s["configurations"]
    assert (good["config"], good["rank"], good["n"], good["seeds_total"]) == (GOOD, 1, 4, 5)
    assert good["final_return_mean"] == pytest.approx(100) and good["final_return_ci"] == pytest.approx([100, 100])
    assert good["iqm"] == pytest.approx(100) and good["iqm_ci"] == pytest.approx([100, 100])
    assert [r["run"] for r in good["runs"]] == [f"good_s{i}" for i in range(1, 6)]
    assert [r["in_statistics"] for r in good["runs"]] == [True] * 4 + [False]
    assert good["runs"][4]["status"] == "failed" and good["runs"][4]["final_return"] is None

    assert bad["final_return_mean"] == pytest.approx(26.5)
    assert bad["iqm"] == pytest.approx(2.5)  # (2 + 3) / 2: the middle 50 % of 1, 2, 3, 100
    for key, v in [("final_return_ci", 26.5), ("iqm_ci", 2.5)]:
        lo, hi = bad[key]
        assert lo <= v <= hi and hi - lo > 0
    assert bad["final_return_ci"][0] >= 1 and bad["final_return_ci"][1] <= 100
    assert bad["best_return_mean"] == pytest.approx(26.5)

    # Curves on the common grid: 100 points from the first finite point to the smallest final x.
    c = good["curves"]["env_steps"]
    assert len(c["x"]) == 100 and c["x"][0] == 1000 and c["x"][-1] == 10000
    assert c["mean"] == pytest.approx([x / 100 for x in c["x"]])  # 100 * steps / 10000, NaN row ignored
    assert c["ci_low"] == pytest.approx(c["mean"]) and c["ci_high"] == pytest.approx(c["mean"])
    c = bad["curves"]["env_steps"]
    assert c["x"][-1] == 10000 and c["runs"] == 4
    assert c["mean"][-1] == pytest.approx((10 / 12 + 2 + 3 + 100) / 4)
    assert all(lo <= m <= hi for lo, m, hi in zip(c["ci_low"], c["mean"], c["ci_high"]))
    assert c["ci_high"][-1] - c["ci_low"][-1] > 0
    t = good["curves"]["wall_time_s"]
    assert t["x"][0] == 0.5 and t["x"][-1] == 5.0 and t["mean"][-1] == pytest.approx(100)

    for name in ["sweep_return_vs_steps.png", "sweep_return_vs_time.png"]:
        assert opens_as_png(sweep / name), name
    assert len(p.stdout.splitlines()) < 15  # short


def test_sweep_seeded_and_out_dir(sweep, tmp_path):
    out = tmp_path / "plots"
    a = run(sweep, "--boot", 300, "--seed", 7, "--out-dir", out)
    assert a.returncode == 0, a.stderr
    first = json.load(open(out / "sweep_summary.json"))
    b = run(sweep, "--boot", 300, "--seed", 7, "--out-dir", out)
    assert b.stdout == a.stdout and json.load(open(out / "sweep_summary.json")) == first
    for name in ["sweep_return_vs_steps.png", "sweep_return_vs_time.png"]:
        assert opens_as_png(out / name), name
    assert not os.path.exists(sweep / "sweep_summary.json")
    # another metric of metrics.csv: every curve flat at 0.1
    p = run(sweep, "--metric", "loss", "--boot", 100, "--out-dir", out)
    assert p.returncode == 0, p.stderr
    assert all(r[3] == "0.10 [0.10, 0.10]" for r in table_rows(p.stdout))


def test_sweep_only_seeds(tmp_path):
    # No overrides but the seed: one configuration, "all seeds".  A run without metrics.csv keeps
    # sweep.csv's final return; with 3 seeds the IQM drops none (floor(3/4) = 0) and is the mean.
    metrics(tmp_path / "s1", 4.0)
    # s2 was killed after iteration 6 and restarted from iteration 4's checkpoint: the rows it wrote
    # again replace the first attempt's (whose 99 is no longer its best return).
    metrics(tmp_path / "s2", 6.0, iterations=6)
    lines = (tmp_path / "s2" / "metrics.csv").read_text().splitlines()
    (tmp_path / "s2" / "metrics.csv").write_text("\n".join(lines[:5] + ["5,5000,2.5,99,0.1", "6,6000,3.0,99,0.1"]
                                                           + lines[5:]) + "\n")
    sweep_csv(tmp_path, [["s1", "", 1, "done", 4, 4, 10000, 5, 1, ""],
                         ["s2", "", 2, "done", 6, 6, 10000, 5, 1, ""],
                         ["s3", "", 3, "done", 8, 9, 10000, 5, 1, ""],
                         ["s4", "", 4, "pending", "", "", "", "", 0, ""]])
    p = run(tmp_path, "--boot", 200)
    assert p.returncode == 0, p.stderr
    (row,) = table_rows(p.stdout)
    assert row[1] == "all seeds" and row[2] == "3/4, 1 pending"
    assert row[3].startswith("6.00 [") and row[4].startswith("6.00 [") and row[5] == "6.33"
    assert "failed runs" not in p.stdout
    assert "skipped: s3 (done)" in p.stderr and "s4" not in p.stderr
    s = json.load(open(tmp_path / "sweep_summary.json"))
    assert s["configurations"][0]["label"] == "all seeds"
    c = s["configurations"][0]["curves"]["env_steps"]
    assert c["runs"] == 2 and c["x"][-1] == 6000 and c["mean"][-1] == pytest.approx((2.4 + 6.0) / 2)
    assert max(c["mean"]) == pytest.approx(4.2)


def one_error_line(p, text):
    return p.returncode == 2 and p.stderr.strip().count("\n") == 0 and text in p.stderr and not p.stdout


def test_sweep_bad_input(sweep, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert one_error_line(run(empty), "no sweep.csv")
    assert one_error_line(run(tmp_path / "missing"), "not a directory")
    (empty / "sweep.csv").write_text("run,config,seed,final_return\nr1,,1,3\n")
    assert one_error_line(run(empty), "missing column(s) status, best_return, env_steps, wall_time_s, attempts, error")
    p = run(sweep, "--metric", "episode_length_mean")
    assert one_error_line(p, "metrics.csv: no column(s) episode_length_mean (has: iteration, env_steps")
    assert one_error_line(run(sweep, "--boot", 0), "--boot: expected an integer >= 1")
