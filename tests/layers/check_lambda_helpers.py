#!/usr/bin/env python3
"""Fails when a CUDA binary holds one extended __host__ __device__ lambda's host helper twice.

nvcc gives every extended lambda (KOKKOS_LAMBDA on CUDA builds) a host-side helper in an anonymous
namespace, keyed by the enclosing function and the lambda's index there.  A header function that
several files compile alike (a non-template inline function, or a template with the same
arguments) gets one helper per file, while the linker keeps one copy of the functions that use
it: a launch may then read the helper of a file whose constructor never ran and call a null
pointer (gmi_drl bench on an H100, 2026-12-07: Adam's elementwise lambda, called from PPO and from
the off-policy trainers).  Such kernels are written as named functors instead.

Usage: check_lambda_helpers.py BINARY [BINARY ...]   (reads `nm -C`; exit 1 listing each duplicate)
"""
import collections
import re
import subprocess
import sys

HELPER = re.compile(r"\(anonymous namespace\)::__nv_hdl_helper<(.*)>::fp_copier$")


def duplicates(nm_lines):
    """The helpers (their template arguments) that nm lists more than once."""
    counts = collections.Counter()
    for line in nm_lines:
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) < 3:
            continue
        m = HELPER.search(parts[2])
        if m:
            counts[m.group(1)] += 1
    return sorted(k for k, n in counts.items() if n > 1)


def enclosing_function(helper_args):
    """The function a helper's lambda sits in (the address in its __nv_dl_tag), for the report."""
    m = re.search(r", &\((.*)\), \d+u>", helper_args)
    return m.group(1) if m else helper_args


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    bad = 0
    for path in argv[1:]:
        try:
            res = subprocess.run(["nm", "-C", path], check=True, capture_output=True, text=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"check_lambda_helpers: cannot read the symbols of {path}: {e}", file=sys.stderr)
            return 2
        out = res.stdout
        if not out.strip() or "no symbols" in res.stderr:
            print(f"check_lambda_helpers: {path} has no symbol table (stripped?): nothing to check", file=sys.stderr)
            return 2
        for d in duplicates(out.splitlines()):
            print(f"{path}: an extended lambda in {enclosing_function(d)[:300]} has one host helper per file "
                  "that compiles it: write it as a functor")
            bad += 1
    if bad == 0:
        print(f"check_lambda_helpers: {len(argv) - 1} binaries, every extended lambda's host helper once")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
