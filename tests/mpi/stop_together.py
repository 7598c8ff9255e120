#!/usr/bin/python3
"""Under mpirun, a stop reaches every rank at the same step.

    stop_together.py --mpirun PATH --train-cnn PATH --scratch DIR

1. SIGTERM to rank 1 alone: rank 0, never signalled, stops at the same step
   (it says "stopped by SIGTERM ... at batch B"), writes the one checkpoint
   at that batch, and the job ends with status 143. Resumed under mpirun,
   the losses continue those of an unbroken two-rank run bit for bit.
2. SIGTERM to mpirun, which passes it to every rank (after
   odls_base_sigkill_timeout seconds): the ranks write one checkpoint after
   they hear it, nothing else is left beside it, and it resumes.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from stop_cleanly import Lines, checkpoint_position, entries, environment, fail, train_losses  # noqa: E402

EPOCHS = 3


def mpirun(args, extra, json_name, sigkill_timeout=3, epochs=EPOCHS):
    command = [args.mpirun, "-np", "2", args.train_cnn, "--data", "synthetic", "--train-limit", "480",
               "--test-limit", "32", "--batch", "32", "--epochs", str(epochs), "--threads", "1", "--seed", "9",
               "--json", os.path.join(args.scratch, json_name)] + extra
    env = environment()
    # Signalled, or when a rank exits with an error status, mpirun waits this
    # many seconds (1 by default) before it passes SIGTERM on, and as long
    # again before SIGKILL, whether or not the ranks have ended by then.
    env["OMPI_MCA_odls_base_sigkill_timeout"] = str(sigkill_timeout)
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def children_of(parent):
    """The ids of `parent`'s child processes, from /proc (no procps needed)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    children.append(entry)
        except (OSError, IndexError, ValueError):
            pass
    return children


def rank_pid(job, rank):
    """The process id of `rank` among the job's processes (mpirun's children)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in children_of(job.pid):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                        return int(pid)
            except OSError:
                pass
        time.sleep(0.05)
    fail(f"no process of rank {rank} among mpirun's children")


def stopped_by_rank1(args, checkpoint, json_name):
    job = mpirun(args, ["--checkpoint", checkpoint], json_name)
    stdout = Lines(job.stdout)
    stderr = Lines(job.stderr)
    if stdout.wait_for(r"epoch  1/\d+  \d+ batches", 300) is None:
        job.kill()
        fail(f"no first epoch line:\n{stdout.rest()}\n{stderr.rest()}")
    time.sleep(0.1)  # into the second epoch
    os.kill(rank_pid(job, 1), signal.SIGTERM)
    try:
        code = job.wait(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        fail("the job did not end within 120 s of SIGTERM")
    text, errors = stdout.rest().replace("\r", "\n"), stderr.rest()
    stop = checkpoint_position(checkpoint)
    where = re.search(rf"stopped by SIGTERM after (\d+) of {EPOCHS} epochs, at batch (\d+), checkpoint ", text)
    if where is not None and (int(where.group(1)), int(where.group(2))) != stop:
        fail(f"the checkpoint is at {stop}, rank 0 says it stopped at {where.group(0)}")
    if where is None:
        fail(f"rank 0 does not say where it stopped (exit status {code}):\n{text}\n{errors}")
    left = [name for name in entries(args.scratch) if name.startswith("run.ckpt")]
    if left != ["run.ckpt"]:
        fail(f"beside the checkpoint: {left}")
    return code, stop, text, errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--train-cnn", required=True)
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    checkpoint = os.path.join(args.scratch, "run.ckpt")

    unbroken = mpirun(args, [], "unbroken.json")
    out, err = unbroken.communicate(timeout=600)
    if unbroken.returncode != 0:
        fail(f"the unbroken run failed ({unbroken.returncode}):\n{out}\n{err}")
    unbroken_losses, _ = train_losses(os.path.join(args.scratch, "unbroken.json"))

    # 1. One rank signalled: both stop at its step.
    code, stop, text, errors = stopped_by_rank1(args, checkpoint, "stopped.json")
    if code != 128 + signal.SIGTERM:
        fail(f"the job's exit status is {code}, not 143:\n{errors}")
    if errors.count("SIGTERM received: stopping after this step") != 1:
        fail(f"not exactly one rank was signalled:\n{errors}")
    stopped_losses, _ = train_losses(os.path.join(args.scratch, "stopped.json"))
    resumed = mpirun(args, ["--checkpoint", checkpoint, "--resume"], "resumed.json")
    out, err = resumed.communicate(timeout=600)
    if resumed.returncode != 0:
        fail(f"the resumed run failed ({resumed.returncode}):\n{out}\n{err}")
    resumed_losses, _ = train_losses(os.path.join(args.scratch, "resumed.json"))
    if stopped_losses + resumed_losses != unbroken_losses:
        fail(f"{len(stopped_losses)} + {len(resumed_losses)} losses differ from the unbroken run's "
             f"{len(unbroken_losses)}")
    print(f"rank 1 signalled: the job ended with status {code}; rank 0 stopped at epoch {stop[0]} batch {stop[1]} "
          f"with the checkpoint there; resumed, {len(stopped_losses)} + {len(resumed_losses)} losses equal the "
          f"unbroken run's {len(unbroken_losses)} bit for bit")

    # 2. The job signalled through mpirun. Open MPI then sends SIGCONT,
    # waits odls_base_sigkill_timeout seconds (forwarding no output), sends
    # SIGTERM to every rank, waits as long again and kills what is left: the
    # ranks must stop and save within that second wait.
    os.remove(checkpoint)
    timeout = 3
    job = mpirun(args, ["--checkpoint", checkpoint], "stopped_job.json", timeout, epochs=1000)
    stdout = Lines(job.stdout)
    Lines(job.stderr)  # read, so that mpirun never waits to write it
    if stdout.wait_for(r"epoch  1/\d+  \d+ batches", 300) is None:
        job.kill()
        fail(f"no first epoch line:\n{stdout.rest()}")
    signalled = time.time()
    job.send_signal(signal.SIGTERM)
    code = job.wait(timeout=120)
    ended = time.time() - signalled
    written = os.path.getmtime(checkpoint) - signalled
    stop = checkpoint_position(checkpoint)
    if code == 0:
        fail("the job ended with status 0 after SIGTERM")
    if written < timeout - 0.5:
        fail(f"the checkpoint was written {written:.1f} s after mpirun was signalled, before the ranks were "
             f"(after {timeout} s): it is not where they stopped")
    left = [name for name in entries(args.scratch) if name.startswith("run.ckpt")]
    if left != ["run.ckpt"]:
        fail(f"beside the checkpoint: {left}")
    resumed = mpirun(args, ["--checkpoint", checkpoint, "--resume"], "resumed_job.json", epochs=stop[0] + 1)
    out, err = resumed.communicate(timeout=600)
    if resumed.returncode != 0 or not re.search(rf"resumed from {checkpoint}: {stop[0]} epochs done", out):
        fail(f"the job's checkpoint does not resume ({resumed.returncode}):\n{out}\n{err}")
    print(f"mpirun signalled: the ranks heard SIGTERM {timeout} s later and wrote one checkpoint {written:.1f} s "
          f"after the signal, at epoch {stop[0]} batch {stop[1]}; nothing else beside it, and it resumes; the job "
          f"ended after {ended:.1f} s with mpirun's status {code}")
    shutil.rmtree(args.scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
