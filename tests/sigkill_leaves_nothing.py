#!/usr/bin/python3
"""A process killed with SIGKILL leaves nothing of its slow tier behind:
train_cnn runs with its default slow tier (a DAX heap under
/dev/shm), and once the heap is mapped it is killed. While it ran, the
heap's mapping must be of a file with no name ("(deleted)" in
/proc/PID/maps), and no cachedarrays-PID-* file may exist in /dev/shm then
or after: the kernel frees an unnamed file's memory with its last mapping.

    sigkill_leaves_nothing.py --train-cnn PATH
"""
import argparse
import os
import signal
import subprocess
import sys
import time

SHM = "/dev/shm"


def named_heap_files(pid):
    prefix = f"cachedarrays-{pid}-"
    return sorted(name for name in os.listdir(SHM) if name.startswith(prefix))


def heap_mappings(pid):
    """The lines of /proc/PID/maps of files under /dev/shm: the slow tier's heap."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return [line.strip() for line in f if f" {SHM}/" in line]
    except FileNotFoundError:
        return []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-cnn", required=True)
    args = parser.parse_args()
    if not os.path.isdir(SHM):
        print(f"skipped: no {SHM} on this machine")
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("CACHEDARRAYS_")}
    env["OMP_NUM_THREADS"] = "1"
    child = subprocess.Popen([args.train_cnn, "--iterations", "100000"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        mappings = []
        while time.monotonic() < deadline and child.poll() is None:
            mappings = heap_mappings(child.pid)
            if mappings:
                break
            time.sleep(0.05)
        if not mappings:
            sys.exit(f"train_cnn (pid {child.pid}) mapped no heap under {SHM} within 60 s "
                     f"(exit status {child.poll()})")
        during = named_heap_files(child.pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    after = named_heap_files(child.pid)
    print("heap mappings while it ran:", *mappings, sep="\n  ")
    if during or after:
        sys.exit(f"named heap files in {SHM}: while running {during}, after SIGKILL {after}")
    not_deleted = [m for m in mappings if not m.endswith("(deleted)")]
    if not_deleted:
        sys.exit(f"heap mappings of files that still have a name (they would outlive SIGKILL): {not_deleted}")
    print(f"sigkill_leaves_nothing: pid {child.pid} killed; its heap had no name and nothing is left in {SHM}")


if __name__ == "__main__":
    main()
