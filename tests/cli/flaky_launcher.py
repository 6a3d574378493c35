#!/usr/bin/env python3
"""A stand-in MPI launcher for the tune tests: `flaky_launcher.py MPIEXEC -np G gmi_drl bench ...`
runs the probe under MPIEXEC, except for the probes named in the environment:
  FLAKY_FAIL=GxN   fails like a run out of memory (one error line, exit status 1)
  FLAKY_FAIL_ONCE=GxN  fails like an MPS client that cannot connect, the first time only (a
                   marker file in the working directory remembers it)
  FLAKY_HANG=GxN   never returns (tune's --probe-timeout must end it); it leaves the marker file
                   .flaky-hanging while it hangs
where G is GMIs per GPU (-np) and N envs per GMI (--num-envs / G; dp probes only).  A job of
several points (bench --more-from-stdin, tune's --probe-jobs layout) passes each env count tune
sends it on to the probe, and fails or hangs at the point named as a job started there would."""
import os
import subprocess
import sys
import threading
import time

mpiexec, args = sys.argv[1], sys.argv[2:]
g = int(args[args.index("-np") + 1])


def point(n):
    """Fails or hangs as the environment says for G x n, else returns 0."""
    me = f"{g}x{n}"
    if me == os.environ.get("FLAKY_FAIL"):
        print("gmi_drl: error: not enough device memory (injected by flaky_launcher.py)", file=sys.stderr, flush=True)
        return 1
    if me == os.environ.get("FLAKY_FAIL_ONCE") and not os.path.exists(f".flaky-{me}"):
        open(f".flaky-{me}", "w").close()
        print("cudaGetDeviceCount(&count) error( cudaErrorMpsConnectionFailed) (injected by flaky_launcher.py)",
              file=sys.stderr, flush=True)
        return 1
    if me == os.environ.get("FLAKY_HANG"):
        open(".flaky-hanging", "w").close()
        time.sleep(3600)
    return 0


rc = point(int(args[args.index("--num-envs") + 1]) // g)
if rc:
    sys.exit(rc)
if "--more-from-stdin" not in args:
    os.execvp(mpiexec, [mpiexec] + args)
job = subprocess.Popen([mpiexec] + args, stdin=subprocess.PIPE, text=True)


def forward():
    """Tune's counts on to the job, failing or hanging where the environment says."""
    for line in sys.stdin:
        failed = point(int(line) // g) if line.strip().isdigit() else 0
        if failed:
            job.terminate()
            job.wait()
            os._exit(failed)
        job.stdin.write(line)
        job.stdin.flush()
    job.stdin.close()


threading.Thread(target=forward, daemon=True).start()
sys.exit(job.wait())  # the job's own end (an error, or the end of its input) ends this launcher
