"""What the command-line test scripts under mpiexec share: the environment of a run, running
gmi_drl on n GMIs and failing with its output, the learning columns of metrics.csv, and the
MODE --gmi --mpiexec --workdir entry point."""
import argparse
import csv
import os
import shutil
import subprocess
import sys

import h5py

# metrics.csv columns that depend on timing, not on what was learned
TIMING = {"wall_time_s", "samples_per_s", "time_rollout_s", "time_update_s", "time_iteration_s", "gpu_util_pct",
          "gpu_mem_mib"}


def env_for(extra=None):
    """The test's environment for a run: root allowed under Open MPI, no inherited fault."""
    e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    e.pop("GMI_DRL_FAULT", None)
    e.update(extra or {})
    return e


def learning_columns(run_dir):
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def ckpt(run_dir, it):
    """The checkpoint file of iteration `it` in a run directory."""
    return os.path.join(run_dir, "checkpoints", f"ckpt-{it:09d}.h5")


def datasets(path):
    """Every dataset of a checkpoint (the metrics table without its timing columns) and the
    attributes of its /optimizer and /experience/replay groups, by name."""
    out = {}
    with h5py.File(path, "r") as f:
        cols = f["metrics"].attrs["columns"]
        cols = (cols.decode() if isinstance(cols, bytes) else cols).split(",")

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                v = obj[()]
                if name == "metrics/table":
                    v = v[:, [i for i, c in enumerate(cols) if c not in TIMING]]
                out[name] = v
        f.visititems(visit)
        for g in ("optimizer", "experience/replay"):
            if g in f:
                for k, v in f[g].attrs.items():
                    out[f"{g}.{k}"] = v
    return out


def fail(msg, p=None):
    """Print FAIL and the end of a process's output, and exit 1."""
    print("FAIL: " + msg)
    if p is not None:
        print(p.stdout[-4000:])
        print(p.stderr[-4000:])
    sys.exit(1)


def mpi_command(a, n, args):
    """gmi_drl under mpiexec -n n, oversubscribed and unbound (a.mpiexec, a.gmi from main)."""
    return [a.mpiexec, "-n", str(n), "--oversubscribe", "--bind-to", "none", a.gmi] + args


def run_mpi(a, n, args, status=0, timeout=600, env=None):
    """Run gmi_drl on n GMIs (`env`: variables besides env_for's); fail() unless it exits with
    `status`."""
    cmd = mpi_command(a, n, args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env_for(env))
    if p.returncode != status:
        fail(f"{' '.join(cmd)} exited {p.returncode} (expected {status})", p)
    return p


def main(name, modes, functions):
    """Parse MODE --gmi --mpiexec --workdir, start from an empty work directory and run
    functions["mode_" + MODE](args)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=modes)
    ap.add_argument("--gmi", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.gmi = os.path.abspath(a.gmi)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    functions["mode_" + a.mode](a)
    print(f"{name} {a.mode}: ok")
