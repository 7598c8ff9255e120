#!/usr/bin/python3
"""Checks that cachedarrays-plan and paper_reproduction --no-emulated agree
exactly on the same configuration: it runs both on a tiny ResNet
at the same fast-tier fractions, compute rate and policies, and requires
every point of the plan's JSON to have a modeled row of the reproduction's
with the same policy and fraction, and the same seconds (both null when out
of memory), fast-tier bytes and traffic, bit for bit.

    plan_matches_reproduction.py --plan EXE --reproduction EXE --scratch DIR
"""
import argparse
import json
import os
import subprocess
import sys

MODEL = ["--batch", "4", "--image-size", "32", "--width", "0.25"]
FRACTIONS = "0.1,0.2,0.5,1"
GFLOPS = "50"
# The policies whose runs are exact: everything but AutoTM, whose solve stops at a time limit.
POLICIES = ("all-fast,all-slow,first-touch,hw-cache,2lm:m,ca,ca-l,ca-lm,ca-lmp,ca-lma,ca-lmpa,planned,planned-a,"
            "autoswap:swdoa,redl,2lm")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} exited with {result.returncode}:\n{result.stdout}\n{result.stderr}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    parser.add_argument("--reproduction", required=True)
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    plan_path = os.path.join(args.scratch, "plan.json")
    reproduction_path = os.path.join(args.scratch, "reproduction.json")
    for stale in (plan_path, reproduction_path):
        if os.path.exists(stale):
            os.remove(stale)
    run([args.plan, "--model", "resnet", "--depth", "18", "--classes", "10", *MODEL, "--fractions", FRACTIONS,
         "--gflops", GFLOPS, "--policies", POLICIES, "--quiet", "--json", plan_path])
    run([args.reproduction, "--quick", "--no-emulated", "--no-paper", "--models", "resnet", "--fractions", FRACTIONS,
         "--paper-gflops", GFLOPS, "--policies", POLICIES, "--json", reproduction_path])

    with open(plan_path) as f:
        plan = json.load(f)
    with open(reproduction_path) as f:
        document = json.load(f)
    # The rows sit beside the machine the benchmark ran on.
    rows = [r for r in document["rows"] if r["kind"] == "modeled"]
    by_key = {(r["policy"], r["fast_fraction"]): r for r in rows}
    fields = [("seconds", "seconds"), ("fast_bytes", "fast_bytes"), ("fast_read", "fast_bytes_read"),
              ("fast_written", "fast_bytes_written"), ("slow_read", "slow_bytes_read"),
              ("slow_written", "slow_bytes_written")]
    compared = 0
    for point in plan["points"]:
        key = (point["policy"], point["fraction"])
        row = by_key.get(key)
        if row is None:
            sys.exit(f"point {key} of the plan has no modeled row in the reproduction")
        for mine, theirs in fields:
            if point[mine] != row[theirs]:
                sys.exit(f"{key}: {mine} {point[mine]!r} in the plan, {theirs} {row[theirs]!r} in the reproduction")
        compared += 1
    expected = len(POLICIES.split(",")) * len(FRACTIONS.split(","))
    if compared != expected:
        sys.exit(f"{compared} points compared, {expected} expected")
    all_fast = by_key.get(("all-fast", 1.0))
    if all_fast is None or all_fast["seconds"] != plan["all_fast_seconds"]:
        sys.exit(f"all-fast: {plan['all_fast_seconds']!r} s in the plan, "
                 f"{all_fast and all_fast['seconds']!r} in the reproduction")
    print(f"plan_matches_reproduction: {compared} points and all-fast identical")


if __name__ == "__main__":
    main()
