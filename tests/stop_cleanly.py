#!/usr/bin/python3
"""Stopped at any moment, nothing is lost and nothing is left.

    stop_cleanly.py --check sigterm --train-cnn PATH --scratch DIR
        SIGTERM at a random moment of the second epoch: train_cnn ends at
        the next step boundary with exit status 143, says where, writes a
        checkpoint at that batch, and a run resumed from it gives the
        losses of an unbroken run bit for bit (it also removes the
        temporary file of a dead process it finds beside the checkpoint).
    stop_cleanly.py --check second-signal --train-cnn PATH --saver PATH --scratch DIR
        A second SIGTERM while the first one waits for the step to end ends
        the process at once (143, no summary), leaving the checkpoint as it
        was and nothing else.
    stop_cleanly.py --check sigkill-saves --saver PATH --scratch DIR
        A process saving checkpoints over and over is killed with SIGKILL
        at 20 random moments: the checkpoint always loads, and no other file
        is left. Then the named fallback: what a killed save leaves is
        removed by the next run, which says so.
"""
import argparse
import json
import os
import queue
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

SHM = "/dev/shm"


def fail(message):
    sys.exit(f"stop_cleanly: FAILED: {message}")


def environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CACHEDARRAYS_")}
    env["OMP_NUM_THREADS"] = "1"
    env["OMP_WAIT_POLICY"] = "passive"
    return env


def checkpoint_position(path):
    """(epoch, batch) from a checkpoint's header (layout: nn/checkpoint.hpp)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"CACKPT\0\1":
        fail(f"{path} is not a checkpoint")
    (model_length,) = struct.unpack_from("<Q", data, 24)
    return struct.unpack_from("<qq", data, 32 + model_length)


def entries(directory):
    return sorted(os.listdir(directory))


class Lines:
    """The lines a stream gives, read on a thread so that waiting for one can time out."""

    def __init__(self, stream):
        self.all = []
        self._queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in iter(stream.readline, ""):
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, pattern, seconds):
        """The first line matching `pattern`, or None at the end or after `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if line is None:
                return None
            self.all.append(line)
            if re.search(pattern, line):
                return line

    def rest(self):
        while self.wait_for(r"(?!)", 60) is not None:
            pass
        return "".join(self.all)


def start(command):
    return subprocess.Popen(command, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, seconds=120):
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        fail(f"{process.args[0]} did not end within {seconds} s")


def dead_pid():
    """The id of a process that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# ---- SIGTERM mid-epoch ---------------------------------------------------------

def train_losses(json_path):
    with open(json_path) as f:
        run = json.load(f)
    return [loss for epoch in run["epochs"] for loss in epoch["losses"]], run


def check_sigterm(args):
    scratch = args.scratch
    checkpoint = os.path.join(scratch, "run.ckpt")
    epochs = 3
    common = [args.train_cnn, "--data", "synthetic", "--train-limit", "480", "--test-limit", "32", "--batch", "16",
              "--epochs", str(epochs), "--threads", "1", "--seed", "5"]

    unbroken = start(common + ["--json", os.path.join(scratch, "unbroken.json")])
    out, err = unbroken.communicate(timeout=300)
    if unbroken.returncode != 0:
        fail(f"the unbroken run failed ({unbroken.returncode}):\n{out}\n{err}")
    unbroken_losses, _ = train_losses(os.path.join(scratch, "unbroken.json"))

    # A random moment of the second epoch, not at its ends: the first
    # epoch's duration (as seen here) says where that is.
    for attempt in range(3):
        stopped = start(common + ["--checkpoint", checkpoint, "--json", os.path.join(scratch, "stopped.json")])
        stdout = Lines(stopped.stdout)
        stderr = Lines(stopped.stderr)
        began = stdout.wait_for(r"^training: ", 120)
        began_at = time.monotonic()
        if began is None or stdout.wait_for(r"^epoch  1/", 120) is None:
            stopped.kill()
            fail(f"train_cnn printed no first epoch line:\n{stdout.rest()}\n{stderr.rest()}")
        seconds = time.monotonic() - began_at
        time.sleep(random.uniform(0.2, 0.6) * seconds)
        stopped.send_signal(signal.SIGTERM)
        code = finish(stopped)
        text, errors = stdout.rest(), stderr.rest()
        where = re.search(rf"summary: .* stopped by SIGTERM after (\d+) of {epochs} epochs, at batch (\d+), "
                          "checkpoint ", text)
        if where is not None and where.group(1) == "1" and where.group(2) != "0":
            break
        print(f"attempt {attempt + 1}: not stopped inside the second epoch (exit status {code}); again")
        os.remove(checkpoint)
    else:
        fail(f"in 3 attempts SIGTERM never stopped the run inside its second epoch:\n{text}\n{errors}")
    if code != 128 + signal.SIGTERM:
        fail(f"exit status {code}, not 143:\n{text}\n{errors}")
    if "SIGTERM received: stopping after this step" not in errors:
        fail(f"no word of the signal on stderr:\n{errors}")
    stop = (int(where.group(1)), int(where.group(2)))
    print(f"stopped: {where.group(0)}")
    if "stopped by SIGTERM, not tested" not in text:
        fail(f"the last epoch line does not say it was stopped:\n{text}")
    if checkpoint_position(checkpoint) != stop:
        fail(f"the checkpoint is at {checkpoint_position(checkpoint)}, the run stopped at {stop}")
    left = [name for name in entries(scratch) if name.startswith("run.ckpt")]
    if left != ["run.ckpt"]:
        fail(f"beside the checkpoint: {left}")
    stopped_losses, stopped_json = train_losses(os.path.join(scratch, "stopped.json"))
    if (stopped_json["stopped_by"], stopped_json["epochs_done"], stopped_json["batches_done"]) != ("SIGTERM", *stop):
        fail(f"the JSON says {stopped_json['stopped_by']} at {stopped_json['epochs_done']}, "
             f"{stopped_json['batches_done']}")

    # What a dead process's save in the named fallback leaves: the next run removes it.
    stale = f"run.ckpt.tmp-{dead_pid()}"
    open(os.path.join(scratch, stale), "wb").write(b"half")
    resumed = start(common + ["--checkpoint", checkpoint, "--resume", "--json", os.path.join(scratch, "resumed.json")])
    out, err = resumed.communicate(timeout=300)
    if resumed.returncode != 0:
        fail(f"the resumed run failed ({resumed.returncode}):\n{out}\n{err}")
    for expected in [f"removed 1 temporary file of checkpoint saves whose process no longer runs: {stale}",
                     rf"resumed from .*run.ckpt: {stop[0]} epochs done"]:
        if not re.search(expected, out):
            fail(f"the resumed run does not say '{expected}':\n{out}")
    resumed_losses, _ = train_losses(os.path.join(scratch, "resumed.json"))
    if stopped_losses + resumed_losses != unbroken_losses:
        fail(f"{len(stopped_losses)} + {len(resumed_losses)} losses differ from the unbroken run's "
             f"{len(unbroken_losses)}")
    if [name for name in entries(scratch) if name.startswith("run.ckpt")] != ["run.ckpt"]:
        fail(f"left beside the checkpoint: {entries(scratch)}")
    print(f"sigterm: exit status 143 at epoch {stop[0]} batch {stop[1]}; the checkpoint is there; the resumed run's "
          f"{len(resumed_losses)} losses after the stopped run's {len(stopped_losses)} equal the unbroken run's "
          f"{len(unbroken_losses)} bit for bit")


# ---- a second SIGTERM ------------------------------------------------------------

def second_signal_once(args):
    """True when the check ran; False when the first stop finished before the second signal came."""
    scratch = args.scratch
    checkpoint = os.path.join(scratch, "run.ckpt")
    # Steps long enough that the second signal comes before the step's end.
    run = start([args.train_cnn, "--data", "synthetic", "--width", "1", "--batch", "256", "--train-limit", "512",
                 "--test-limit", "16", "--epochs", "1000", "--threads", "1", "--checkpoint", checkpoint])
    stdout = Lines(run.stdout)
    stderr = Lines(run.stderr)
    if stdout.wait_for(r"^epoch  1/", 300) is None:  # a checkpoint exists from here on
        run.kill()
        fail(f"train_cnn printed no first epoch line:\n{stdout.rest()}\n{stderr.rest()}")
    before = open(checkpoint, "rb").read()
    run.send_signal(signal.SIGTERM)
    if stderr.wait_for(r"SIGTERM received: stopping after this step", 60) is None:
        run.kill()
        fail(f"no word of the first signal:\n{stderr.rest()}")
    # Stopped, the process cannot reach the step's end while the second
    # signal is sent; resumed, the handler runs before its code does.
    run.send_signal(signal.SIGSTOP)
    run.send_signal(signal.SIGTERM)
    run.send_signal(signal.SIGCONT)
    sent = time.monotonic()
    code = finish(run)
    seconds = time.monotonic() - sent
    text, errors = stdout.rest(), stderr.rest()
    if "summary:" in text:
        return False
    if code != 128 + signal.SIGTERM:
        fail(f"exit status {code}, not 143:\n{errors}")
    if "SIGTERM received again: stopping now" not in errors:
        fail(f"no word of the second signal:\n{errors}")
    left = [name for name in entries(scratch) if name.startswith("run.ckpt")]
    if left != ["run.ckpt"]:
        fail(f"left beside the checkpoint: {left}")
    if open(checkpoint, "rb").read() != before:
        fail("the checkpoint changed although the run was stopped before the step's end")
    loaded = subprocess.run([args.saver, "load", checkpoint], capture_output=True, text=True)
    if loaded.returncode != 0:
        fail(f"the checkpoint does not load: {loaded.stderr}")
    print(f"second-signal: exit status 143 {seconds:.3f} s after the second SIGTERM, no summary; the checkpoint is "
          f"as it was and loads; nothing else in the directory")
    return True


def check_second_signal(args):
    for attempt in range(3):
        if second_signal_once(args):
            return
        print(f"attempt {attempt + 1}: the step ended before the second signal came; again")
        shutil.rmtree(args.scratch)
        os.makedirs(args.scratch)
    fail("in 3 attempts the step always ended before the second signal came")


# ---- SIGKILL during saves ----------------------------------------------------------

def kill_saver(args, directory, named):
    """Starts a saver, kills it at a random moment once a checkpoint exists; its pid."""
    checkpoint = os.path.join(directory, "run.ckpt")
    saver = start([args.saver, "save", checkpoint, "16"] + (["named"] if named else []))
    lines = Lines(saver.stdout)
    if lines.wait_for(r"^saved 2$", 60) is None:
        saver.kill()
        fail(f"the saver saved nothing: {saver.stderr.read()}")
    time.sleep(random.uniform(0, 0.1))
    saver.send_signal(signal.SIGKILL)
    saver.wait()
    return saver.pid


def loads(args, checkpoint):
    loaded = subprocess.run([args.saver, "load", checkpoint], capture_output=True, text=True)
    if loaded.returncode != 0 or not loaded.stdout.startswith("loaded epoch "):
        fail(f"after a kill the checkpoint does not load: {loaded.stdout}{loaded.stderr}")


def check_sigkill_saves(args):
    # Unnamed temporaries: on tmpfs, which has O_TMPFILE everywhere.
    directory = os.path.join(SHM if os.path.isdir(SHM) else args.scratch, f"stop_cleanly-{os.getpid()}")
    os.makedirs(directory)
    checkpoint = os.path.join(directory, "run.ckpt")
    kills = 20
    try:
        in_window = 0
        for _ in range(kills):
            pid = kill_saver(args, directory, named=False)
            loads(args, checkpoint)
            others = [name for name in entries(directory) if name != "run.ckpt"]
            if others and others[0].endswith(f".{pid}") and len(others) == 1:
                # Killed between linkat and rename: the next run removes it.
                in_window += 1
                removed = subprocess.run([args.saver, "stale", checkpoint], capture_output=True, text=True).stdout
                if removed.strip() != f"removed {others[0]}":
                    fail(f"the next run did not remove {others[0]}: {removed}")
            elif others:
                fail(f"after a kill, beside the checkpoint: {others}")
        print(f"sigkill-saves: {kills} kills during saves of a 16 MiB checkpoint in {directory}: {kills} loads, "
              f"{in_window} temporary names left between linkat and rename (removed by the next run), nothing else")

        # The named fallback: a kill leaves the temporary; the next run removes it and says so.
        removed_count = 0
        for _ in range(5):
            pid = kill_saver(args, directory, named=True)
            loads(args, checkpoint)
            others = [name for name in entries(directory) if name != "run.ckpt"]
            if any(not name.endswith(f".{pid}") for name in others):
                fail(f"files of other processes beside the checkpoint: {others}")
            removed = subprocess.run([args.saver, "stale", checkpoint], capture_output=True, text=True).stdout
            if sorted(removed.split()) != sorted(["removed"] * len(others) + others):
                fail(f"the next run removed '{removed}', not {others}")
            removed_count += len(others)
            if entries(directory) != ["run.ckpt"]:
                fail(f"after the next run, beside the checkpoint: {entries(directory)}")
        print(f"sigkill-saves (named fallback): 5 kills, 5 loads, {removed_count} temporaries left and each removed "
              f"by the next run")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", required=True, choices=["sigterm", "second-signal", "sigkill-saves"])
    parser.add_argument("--train-cnn")
    parser.add_argument("--saver")
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    {"sigterm": check_sigterm, "second-signal": check_second_signal, "sigkill-saves": check_sigkill_saves}[args.check](args)
    shutil.rmtree(args.scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
