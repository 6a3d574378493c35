#!/usr/bin/env python3
"""Run a command on bad input and check how it fails.

  expect_error.py --workdir DIR [--write NAME=TEXT]... [--status 2] --regex RE -- COMMAND...

Creates DIR (emptied first), writes the given files into it (TEXT with \\n for newlines), runs
COMMAND there and checks that it exits with --status and that stderr is exactly one line that
RE matches (re.search; anchor it with ^...$ to match the whole line).  --status 0 checks a
success instead: exit status 0 and nothing on stderr.  Exit status 0 when all holds, 1 otherwise
with what was expected and what came.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True, help="directory to run in (recreated)")
    ap.add_argument("--write", action="append", default=[], metavar="NAME=TEXT",
                    help="create file NAME in the workdir with TEXT (\\n: newline)")
    ap.add_argument("--status", type=int, default=2, help="expected exit status (default 2)")
    ap.add_argument("--regex", default="", help="the one stderr line must match this")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- command and arguments")
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command given (put it after --)")

    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    for spec in a.write:
        name, sep, text = spec.partition("=")
        if not sep:
            ap.error(f"--write {spec}: expected NAME=TEXT")
        with open(os.path.join(a.workdir, name), "w") as f:
            f.write(text.replace("\\n", "\n"))

    p = subprocess.run(cmd, cwd=a.workdir, capture_output=True, text=True, timeout=120)
    lines = p.stderr.splitlines()
    problems = []
    if p.returncode != a.status:
        problems.append(f"exit status {p.returncode}, expected {a.status}")
    if a.status == 0:
        if p.stderr:
            problems.append("expected nothing on stderr")
    elif len(lines) != 1:
        problems.append(f"stderr has {len(lines)} lines, expected exactly one")
    elif not re.search(a.regex, lines[0]):
        problems.append(f"stderr line does not match {a.regex!r}")
    print("command:", " ".join(cmd))
    print(f"exit status: {p.returncode}")
    print("stderr:\n" + p.stderr, end="" if p.stderr.endswith("\n") or not p.stderr else "\n")
    if problems:
        for msg in problems:
            print("FAIL: " + msg)
        print("stdout:\n" + p.stdout)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
