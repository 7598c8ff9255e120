#!/usr/bin/python3
"""Tests tools/plot_trace.py's drawing of memory snapshots, and that its
trace drawing still works.

  - a snapshot the library writes: with --tests, runs the test binary's
    case that makes an out_of_memory under CACHEDARRAYS_SNAPSHOT_DIR and
    draws the snapshot it wrote (what breaks when the C++ side and this
    script stop agreeing on the format);
  - a hand-written snapshot of every kind of thing the picture shows
    (pinned, retired, a copy, a region of no object, an unplaced object,
    kernels with and without an end), with and without trace events;
  - refusals: a newer format_version, a missing field, not JSON, --snapshot
    without -o; each exits non-zero naming the problem;
  - a trace CSV is still drawn, and one with no allocation is refused.

Each PNG must start with the PNG signature. Prints one line per failed
check and exits 1 if there is any.

    plot_snapshot_test.py [--tests BINARY] [--scratch DIR]
"""
import argparse
import copy
import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

PLOT = pathlib.Path(__file__).resolve().parent.parent / "tools" / "plot_trace.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The doctest case of tests/memory_snapshot_tests.cpp that writes a
# snapshot into CACHEDARRAYS_SNAPSHOT_DIR when the variable is set.
SNAPSHOT_CASE = "memory snapshot: CACHEDARRAYS_SNAPSHOT_DIR gives the snapshot directory"

KiB = 1024


def region(device, offset, dirty=False, valid=None, in_flight=False):
    r = {"device": device, "offset": offset, "dirty": dirty}
    if valid is not None:
        r["valid"] = valid
    r["in_flight"] = in_flight
    return r


def obj(id, size, primary, secondaries=(), pinned=False, retired=False, last_hint="will_write", made=True):
    return {"id": id, "bytes": size, "primary": primary, "secondaries": list(secondaries), "pinned": pinned,
            "being_written": False, "retired": retired, "last_hint": last_hint if made else None,
            "created_iteration": 0 if made else None, "created_ns": 1000 if made else None,
            "age_iterations": 2 if made else None, "age_ns": 5000 if made else None}


def event(ns, kind, object=0, size=0, name="", device=0, detail=0, args=(), hint=None):
    e = {"ns": ns, "kind": kind, "detail": detail, "device": device, "device2": 0, "object": object, "bytes": size,
         "name": name}
    if hint:
        e["hint"] = hint
    e["args"] = list(args)
    return e


FIXTURE = {
    "format": "cachedarrays memory snapshot",
    "format_version": 1,
    "reason": "out_of_memory",
    "requested_bytes": 40 * KiB,
    "policy": "ca-lm",
    "iteration": 2,
    "kernels_in_iteration": 3,
    "taken_ns": 6000,
    "devices": [
        {"device": 0, "name": "fast", "kind": "dram", "capacity": 64 * KiB, "bytes_used": 60 * KiB,
         "bytes_free": 4 * KiB, "largest_free_block": 4 * KiB, "live_regions": 3, "extent": 60 * KiB,
         "unowned_regions": [{"offset": 56 * KiB, "bytes": 4 * KiB}]},
        {"device": 1, "name": "slow", "kind": "dax", "capacity": 128 * KiB, "bytes_used": 100 * KiB,
         "bytes_free": 28 * KiB, "largest_free_block": 28 * KiB, "live_regions": 3, "extent": 100 * KiB,
         "unowned_regions": []},
    ],
    "objects": [
        obj(1, 40 * KiB, region(0, 0, dirty=True), pinned=True),
        obj(2, 16 * KiB, region(0, 40 * KiB), [region(1, 84 * KiB, valid=True)], last_hint="will_read"),
        obj(3, 60 * KiB, region(1, 0), retired=True, last_hint="retire"),
        obj(4, 24 * KiB, region(1, 60 * KiB), made=False),
        obj(5, 8 * KiB, None, made=False),
    ],
    "trace": {
        "recorded": True,
        "events_total": 40,
        "events": [
            event(100, "create", 1, 40 * KiB),
            event(200, "allocate", 1, 40 * KiB),
            event(300, "hint", 2, 16 * KiB, detail=1, hint="will_read"),
            event(400, "kernel_begin", name="conv", args=[{"object": 1, "bytes": 40 * KiB, "access": "write",
                                                         "device": 0}]),
            event(900, "kernel_end", name="conv"),
            event(1000, "copy", 2, 16 * KiB),
            event(1100, "kernel_begin", name="read()"),
            event(1200, "evict", 3, 60 * KiB, device=1),
        ],
    },
}


class Checks:
    def __init__(self):
        self.failures = 0

    def fail(self, what):
        print(f"FAIL: {what}")
        self.failures += 1

    def png(self, path, what):
        try:
            with open(path, "rb") as f:
                if f.read(8) != PNG_SIGNATURE:
                    self.fail(f"{what}: {path} is not a PNG")
        except OSError:
            self.fail(f"{what}: {path} was not written")


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env)


def plot(*args):
    return run([sys.executable, str(PLOT), *map(str, args)])


def expect_drawn(checks, what, snapshot_path, out):
    r = plot("--snapshot", snapshot_path, "-o", out)
    if r.returncode != 0:
        checks.fail(f"{what}: plot_trace exited {r.returncode}: {r.stderr.strip()}")
        return
    checks.png(out, what)


def expect_refused(checks, what, args, part):
    r = plot(*args)
    if r.returncode == 0:
        checks.fail(f"{what}: plot_trace accepted it")
    elif part not in r.stderr:
        checks.fail(f"{what}: the error does not say '{part}': {r.stderr.strip()}")


def write_json(path, data):
    path.write_text(json.dumps(data, indent=1))
    return path


def library_snapshot(checks, tests, scratch):
    """Runs the test binary's snapshot case and draws what it wrote."""
    out_dir = scratch / "library"
    out_dir.mkdir()
    env = dict(os.environ, CACHEDARRAYS_SNAPSHOT_DIR=str(out_dir), OMP_NUM_THREADS="1")
    r = run([tests, f"--test-case={SNAPSHOT_CASE}"], env=env)
    if r.returncode != 0:
        checks.fail(f"the test binary's snapshot case exited {r.returncode}:\n{r.stdout}{r.stderr}")
        return
    written = sorted(glob.glob(str(out_dir / "*.json")))
    if len(written) != 1:
        checks.fail(f"the snapshot case wrote {len(written)} snapshots into {out_dir}, not 1")
        return
    expect_drawn(checks, "the library's snapshot", written[0], scratch / "library.png")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", help="the cachedarrays_tests binary, to draw a snapshot the library wrote")
    parser.add_argument("--scratch", help="a directory for the files (emptied first; default: a temporary one)")
    args = parser.parse_args()
    if args.scratch:
        scratch = pathlib.Path(args.scratch)
        shutil.rmtree(scratch, ignore_errors=True)  # stale files from an earlier run must not pass
        scratch.mkdir(parents=True)
    else:
        scratch = pathlib.Path(tempfile.mkdtemp(prefix="plot-snapshot-test-"))
    checks = Checks()

    if args.tests:
        library_snapshot(checks, args.tests, scratch)

    expect_drawn(checks, "the fixture", write_json(scratch / "fixture.json", FIXTURE), scratch / "fixture.png")
    quiet = copy.deepcopy(FIXTURE)
    quiet["reason"], quiet["requested_bytes"] = "request", 0
    quiet["trace"] = {"recorded": False, "events_total": 0, "events": []}
    expect_drawn(checks, "a snapshot without trace events", write_json(scratch / "quiet.json", quiet),
                 scratch / "quiet.png")
    empty = copy.deepcopy(quiet)
    empty["objects"] = []
    expect_drawn(checks, "a snapshot without objects", write_json(scratch / "empty.json", empty),
                 scratch / "empty.png")

    newer = copy.deepcopy(FIXTURE)
    newer["format_version"] = 99
    expect_refused(checks, "a newer format_version",
                   ["--snapshot", write_json(scratch / "newer.json", newer), "-o", scratch / "newer.png"],
                   "format_version 99")
    missing = copy.deepcopy(FIXTURE)
    del missing["objects"][1]["primary"]
    expect_refused(checks, "an object without its primary",
                   ["--snapshot", write_json(scratch / "missing.json", missing), "-o", scratch / "missing.png"],
                   "objects[1]: missing field 'primary'")
    (scratch / "broken.json").write_text('{"format": ')
    expect_refused(checks, "a file that is not JSON",
                   ["--snapshot", scratch / "broken.json", "-o", scratch / "broken.png"], "is not JSON")
    expect_refused(checks, "--snapshot without -o", ["--snapshot", scratch / "fixture.json"], "needs -o")

    # The trace drawing as before.
    (scratch / "trace.csv").write_text(
        "ns,kind,detail,device,device2,object,bytes,name,args\n"
        "0,initial,0,0,0,0,0,,\n"
        "0,initial,0,1,0,0,4096,,\n"
        "100,allocate,0,0,0,1,65536,,\n"
        "200,kernel_begin,0,0,0,0,0,conv,1:65536:w:0\n"
        "300,copy,0,0,1,1,65536,,\n"
        "400,allocate,0,1,0,1,65536,,\n"
        "500,free,0,0,0,1,65536,,\n")
    r = plot(scratch / "trace.csv", scratch / "trace.png", "--names", "fast,slow")
    if r.returncode != 0:
        checks.fail(f"a trace CSV: plot_trace exited {r.returncode}: {r.stderr.strip()}")
    else:
        checks.png(scratch / "trace.png", "a trace CSV")
    (scratch / "idle.csv").write_text("ns,kind,detail,device,device2,object,bytes,name,args\n"
                                      "0,collect,0,0,0,0,0,,\n")
    expect_refused(checks, "a trace CSV without allocations", [scratch / "idle.csv", scratch / "idle.png"],
                   "has no allocation events")

    if not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"plot_snapshot_test: {checks.failures} failure(s)")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
