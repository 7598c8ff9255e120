#!/usr/bin/python3
"""Plots bench/paper_reproduction --json output: for each (kind, model), the
slowdown against all-fast of every policy over the fast budget (the paper's
sensitivity figure, IV-B), one PNG per model in the output directory.
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
        rows = json.load(f)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
