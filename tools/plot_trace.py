#!/usr/bin/python3
"""Draws a cachedarrays trace or memory snapshot as a PNG. Run with Debian's
interpreter: /usr/bin/python3, which has python3-matplotlib.

A trace (CSV from Trace::write_csv / train_cnn --trace FILE.csv): heap
occupancy per device over the recorded interval (the paper's Figure 5 kind
of picture) and bytes copied per device pair (Figure 6 kind).

    /usr/bin/python3 tools/plot_trace.py run.csv out.png [--names fast,slow]

A memory snapshot (JSON from write_memory_snapshot, or the file an
out_of_memory names when the runtime has a snapshot directory): per device
a bar of its heap, used and free, with each live object at its offset
(pinned, retired and copies marked), and the timeline of the last trace
events when the snapshot holds any.

    /usr/bin/python3 tools/plot_trace.py --snapshot snap.json -o out.png
"""
import argparse
import collections
import csv
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches as mpatches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

# The memory snapshot versions this script reads (memory_snapshot.hpp:
# memory_snapshot_format_version).
SNAPSHOT_FORMAT = "cachedarrays memory snapshot"
SNAPSHOT_VERSIONS = (1,)

COLOR_FREE = "white"
COLOR_UNOWNED = "0.35"
COLOR_PINNED = "tab:red"
COLOR_RETIRED = "0.75"
OBJECT_COLORS = ["tab:blue", "tab:green", "tab:purple", "tab:olive", "tab:cyan", "tab:brown", "tab:pink"]


class SnapshotError(Exception):
    """A snapshot this script cannot draw; the message says why."""


def format_bytes(n):
    """1.50 GiB style, as the library's messages write sizes."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"


def plot_trace_csv(args):
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


def field(obj, key, where):
    """obj[key], or a SnapshotError naming the missing field."""
    if not isinstance(obj, dict) or key not in obj:
        raise SnapshotError(f"{where}: missing field '{key}'")
    return obj[key]


def load_snapshot(path):
    """The snapshot's JSON, checked for what drawing it reads."""
    try:
        with open(path) as f:
            snap = json.load(f)
    except OSError as e:
        raise SnapshotError(f"cannot read {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{path} is not JSON: {e}") from e
    if field(snap, "format", path) != SNAPSHOT_FORMAT:
        raise SnapshotError(f"{path}: format is '{snap['format']}', not a {SNAPSHOT_FORMAT}")
    version = field(snap, "format_version", path)
    if version not in SNAPSHOT_VERSIONS:
        raise SnapshotError(f"{path}: format_version {version} is not one this script reads "
                            f"({', '.join(map(str, SNAPSHOT_VERSIONS))}); update tools/plot_trace.py")
    for i, d in enumerate(field(snap, "devices", path)):
        for key in ("device", "name", "kind", "capacity", "bytes_used", "largest_free_block", "live_regions",
                    "unowned_regions"):
            field(d, key, f"{path}: devices[{i}]")
    for i, o in enumerate(field(snap, "objects", path)):
        for key in ("id", "bytes", "primary", "secondaries", "pinned", "retired", "last_hint"):
            field(o, key, f"{path}: objects[{i}]")
    trace = field(snap, "trace", path)
    for i, e in enumerate(field(trace, "events", f"{path}: trace")):
        for key in ("ns", "kind", "name", "object"):
            field(e, key, f"{path}: trace.events[{i}]")
    return snap


def object_color(obj):
    if obj["pinned"]:
        return COLOR_PINNED
    if obj["retired"]:
        return COLOR_RETIRED
    return OBJECT_COLORS[obj["id"] % len(OBJECT_COLORS)]


def draw_device(ax, device, objects):
    """One device's heap as a bar from offset 0 to its capacity."""
    capacity = max(device["capacity"], 1)
    ax.broken_barh([(0, capacity)], (0, 1), facecolors=COLOR_FREE, edgecolors="black", linewidth=0.8)
    unowned = [(r["offset"], r["bytes"]) for r in device["unowned_regions"]]
    if unowned:
        ax.broken_barh(unowned, (0, 1), facecolors=COLOR_UNOWNED)
    primaries, colors, copies = [], [], []
    for o in objects:
        p = o["primary"]
        if p is not None and p["device"] == device["device"]:
            primaries.append((p["offset"], o["bytes"]))
            colors.append(object_color(o))
        for s in o["secondaries"]:
            if s["device"] == device["device"]:
                copies.append((s["offset"], o["bytes"]))
    if primaries:
        ax.broken_barh(primaries, (0, 1), facecolors=colors, edgecolors="white", linewidth=0.3)
    if copies:
        ax.broken_barh(copies, (0, 1), facecolors="none", edgecolors="tab:blue", hatch="///", linewidth=0.3)
    # Names on the objects wide enough to hold one.
    for o in objects:
        p = o["primary"]
        if p is not None and p["device"] == device["device"] and o["bytes"] >= capacity * 0.06:
            ax.text(p["offset"] + o["bytes"] / 2, 0.5, f"#{o['id']}", ha="center", va="center", fontsize=7,
                    color="white" if not o["retired"] else "black", clip_on=True)
    ax.set_xlim(0, capacity)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ticks = [capacity * i / 4 for i in range(5)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([format_bytes(int(t)) for t in ticks], fontsize=7)
    ax.set_title(f"device {device['device']} '{device['name']}' ({device['kind']}): "
                 f"{format_bytes(device['bytes_used'])} used of {format_bytes(device['capacity'])}, "
                 f"largest free block {format_bytes(device['largest_free_block'])}, "
                 f"{device['live_regions']} live region{'' if device['live_regions'] == 1 else 's'}", fontsize=9,
                 loc="left")


def draw_timeline(ax, events):
    """The last trace events: kernels as spans, the rest as marks per kind."""
    t0 = events[0]["ns"]
    ms = lambda e: (e["ns"] - t0) / 1e6  # noqa: E731
    lanes = {}
    open_kernels = []
    spans = []
    marks = collections.defaultdict(list)
    for e in events:
        if e["kind"] == "kernel_begin":
            open_kernels.append(e)
        elif e["kind"] == "kernel_end":
            for i in range(len(open_kernels) - 1, -1, -1):
                if open_kernels[i]["name"] == e["name"]:
                    spans.append((ms(open_kernels[i]), max(ms(e) - ms(open_kernels[i]), 1e-4)))
                    del open_kernels[i]
                    break
        else:
            kind = f"hint {e['hint']}" if e["kind"] == "hint" and "hint" in e else e["kind"]
            marks[kind].append(ms(e))
    # A kernel without an end (a read()/write() access, or one still open) is a mark.
    for e in open_kernels:
        marks[f"{e['name'] or 'kernel'} (no end)"].append(ms(e))
    if spans:
        lanes["kernels"] = len(lanes)
        ax.broken_barh(spans, (lanes["kernels"] - 0.3, 0.6), facecolors="tab:blue")
    for kind in sorted(marks):
        lanes[kind] = len(lanes)
        ax.plot(marks[kind], [lanes[kind]] * len(marks[kind]), "|", markersize=10)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(list(lanes), fontsize=7)
    ax.set_ylim(-0.7, max(len(lanes), 1) - 0.3)
    ax.set_xlabel("time since the first event shown (ms)")


def plot_snapshot(args):
    try:
        snap = load_snapshot(args.snapshot)
    except SnapshotError as e:
        print(f"plot_trace: {e}", file=sys.stderr)
        return 1
    devices, objects = snap["devices"], snap["objects"]
    events = snap["trace"]["events"]
    rows = len(devices) + (1 if events else 0)
    ratios = [1] * len(devices) + ([max(2, len(devices))] if events else [])
    fig, axes = plt.subplots(max(rows, 1), 1, figsize=(11, 1.4 * len(devices) + (3 if events else 0) + 1.2),
                             gridspec_kw={"height_ratios": ratios or [1]}, squeeze=False)
    axes = [a[0] for a in axes]
    for ax, device in zip(axes, devices):
        draw_device(ax, device, objects)
    if events:
        draw_timeline(axes[-1], events)
        total = snap["trace"].get("events_total", len(events))
        axes[-1].set_title(f"the last {len(events)} of {total} trace events", fontsize=9, loc="left")
    reason = snap.get("reason", "request")
    what = (f"out of memory asking {format_bytes(snap.get('requested_bytes', 0))}" if reason == "out_of_memory"
            else "on request")
    fig.suptitle(args.title or f"memory snapshot ({what}): policy {snap.get('policy', '?')}, "
                 f"iteration {snap.get('iteration', '?')}, {len(objects)} live objects", fontsize=11)
    legend = [mpatches.Patch(facecolor=OBJECT_COLORS[0], label="object (primary), a colour per id"),
              mpatches.Patch(facecolor=COLOR_PINNED, label="pinned"),
              mpatches.Patch(facecolor=COLOR_RETIRED, label="retired, awaiting collection"),
              mpatches.Patch(facecolor="none", edgecolor="tab:blue", hatch="///", label="copy (secondary)"),
              mpatches.Patch(facecolor=COLOR_UNOWNED, label="no object's"),
              mpatches.Patch(facecolor=COLOR_FREE, edgecolor="black", label="free")]
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    fig.savefig(args.output, dpi=110)
    print(f"plot_trace: wrote {args.output} ({len(devices)} devices, {len(objects)} objects, "
          f"{len(events)} trace events)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", help="trace CSV")
    parser.add_argument("png", nargs="?", help="output PNG (of the trace)")
    parser.add_argument("--names", default="", help="device names, comma separated (default: device 0, 1, ...)")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument("--snapshot", help="draw this memory snapshot JSON instead of a trace")
    parser.add_argument("-o", "--output", help="output PNG (of the snapshot)")
    args = parser.parse_args()
    if args.snapshot:
        if args.trace or args.png:
            parser.error("--snapshot draws one snapshot: give no trace CSV beside it")
        if not args.output:
            parser.error("--snapshot needs -o OUT.png")
        return plot_snapshot(args)
    if not args.trace or not args.png:
        parser.error("give a trace CSV and an output PNG, or --snapshot FILE -o OUT.png")
    return plot_trace_csv(args)


if __name__ == "__main__":
    sys.exit(main())
