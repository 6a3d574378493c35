#!/usr/bin/env python3
"""A stand-in MPI launcher for the tune tests: `flaky_launcher.py MPIEXEC -np G gmi_drl bench ...`
runs the probe under MPIEXEC, except for the probes named in the environment:
  FLAKY_FAIL=GxN   fails like a run out of memory (one error line, exit status 1)
  FLAKY_FAIL_ONCE=GxN  fails like an MPS client that cannot connect, the first time only (a
                   marker file in the working directory remembers it)
  FLAKY_HANG=GxN   never returns (tune's --probe-timeout must end it)
where G is GMIs per GPU (-np) and N envs per GMI (--num-envs / G)."""
import os
import sys
import time

mpiexec, args = sys.argv[1], sys.argv[2:]
g = int(args[args.index("-np") + 1])
n = int(args[args.index("--num-envs") + 1]) // g
me = f"{g}x{n}"
if me == os.environ.get("FLAKY_FAIL"):
    print("gmi_drl: error: not enough device memory (injected by flaky_launcher.py)", file=sys.stderr)
    sys.exit(1)
if me == os.environ.get("FLAKY_FAIL_ONCE") and not os.path.exists(f".flaky-{me}"):
    open(f".flaky-{me}", "w").close()
    print("cudaGetDeviceCount(&count) error( cudaErrorMpsConnectionFailed) (injected by flaky_launcher.py)",
          file=sys.stderr)
    sys.exit(1)
if me == os.environ.get("FLAKY_HANG"):
    time.sleep(3600)
os.execvp(mpiexec, [mpiexec] + args)
