#!/usr/bin/env python3
"""The cost account of tools/results_charts.py (where the best policy's time
goes below the footprint): per emulated model it must take the smallest fast
tier below the footprint and there the lowest geometric-mean ratio, skip
rows that are modeled, out of memory, at the footprint or recorded before
the benchmark kept the baseline's time, and state each cost as a share of
that row's own all-fast time."""
import argparse
import sys
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--tools", required=True, type=Path)
args = parser.parse_args()
sys.path.insert(0, str(args.tools))
import results_charts  # noqa: E402


def row(model, policy, fraction, mean, seconds, **costs):
    r = {"kind": "emulated", "model": model, "policy": policy, "fast_fraction": fraction,
         "slowdown_mean": mean, "seconds": seconds, "all_fast_seconds": 0.2}
    r.update(costs)
    return r


rows = [
    row("net-a", "ca-lm", 1.0, 0.99, 0.198),  # at the footprint: not an account
    row("net-a", "ca-lm", 0.5, 1.01, 0.202),  # a larger tier than the smallest
    row("net-a", "ca-lm", 0.2, 1.30, 0.26, copy_cpu_seconds=0.0, slow_kernel_seconds=0.05,
        exposed_copy_seconds=0.01),
    row("net-a", "redl", 0.2, 1.20, 0.24, copy_cpu_seconds=0.02, slow_kernel_seconds=0.002,
        exposed_copy_seconds=0.004),
    row("net-a", "all-fast", 0.2, None, None),  # out of memory below the footprint
    dict(row("net-a", "first-touch", 0.2, 1.05, 0.21), kind="modeled"),  # a replay, not a measurement
    row("net-b", "ca-lma", 0.2, 1.10, 0.22, copy_cpu_seconds=0.01, slow_kernel_seconds=0.0,
        exposed_copy_seconds=0.0),
    {k: v for k, v in row("net-c", "ca-lm", 0.2, 1.0, 0.2).items() if k != "all_fast_seconds"},
]

chosen = results_charts._best_below_footprint(rows)
picked = [(r["model"], r["policy"], r["fast_fraction"]) for r in chosen]
if picked != [("net-a", "redl", 0.2), ("net-b", "ca-lma", 0.2)]:
    sys.exit(f"cost_account_chart_test: picked {picked}, expected redl on net-a and ca-lma on net-b at 20%")
if not results_charts.has_cost_account(rows) or results_charts.has_cost_account(rows[:1]):
    sys.exit("cost_account_chart_test: has_cost_account must hold with a row below the footprint, only then")
headline = results_charts.headline_cost_account(rows)
for part in ("net-a, redl: gap 20%; mover copying 10%, slow tier in place 1%, exposed copies 2%",
             "net-b, ca-lma: gap 10%; mover copying 5%, slow tier in place 0%, exposed copies 0%"):
    if part not in headline:
        sys.exit(f"cost_account_chart_test: the headline lacks {part!r}:\n{headline}")
if "net-c" in headline:
    sys.exit(f"cost_account_chart_test: a row without the baseline's time was accounted:\n{headline}")
results_charts.draw_cost_account(rows)  # draws without error
print("cost_account_chart_test: passed")
