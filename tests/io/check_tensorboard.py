#!/usr/bin/env python3
"""Reads tb_write_sample's event file with TensorBoard's own readers and checks every event.

Three views of the same file: TensorBoard's TFRecord reader (every length and data CRC must pass
and the file end on a record boundary: the loaders below stop silently at a bad record), the raw
Event protos (LegacyEventFileLoader: one event per write, the three-tag event holding three
values), and what TensorBoard shows (EventAccumulator: per tag, every step, value and wall time).

Exit 77 (ctest: skipped) when python3 has no tensorboard; `cmake/deps-debian.sh --test` installs it.
"""
import argparse
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    from tensorboard.compat.tensorflow_stub import errors as tb_errors
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow as tb_records
except ImportError as e:
    print(f"check_tensorboard.py: skipped, no tensorboard ({e}); pip install tensorboard")
    sys.exit(77)

import numpy as np

# What tb_write_sample writes (its header comment says the same): (tag, step, value, wall time);
# events in file order, the three tags of step 20 in one event.
BIG = 1 << 40


def wall(step):
    return 1700000000.0 + 0.25 * step


EVENTS = [[("episode_return_mean", s, 1.5 * s, wall(s))] for s in range(10)]
EVENTS += [[("episode_return_mean", 10, math.nan, wall(10))],
           [("episode_return_mean", 11, math.inf, wall(11))],
           [("loss/policy", 20, 0.25, wall(20)), ("loss/value", 20, -3.75, wall(20)),
            ("lr", 20, 3e-4, wall(20))],
           [("big_step", BIG, 1.0, 1800000000.5)]]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def same_float32(got, want):
    """`got` is what TensorBoard returns for a float32 simple_value; `want` the double written."""
    want32 = np.float32(want)
    if math.isnan(want32):
        return math.isnan(got)
    return np.float32(got) == want32


def check_records(path):
    """TensorBoard's TFRecord reader over the whole file: no CRC or truncation error."""
    reader = tb_records.PyRecordReader_New(path.encode(), 0, b"", None)
    n = 0
    try:
        while True:
            reader.GetNext()
            n += 1
    except tb_errors.OutOfRangeError:
        pass
    except tb_errors.DataLossError as e:
        check(False, f"record {n}: {e}")
    check(n == 1 + len(EVENTS), f"{n} records, want {1 + len(EVENTS)}")


def check_raw_events(path, started, finished):
    events = list(LegacyEventFileLoader(path).Load())
    check(len(events) == 1 + len(EVENTS), f"{len(events)} events, want {1 + len(EVENTS)}")
    first = events[0]
    check(first.file_version == "brain.Event:2", f"first event's file_version {first.file_version!r}")
    check(math.floor(started) <= first.wall_time <= finished,
          f"file_version wall_time {first.wall_time} outside the run [{started}, {finished}]")
    for i, (event, want) in enumerate(zip(events[1:], EVENTS)):
        check(event.WhichOneof("what") == "summary", f"event {i}: {event.WhichOneof('what')}, want summary")
        check(event.step == want[0][1], f"event {i}: step {event.step}, want {want[0][1]}")
        check(event.wall_time == want[0][3], f"event {i}: wall_time {event.wall_time!r}, want {want[0][3]!r}")
        values = event.summary.value
        check([v.tag for v in values] == [w[0] for w in want],
              f"event {i}: tags {[v.tag for v in values]}, want {[w[0] for w in want]}")
        for v, w in zip(values, want):
            check(v.WhichOneof("value") == "simple_value", f"event {i} {v.tag}: not a simple_value")
            check(same_float32(v.simple_value, w[2]), f"event {i} {v.tag}: {v.simple_value}, want {w[2]}")


def check_accumulator(directory):
    acc = EventAccumulator(directory, size_guidance={"scalars": 0})
    acc.Reload()
    want_tags = sorted({w[0] for event in EVENTS for w in event})
    got_tags = sorted(acc.Tags()["scalars"])
    check(got_tags == want_tags, f"scalar tags {got_tags}, want {want_tags}")
    for tag in want_tags:
        want = [w for event in EVENTS for w in event if w[0] == tag]
        got = acc.Scalars(tag) if tag in got_tags else []
        check(len(got) == len(want), f"{tag}: {len(got)} points, want {len(want)}")
        for g, (_, step, value, wall_time) in zip(got, want):
            check(g.step == step, f"{tag}: step {g.step}, want {step}")
            check(g.wall_time == wall_time, f"{tag} step {step}: wall_time {g.wall_time!r}, want {wall_time!r}")
            check(same_float32(g.value, value), f"{tag} step {step}: {g.value}, want {value}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writer", required=True, help="the tb_write_sample executable")
    p.add_argument("--workdir", required=True, help="emptied, then written into")
    a = p.parse_args()

    shutil.rmtree(a.workdir, ignore_errors=True)
    directory = os.path.join(a.workdir, "run")  # not there yet: the writer creates it
    started = time.time()
    out = subprocess.run([a.writer, directory], capture_output=True, text=True)
    finished = time.time()
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        print(f"FAIL: {a.writer} exited {out.returncode}")
        return 1

    files = os.listdir(directory)
    check(len(files) == 1, f"files in {directory}: {files}")
    path = out.stdout.strip()
    check(os.path.dirname(path) == directory and os.path.basename(path) in files,
          f"printed path {path!r} is not the file in {directory}")
    pattern = r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)"
    m = re.fullmatch(pattern, os.path.basename(path))
    check(m is not None, f"file name {os.path.basename(path)!r} does not match {pattern}")
    if m:
        check(math.floor(started) <= int(m.group(1)) <= finished, f"file name time {m.group(1)}")
        check(m.group(2) == socket.gethostname(), f"file name host {m.group(2)!r}, want {socket.gethostname()!r}")

    check_records(path)
    check_raw_events(path, started, finished)
    check_accumulator(directory)
    if failures:
        print(f"{len(failures)} failure(s) in {path}")
        return 1
    print(f"ok: {path}: {len(EVENTS)} events, {sum(len(e) for e in EVENTS)} scalars read back by TensorBoard")
    return 0


if __name__ == "__main__":
    sys.exit(main())
