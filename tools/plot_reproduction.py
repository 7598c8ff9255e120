#!/usr/bin/python3
"""Plots bench/paper_reproduction --json output, for each (kind, model):
  <kind>_<model>.png          the slowdown against all-fast of every policy
                              over the fast budget (the paper's sensitivity
                              figure, IV-B);
  <kind>_<model>_traffic.png  bytes read and written per tier by each policy
                              at one budget: the paper's 180 GB for its
                              configurations, else 20% of the footprint (the
                              paper's Figure 5).
Run with Debian's interpreter (python3-matplotlib):

    /usr/bin/python3 tools/plot_reproduction.py results.json out_dir/
"""
import argparse
import collections
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="paper_reproduction --json output")
    parser.add_argument("out_dir", help="directory for the PNGs")
    args = parser.parse_args()
    with open(args.json) as f:
        document = json.load(f)
    # The benchmark's JSON holds the machine beside the rows; a bare list is an older file.
    rows = document["rows"] if isinstance(document, dict) else document
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        if r.get("slowdown_vs_all_fast") is None:
            continue
        groups[(r["kind"], r["model"])][r["policy"]].append((r["fast_fraction"], r["slowdown_vs_all_fast"]))
    if not groups:
        print(f"plot_reproduction: {args.json} has no rows with a slowdown", file=sys.stderr)
        return 1
    os.makedirs(args.out_dir, exist_ok=True)
    for (kind, model), policies in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(8, 5))
        for policy, points in sorted(policies.items()):
            points.sort()
            ax.plot([100 * x for x, _ in points], [y for _, y in points], marker="o", label=policy)
        ax.set_xlabel("fast tier (% of the footprint)")
        ax.set_ylabel("slowdown against all-fast")
        label = "slow tier emulated as Optane (measured)" if kind == "emulated" else "modeled (replay / 2LM model)"
        ax.set_title(f"{model}: {label}")
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
        ax.legend(ncol=2, fontsize="small")
        fig.tight_layout()
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"{kind}_{model}").strip("_") + ".png"
        path = os.path.join(args.out_dir, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"plot_reproduction: wrote {path}")
    for path in plot_traffic(rows, args.out_dir):
        print(f"plot_reproduction: wrote {path}")
    return 0


def plot_traffic(rows, out_dir):
    """Grouped bars of fast/slow bytes read/written per policy at one budget."""
    groups = collections.defaultdict(list)
    for r in rows:
        if r.get("seconds") is None:
            continue
        at_budget = r.get("paper_budget") or (abs(r["fast_fraction"] - 0.2) < 1e-9 and not any(
            q.get("paper_budget") and q["model"] == r["model"] for q in rows))
        if at_budget:
            groups[(r["kind"], r["model"])].append(r)
    paths = []
    series = [("fast_bytes_read", "fast read"), ("fast_bytes_written", "fast written"),
              ("slow_bytes_read", "slow read"), ("slow_bytes_written", "slow written")]
    for (kind, model), group in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(9, 5))
        width = 0.8 / len(series)
        for i, (key, name) in enumerate(series):
            ax.bar([x + i * width for x in range(len(group))], [r[key] / 2**30 for r in group], width, label=name)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(group))])
        ax.set_xticklabels([r["policy"] for r in group], rotation=30)
        ax.set_ylabel("GiB per iteration")
        fraction = group[0]["fast_fraction"]
        label = "emulated Optane (measured)" if kind == "emulated" else "modeled"
        ax.set_title(f"{model}: traffic per tier, fast tier {100 * fraction:.0f}% of the footprint, {label}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"{kind}_{model}").strip("_") + "_traffic.png"
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


if __name__ == "__main__":
    sys.exit(main())
