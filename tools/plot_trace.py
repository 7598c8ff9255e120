#!/usr/bin/python3
"""Draws a cachedarrays trace (CSV from Trace::write_csv / train_cnn --trace
FILE.csv) as a PNG: heap occupancy per device over the recorded interval
(the paper's Figure 5 kind of picture) and bytes copied per device pair
(Figure 6 kind). Run with Debian's interpreter: /usr/bin/python3, which has
python3-matplotlib.

    /usr/bin/python3 tools/plot_trace.py run.csv out.png [--names fast,slow]
"""
import argparse
import collections
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="trace CSV")
    parser.add_argument("png", help="output PNG")
    parser.add_argument("--names", default="", help="device names, comma separated (default: device 0, 1, ...)")
    parser.add_argument("--title", default="", help="figure title")
    args = parser.parse_args()

    occupancy = collections.defaultdict(int)
    series = collections.defaultdict(lambda: ([], []))
    traffic = collections.Counter()
    kernels = 0
    with open(args.trace, newline="") as f:
        for row in csv.DictReader(f):
            kind, device, t = row["kind"], int(row["device"]), int(row["ns"]) / 1e6
            if kind == "initial":
                occupancy[device] = int(row["bytes"])
            elif kind in ("allocate", "free"):
                occupancy[device] += int(row["bytes"]) if kind == "allocate" else -int(row["bytes"])
            elif kind == "copy":
                traffic[(device, int(row["device2"]))] += int(row["bytes"])
                continue
            elif kind == "kernel_begin":
                kernels += 1
                continue
            else:
                continue
            xs, ys = series[device]
            xs.append(t)
            ys.append(occupancy[device] / 2**20)
    if not series:
        print(f"plot_trace: {args.trace} has no allocation events", file=sys.stderr)
        return 1
    names = args.names.split(",") if args.names else []
    name = lambda d: names[d] if d < len(names) else f"device {d}"  # noqa: E731

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), gridspec_kw={"height_ratios": [2, 1]})
    for device, (xs, ys) in sorted(series.items()):
        top.step(xs, ys, where="post", label=name(device))
    top.set_xlabel("time (ms)")
    top.set_ylabel("bytes in use (MiB)")
    top.set_title(args.title or f"heap occupancy over the recorded interval ({kernels} kernels)")
    top.legend()
    pairs = sorted(traffic)
    bottom.bar([f"{name(s)} -> {name(d)}" for s, d in pairs], [traffic[p] / 2**20 for p in pairs])
    bottom.set_ylabel("bytes copied (MiB)")
    bottom.set_title("traffic per device pair")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"plot_trace: wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
