"""The headline figures of docs/results/ as charts: one PNG per headline,
drawn from the recorded benchmark JSON (docs/results/data/<name>.json), and
the sentence that states its number on the summary page.

Used by tools/render_results.py. The PNGs are committed and compared byte
for byte by the `results.rendered` test, so each is drawn the same way on
every run with the same Debian packages: the Agg backend, matplotlib's
default style whatever a matplotlibrc says, a fixed size and dpi, no
"Software" or date in the file's metadata, and every series in a fixed
order.
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams.update(matplotlib.rcParamsDefault)
matplotlib.rcParams["backend"] = "Agg"
import matplotlib.pyplot as plt  # noqa: E402

DPI = 100
# A PNG holds no date by default; the Software entry names matplotlib's
# version, which would make an upgrade look like a change of figures.
METADATA = {"Software": None}


@dataclass(frozen=True)
class Chart:
    """One headline: the PNG `name` drawn from the recorded files `data`
    (all of them must exist), what it shows, its headline sentence, and
    whether the files hold what it draws."""
    name: str
    data: tuple[str, ...]
    title: str
    draw: Callable[..., plt.Figure]
    headline: Callable[..., str]
    # Whether the files hold what the chart draws (a file of the right
    # benchmark may have been run without it).
    applies: Callable[..., bool] = lambda *data: True


def _save(fig: plt.Figure, path: Path) -> None:
    fig.savefig(path, dpi=DPI, metadata=METADATA)
    plt.close(fig)


def _colours(names: list[str]) -> dict[str, tuple]:
    """A colour per name, in the order given, so that a chart's legend and
    lines match from run to run."""
    cmap = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def _in_order(values) -> list:
    """The values without repeats, in the order the benchmark wrote them."""
    return list(dict.fromkeys(values))


# --- slowdown against the fast tier's size, per policy (CachedArrays IV-B) ---

def _slowdown_groups(rows: list[dict]) -> dict:
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        if r.get("slowdown_vs_all_fast") is None or r.get("autotm_figure1"):
            continue
        # The 90% interval of the paired ratio, where the benchmark gave one.
        low, high = r.get("slowdown_interval_low"), r.get("slowdown_interval_high")
        interval = (low, high) if low is not None and high is not None and low < high else None
        groups[(r["kind"], r["model"])][r["policy"]].append(
            (r["fast_fraction"], r["slowdown_vs_all_fast"], interval))
    # A model measured at one size only draws no line.
    return {key: policies for key, policies in groups.items()
            if len({point[0] for points in policies.values() for point in points}) > 1}


def has_slowdown(rows) -> bool:
    return isinstance(rows, list) and bool(_slowdown_groups(rows))


def draw_slowdown(rows: list[dict]) -> plt.Figure:
    groups = _slowdown_groups(rows)
    keys = _in_order((r["kind"], r["model"]) for r in rows if (r["kind"], r["model"]) in groups)
    policies = _in_order(r["policy"] for r in rows if r["policy"] in groups.get((r["kind"], r["model"]), {}))
    colours = _colours(policies)
    columns = min(3, len(keys))
    lines = math.ceil(len(keys) / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4 * columns + 2, 3.2 * lines), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for policy in policies:
            points = sorted(groups[key].get(policy, []))
            if points:
                ax.plot([100 * x for x, _, _ in points], [y for _, y, _ in points], marker="o",
                        color=colours[policy], label=policy)
                for x, y, interval in points:
                    if interval is not None:
                        # The interval is about the geometric mean, the point the median: an
                        # end past the point draws no whisker rather than a negative one.
                        below, above = max(0.0, y - interval[0]), max(0.0, interval[1] - y)
                        ax.errorbar([100 * x], [y], yerr=[[below], [above]], fmt="none",
                                    ecolor=colours[policy], capsize=3, linewidth=1)
        kind, model = key
        ax.set_title(f"{model} ({kind})", fontsize="medium")
        ax.set_xlabel("fast tier (% of the footprint)")
        ax.set_ylabel("slowdown against all-fast")
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], color=colours[p], marker="o") for p in policies]
    fig.legend(handles, policies, loc="center right", fontsize="small")
    fig.tight_layout(rect=(0, 0, 1 - 1.6 / (4 * columns + 2), 1))
    return fig


def headline_slowdown(rows: list[dict]) -> str:
    """At the smallest fast tier, the best policy and first-touch, per model."""
    parts, fractions = [], set()
    for (kind, model), policies in sorted(_slowdown_groups(rows).items()):
        smallest = min(x for points in policies.values() for x, _, _ in points)
        fractions.add(smallest)
        at = {p: (y, interval) for p, points in policies.items() for x, y, interval in points
              if x == smallest and p != "all-fast"}
        if not at:
            continue
        best = min(at, key=lambda p: (at[p][0], p))
        y, interval = at[best]
        text = f"{model}, {kind}: {best} {y:.2f}x"
        if interval is not None:
            text += f" [90%: {interval[0]:.2f}-{interval[1]:.2f}]"
        if "first-touch" in at and best != "first-touch":
            text += f" (first-touch {at['first-touch'][0]:.2f}x)"
        parts.append(text)
    sizes = " or ".join(f"{100 * f:.0f}%" for f in sorted(fractions))
    return f"With {sizes} of the footprint fast, the best policy against all-fast: " + "; ".join(parts) + "."


# --- where the best policy's time goes: the gap beside what its counters charge ---

COSTS = (("copy_cpu_seconds", "mover copying"), ("slow_kernel_seconds", "slow tier in place"),
         ("exposed_copy_seconds", "exposed copies"))


def _best_below_footprint(rows: list[dict]) -> list[dict]:
    """Per emulated model, at its smallest fast tier below the footprint,
    the policy with the lowest geometric-mean ratio to all-fast, in the
    order the models first appear."""
    best: dict[str, dict] = {}
    for r in rows:
        if (r.get("kind") != "emulated" or r.get("fast_fraction", 1) >= 1 or r.get("slowdown_mean") is None
                or r.get("all_fast_seconds") is None):
            continue
        held = best.get(r["model"])
        if (held is None or r["fast_fraction"] < held["fast_fraction"]
                or (r["fast_fraction"] == held["fast_fraction"] and r["slowdown_mean"] < held["slowdown_mean"])):
            best[r["model"]] = r
    return [best[m] for m in _in_order(r["model"] for r in rows) if m in best]


def has_cost_account(rows) -> bool:
    return isinstance(rows, list) and bool(_best_below_footprint(rows))


def draw_cost_account(rows: list[dict]) -> plt.Figure:
    chosen = _best_below_footprint(rows)
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.9 * len(chosen)))
    colours = _colours([label for _, label in COSTS])
    for i, r in enumerate(chosen):
        base = r["all_fast_seconds"]
        gap = 100 * (r["seconds"] / base - 1)
        ax.barh(2 * i, gap, color="0.6", height=0.8)
        ax.text(max(gap, 0), 2 * i, f" {gap:.1f}%", va="center", fontsize="small")
        left = 0.0
        for key, label in COSTS:
            width = 100 * max(0.0, r.get(key, 0.0)) / base
            ax.barh(2 * i + 0.9, width, left=left, color=colours[label], height=0.8)
            left += width
        ax.text(left, 2 * i + 0.9, f" {left:.1f}%", va="center", fontsize="small")
    ax.set_yticks([2 * i + 0.45 for i in range(len(chosen))],
                  [f"{r['model']}\n{r['policy']} at {100 * r['fast_fraction']:.0f}%" for r in chosen],
                  fontsize="small")
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("% of the all-fast iteration (grey: the measured gap; coloured: what the counters charge)")
    handles = [plt.Rectangle((0, 0), 1, 1, color="0.6")] + [plt.Rectangle((0, 0), 1, 1, color=colours[label])
                                                           for _, label in COSTS]
    ax.legend(handles, ["gap to all-fast"] + [label for _, label in COSTS], fontsize="small", loc="upper left",
              bbox_to_anchor=(1.01, 1))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def headline_cost_account(rows: list[dict]) -> str:
    parts = []
    for r in _best_below_footprint(rows):
        base = r["all_fast_seconds"]
        costs = ", ".join(f"{label} {100 * r.get(key, 0.0) / base:.0f}%" for key, label in COSTS)
        parts.append(f"{r['model']}, {r['policy']}: gap {100 * (r['seconds'] / base - 1):.0f}%; {costs}")
    return ("As shares of the all-fast iteration, per network at its smallest fast tier, the best policy: "
            + "; ".join(parts) + ".")


# --- AutoTM Figure 1: each policy against all-fast on Inception v4 ---------

def _figure1(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("autotm_figure1") and r.get("slowdown_vs_all_fast") is not None]


def draw_figure1(rows: list[dict]) -> plt.Figure:
    chosen = _figure1(rows)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    names = [r["policy"] for r in chosen]
    values = [r["slowdown_vs_all_fast"] for r in chosen]
    colours = _colours(names)
    ax.barh(range(len(chosen)), values, color=[colours[n] for n in names])
    ax.set_yticks(range(len(chosen)), names)
    ax.invert_yaxis()
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}x", va="center", fontsize="small")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlim(0, max(values) * 1.15)
    ax.set_xlabel("slowdown against all-fast (modeled)")
    ax.set_title(f"AutoTM Figure 1: {chosen[0]['model']}, {100 * chosen[0]['fast_fraction']:.0f}% fast",
                 fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def headline_figure1(rows: list[dict]) -> str:
    chosen = {r["policy"]: r["slowdown_vs_all_fast"] for r in _figure1(rows)}
    best = min(chosen, key=lambda p: (chosen[p], p))
    slow = f", all-slow {chosen['all-slow']:.2f}x" if "all-slow" in chosen else ""
    return (f"AutoTM's Figure 1 ({_figure1(rows)[0]['model']}, modeled): {best} {chosen[best]:.2f}x all-fast"
            f"{slow}.")


def has_figure1(rows) -> bool:
    return isinstance(rows, list) and bool(_figure1(rows))


# --- the apps: each policy's slowdown on each app, as a heat map ---------

def _app_slowdowns(figures: dict) -> dict:
    """(table fraction) -> {(app, policy): slowdown against the app's all-fast}."""
    fast = {(r["app"], r["table_fraction"]): r["seconds_per_iteration"] for r in figures["rows"]
            if r["policy"] == "all-fast" and r.get("verified") and not r.get("failure")}
    tables = collections.defaultdict(dict)
    for r in figures["rows"]:
        base = fast.get((r["app"], r["table_fraction"]))
        if r["policy"] == "all-fast" or not base:
            continue
        ok = r.get("verified") and not r.get("failure") and r.get("seconds_per_iteration")
        tables[r["table_fraction"]][(r["app"], r["policy"])] = r["seconds_per_iteration"] / base if ok else None
    return tables


def draw_app_heatmap(figures: dict) -> plt.Figure:
    tables = _app_slowdowns(figures)
    apps = _in_order(r["app"] for r in figures["rows"])
    policies = _in_order(r["policy"] for r in figures["rows"] if r["policy"] != "all-fast")
    fractions = sorted(tables)
    fig, axes = plt.subplots(len(fractions), 1, figsize=(11, 0.45 * len(apps) * len(fractions) + 1.6 * len(fractions)),
                             squeeze=False)
    cmap = plt.get_cmap("YlOrRd").copy()
    cmap.set_bad("lightgrey")
    top = 4.0
    for ax, fraction in zip(axes.flat, fractions):
        cells = [[tables[fraction].get((a, p)) for p in policies] for a in apps]
        values = [[math.nan if v is None else min(v, top) for v in line] for line in cells]
        image = ax.imshow(values, cmap=cmap, vmin=1.0, vmax=top, aspect="auto")
        ax.set_xticks(range(len(policies)), policies, rotation=45, ha="right", fontsize="small")
        ax.set_yticks(range(len(apps)), apps, fontsize="small")
        for i, line in enumerate(cells):
            for j, v in enumerate(line):
                text = "-" if v is None else f"{v:.1f}" if v < 10 else f"{v:.0f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="white" if v is not None and v > 0.75 * top else "black")
        ax.set_title(f"slowdown against all-fast, {100 * fraction:.0f}% of each app's footprint fast",
                     fontsize="medium")
        fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01)
    fig.tight_layout()
    return fig


def headline_app_heatmap(figures: dict) -> str:
    parts = []
    for fraction, table in sorted(_app_slowdowns(figures).items()):
        by_policy = collections.defaultdict(list)
        for (app, policy), v in table.items():
            by_policy[policy].append(v)
        means = {p: math.exp(sum(math.log(v) for v in vs) / len(vs)) for p, vs in by_policy.items()
                 if vs and all(v is not None and v > 0 for v in vs)}
        if not means:
            continue
        best = min(means, key=lambda p: (means[p], p))
        text = f"at {100 * fraction:.0f}% fast, {best} {means[best]:.2f}x"
        if "first-touch" in means and best != "first-touch":
            text += f" (first-touch {means['first-touch']:.2f}x)"
        parts.append(text)
    return "Geometric mean slowdown over the apps against all-fast, the best policy: " + "; ".join(parts) + "."


# --- hint_overhead: each cost against its goal ---------------------------

def _hint_ratios(figures: dict) -> tuple[list, list]:
    """(what, measured, goal) of the costs (lower is better) and of the
    scaling to two threads (higher is better)."""
    goals = figures.get("goals", {})
    mutex = figures["mutex_ns"]
    costs = [("read guard / mutex", figures["read_guard_ns"] / mutex, goals.get("read_guard_vs_mutex")),
             ("write guard / mutex", figures["write_guard_ns"] / mutex, goals.get("write_guard_vs_mutex")),
             ("hint / mutex", figures["hint_ns"] / mutex, goals.get("hint_vs_mutex")),
             ("3-argument kernel / mutex", figures["kernel3_ns"] / mutex, goals.get("kernel3_vs_mutex")),
             ("allocate+free / malloc+free", figures["alloc_free_ratio"], goals.get("alloc_free_vs_malloc_free"))]
    scaling = []
    for what, work, shared, goal in (("reading, distinct arrays", "read_guard", False, "two_threads_distinct_vs_one"),
                                     ("reading, one array", "read_guard", True, "two_threads_shared_vs_one"),
                                     ("writing, distinct arrays", "write_kernel", False,
                                      "two_threads_writing_vs_one")):
        rows = [r for r in figures.get("threads", []) if r["work"] == work and r["shared"] == shared
                and r["threads"] == 2]
        if rows:
            scaling.append((what, min(r["vs_one"] for r in rows), goals.get(goal)))
    return costs, scaling


def draw_hint_overhead(figures: dict) -> plt.Figure:
    costs, scaling = _hint_ratios(figures)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), width_ratios=(5, 3))
    for ax, items, title in ((left, costs, "cost against the baseline (goal: at most)"),
                             (right, scaling, "2 threads against 1 (goal: at least)")):
        ax.barh(range(len(items)), [m for _, m, _ in items], color="tab:blue", label="measured")
        for i, (_, m, goal) in enumerate(items):
            ax.text(m, i, f" {m:.2f}x", va="center", fontsize="small")
            if goal is not None:
                ax.plot([goal, goal], [i - 0.4, i + 0.4], color="tab:red", linewidth=2)
        ax.set_yticks(range(len(items)), [w for w, _, _ in items], fontsize="small")
        ax.invert_yaxis()
        ax.set_xlim(0, max(max(m for _, m, _ in items), max(g or 0 for _, _, g in items)) * 1.25)
        ax.set_title(title, fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
    left.plot([], [], color="tab:red", linewidth=2, label="goal")
    left.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def headline_hint_overhead(figures: dict) -> str:
    costs, scaling = _hint_ratios(figures)
    met = sum(1 for _, m, g in costs if g is None or m <= g) + sum(1 for _, m, g in scaling if g is None or m >= g)
    return (f"An access guard costs {figures['read_guard_ns'] / figures['mutex_ns']:.2f}x an uncontended mutex, "
            f"a hint {figures['hint_ns'] / figures['mutex_ns']:.2f}x; {met} of {len(costs) + len(scaling)} goals met.")


# --- worker_scaling: speedup over one worker ------------------------------

def draw_worker_scaling(rows: list[dict]) -> plt.Figure:
    policies = _in_order(r["policy"] for r in rows)
    colours = _colours(policies)
    fig, ax = plt.subplots(figsize=(7, 4))
    workers = sorted({r["workers"] for r in rows})
    ax.plot(workers, workers, color="grey", linestyle=":", label="linear")
    for policy in policies:
        points = sorted((r["workers"], r["speedup"]) for r in rows if r["policy"] == policy)
        ax.plot([w for w, _ in points], [s for _, s in points], marker="o", color=colours[policy], label=policy)
    ax.set_xticks(workers)
    ax.set_xlabel("workers")
    ax.set_ylabel("speedup over one worker")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def headline_worker_scaling(rows: list[dict]) -> str:
    parts = []
    for policy in _in_order(r["policy"] for r in rows):
        best = max((r for r in rows if r["policy"] == policy), key=lambda r: (r["speedup"], -r["workers"]))
        parts.append(f"{policy} {best['speedup']:.2f}x at {best['workers']} workers")
    return "Speedup over one worker: " + "; ".join(parts) + "."


# --- copy_bandwidth: copyto against memcpy and a non-temporal copy -------

def _bytes(n: int) -> str:
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def draw_copy_bandwidth(figures: dict) -> plt.Figure:
    rows = figures["rows"]
    directions = _in_order(r["direction"] for r in rows)
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(len(threads), len(directions), figsize=(4 * len(directions), 3 * len(threads)),
                             squeeze=False, sharex=True)
    series = (("copyto_gbps", "copyto", "tab:blue"), ("memcpy_gbps", "memcpy", "tab:orange"),
              ("nontemporal_gbps", "non-temporal", "tab:green"))
    for i, t in enumerate(threads):
        for j, direction in enumerate(directions):
            ax = axes[i][j]
            chosen = sorted((r for r in rows if r["direction"] == direction and r["threads"] == t),
                            key=lambda r: r["bytes"])
            for key, label, colour in series:
                ax.plot([r["bytes"] for r in chosen], [r[key] for r in chosen], marker="o", markersize=3,
                        color=colour, label=label)
            ax.set_xscale("log", base=2)
            sizes = [r["bytes"] for r in chosen]
            ax.set_xticks(sizes, [_bytes(b) for b in sizes], fontsize="small")
            ax.minorticks_off()
            ax.set_title(f"{direction}, {t} thread{'s' if t > 1 else ''}", fontsize="medium")
            ax.set_ylabel("GB/s")
            ax.grid(alpha=0.3)
            if i == len(threads) - 1:
                ax.set_xlabel("bytes per copy")
    axes[0][0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def headline_copy_bandwidth(figures: dict) -> str:
    large = [r for r in figures["rows"] if r["bytes"] >= 64 << 20]
    worst = min(large, key=lambda r: (r["ratio"], r["direction"], r["threads"], r["bytes"]))
    return (f"From 64 MiB up, copyto reaches at least {worst['ratio']:.2f} of the best plain copy in every row "
            f"(lowest: {worst['direction']}, {worst['threads']} thread(s), {worst['bytes'] >> 20} MiB).")


# --- training: test accuracy per epoch, the trainer beside PyTorch -------

def draw_training(ours: dict, pytorch: dict) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 4))
    for figures, label, colour in ((ours, "cachedarrays trainer", "tab:blue"), (pytorch, "PyTorch", "tab:orange")):
        epochs = figures["epochs"]
        ax.plot([e["epoch"] for e in epochs], [100 * e["test_accuracy"] for e in epochs], marker="o", markersize=3,
                color=colour, label=label)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"{ours.get('model', 'model')} on {ours.get('data', 'data')}", fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def headline_training(ours: dict, pytorch: dict) -> str:
    a, b = ours["epochs"][-1], pytorch["epochs"][-1]
    return (f"Test accuracy after {a['epoch']} epochs: {100 * a['test_accuracy']:.2f}% with the cachedarrays "
            f"trainer, {100 * b['test_accuracy']:.2f}% with PyTorch on the same recipe.")


# --- model_accuracy: the replay's time against the measured one -----------

# The model's goal: modeled within this fraction of measured (docs/benchmarks.md).
MODEL_TOLERANCE = 0.15


def draw_model_accuracy(rows: list[dict]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [f"{r['policy']} at {100 * r['fast_fraction']:.0f}%" for r in rows]
    ratios = [r["ratio"] for r in rows]
    low = [r["ratio"] - r.get("ratio_low", r["ratio"]) for r in rows]
    high = [r.get("ratio_high", r["ratio"]) - r["ratio"] for r in rows]
    ax.axhspan(1 - MODEL_TOLERANCE, 1 + MODEL_TOLERANCE, color="tab:green", alpha=0.12,
               label=f"goal: within ±{100 * MODEL_TOLERANCE:.0f}%")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.errorbar(range(len(rows)), ratios, yerr=[low, high], fmt="o", color="tab:blue", capsize=3,
                label="modeled ÷ measured (median, range over rounds)")
    ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("modeled ÷ measured")
    models = _in_order(r["model"] for r in rows)
    ax.set_title(", ".join(models), fontsize="medium")
    ax.grid(axis="y", alpha=0.3)
    # Room below the lowest whisker for the legend.
    bottom = min(1 - MODEL_TOLERANCE, min(r - d for r, d in zip(ratios, low)))
    top = max(1 + MODEL_TOLERANCE, max(r + d for r, d in zip(ratios, high)))
    ax.set_ylim(bottom - 0.15, top + 0.03)
    ax.legend(fontsize="small", loc="lower left", ncol=2)
    fig.tight_layout()
    return fig


def headline_model_accuracy(rows: list[dict]) -> str:
    within = sum(1 for r in rows if abs(r["ratio"] - 1) <= MODEL_TOLERANCE)
    ratios = [r["ratio"] for r in rows]
    return (f"The replay's iteration time is within ±{100 * MODEL_TOLERANCE:.0f}% of the measured median in {within} "
            f"of {len(rows)} runs (modeled ÷ measured from {min(ratios):.2f} to {max(ratios):.2f}).")


# --- which recorded files are headlines ----------------------------------

CHARTS = (
    Chart("paper_reproduction_slowdown", ("paper_reproduction_20",),
          "Slowdown against the fast tier's size, per policy (CachedArrays IV-B)", draw_slowdown, headline_slowdown,
          has_slowdown),
    Chart("paper_reproduction_intervals", ("paper_reproduction_intervals_all_networks",),
          "The same comparison on every emulated network, each ratio with its 90% interval over 3 interleaved "
          "rounds", draw_slowdown, headline_slowdown, has_slowdown),
    Chart("paper_reproduction_cost_account", ("paper_reproduction_cost_account",),
          "Where the best policy's time goes at 20%: the gap to all-fast beside what its counters charge",
          draw_cost_account, headline_cost_account, has_cost_account),
    Chart("autotm_figure1", ("paper_reproduction_autotm_inception",),
          "AutoTM Figure 1: each policy against all-fast", draw_figure1, headline_figure1, has_figure1),
    Chart("autotm_slowdown", ("paper_reproduction_autotm_inception",),
          "AutoTM's comparison: slowdown against the fast tier's size, per policy", draw_slowdown,
          headline_slowdown, has_slowdown),
    Chart("app_policies", ("app_policies_auto",),
          "The apps: each policy's slowdown against all-fast", draw_app_heatmap, headline_app_heatmap),
    Chart("hint_overhead", ("hint_overhead",),
          "What a guard, a hint and an allocation cost, and how they scale", draw_hint_overhead,
          headline_hint_overhead),
    Chart("worker_scaling", ("worker_scaling",),
          "Workers: speedup over one", draw_worker_scaling, headline_worker_scaling),
    Chart("copy_bandwidth", ("copy_bandwidth",),
          "copyto against memcpy and a non-temporal copy", draw_copy_bandwidth, headline_copy_bandwidth),
    Chart("model_accuracy", ("model_accuracy",),
          "The time model against the measurement", draw_model_accuracy, headline_model_accuracy,
          lambda rows: isinstance(rows, list) and all("ratio" in r for r in rows)),
    Chart("training_accuracy", ("vit_fashion_mnist_20_epochs_flip", "vit_fashion_mnist_20_epochs_flip_pytorch"),
          "Training: test accuracy per epoch beside PyTorch", draw_training, headline_training),
)


def draw_charts(figures: dict[str, object], out_dir: Path) -> list[tuple[Chart, str, str]]:
    """Draws every chart whose recorded files are all in `figures` (name ->
    the file's "figures") into out_dir; returns (chart, PNG file name, its
    headline sentence) in CHARTS' order."""
    drawn = []
    for chart in CHARTS:
        if not all(name in figures for name in chart.data):
            continue
        data = [figures[name] for name in chart.data]
        if not chart.applies(*data):
            continue
        filename = f"{chart.name}.png"
        out_dir.mkdir(parents=True, exist_ok=True)
        _save(chart.draw(*data), out_dir / filename)
        drawn.append((chart, filename, chart.headline(*data)))
    return drawn
