#!/usr/bin/python3
"""Draws a cachedarrays-plan JSON (from the cachedarrays-plan tool) as a PNG.
Run with Debian's interpreter: /usr/bin/python3, which has python3-matplotlib.

Top panel: each policy's modeled slowdown against all-fast per fast-tier size
(a gap where the policy ran out of memory), with the 'within' bound dashed.
Bottom panel: memory cost per fast-tier size of the fastest policy there,
every policy within the bound as faint marks, and the all-DRAM cost dashed.
The plan's answer, when it found one, is starred on both.

    /usr/bin/python3 tools/plot_plan.py plan.json -o out.png [--policies a,b] [--title T]

The numbers are a model's, not measurements; the title says so.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import matplotlib.transforms as mtransforms  # noqa: E402

# The plan versions this script reads (the format/version the plan tool writes).
PLAN_FORMAT = "cachedarrays-plan"
PLAN_VERSIONS = (1,)

POINT_KEYS = ("policy", "fraction", "fast_bytes", "seconds", "slowdown", "cost_dollars", "note")
# Twenty colours and, past them, another line style: a plan compares up to twenty policies, and two that share a
# colour must still be told apart.
COLORS = [matplotlib.colormaps["tab20"](i) for i in range(20)]
LINESTYLES = ["-", "--"]


class PlanError(Exception):
    """A plan this script cannot draw; the message says why."""


def format_bytes(n):
    """Decimal GB, as the plan's prices are per 1e9 bytes (not GiB)."""
    gb = n / 1e9
    return f"{gb:,.0f} GB" if gb >= 10 else f"{gb:.3g} GB"


def field(obj, key, where):
    """obj[key], or a PlanError naming the missing field."""
    if not isinstance(obj, dict) or key not in obj:
        raise PlanError(f"{where}: missing field '{key}'")
    return obj[key]


def number(obj, key, where, nullable=False):
    """A numeric field; checked here so a bad value is one line, not a traceback from matplotlib."""
    value = field(obj, key, where)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanError(f"{where}: field '{key}' is {json.dumps(value)}, not a number")
    return value


def load_plan(path):
    """The plan's JSON, checked for what drawing it reads."""
    try:
        with open(path) as f:
            plan = json.load(f)
    except OSError as e:
        raise PlanError(f"cannot read {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise PlanError(f"{path} is not JSON: {e}") from e
    if field(plan, "format", path) != PLAN_FORMAT:
        raise PlanError(f"{path}: format is '{plan['format']}', not a {PLAN_FORMAT}")
    version = field(plan, "version", path)
    if version not in PLAN_VERSIONS:
        raise PlanError(f"{path}: version {version} is not one this script reads "
                        f"({', '.join(map(str, PLAN_VERSIONS))}); update tools/plot_plan.py")
    field(plan, "model", path)
    machine = field(plan, "machine", path)
    for tier in ("fast", "slow"):
        field(field(machine, tier, f"{path}: machine"), "name", f"{path}: machine.{tier}")
    for key in ("footprint_bytes", "within", "all_fast_seconds", "all_dram_cost_dollars"):
        number(plan, key, path)
    points = field(plan, "points", path)
    if not isinstance(points, list) or not points:
        raise PlanError(f"{path}: 'points' is empty; the plan tried no fast-tier size")
    for i, p in enumerate(points):
        where = f"{path}: points[{i}]"
        for key in POINT_KEYS:
            field(p, key, where)
        for key in ("fraction", "fast_bytes"):
            number(p, key, where)
        for key in ("seconds", "slowdown", "cost_dollars"):
            number(p, key, where, nullable=True)
    answer = field(plan, "answer", path)
    if field(answer, "found", f"{path}: answer"):
        field(answer, "policy", f"{path}: answer")
        for key in ("fast_bytes", "slowdown", "cost_dollars", "saving"):
            number(answer, key, f"{path}: answer")
    else:
        field(answer, "reason", f"{path}: answer")
    return plan


def answer_label(answer):
    saving = answer["saving"] * 100
    relation = f"{saving:.0f}% less than" if saving >= 0 else f"{-saving:.0f}% more than"
    return (f"answer: {answer['policy']}, {format_bytes(answer['fast_bytes'])}, {answer['slowdown']:.2f}x, "
            f"${answer['cost_dollars']:,.0f} ({relation} all-DRAM)")


def draw_slowdown(ax, plan, points, policies):
    within = plan["within"]
    for i, name in enumerate(policies):
        mine = [p for p in points if p["policy"] == name]
        # None in the series leaves a gap where the policy ran out of memory, rather than joining across it.
        ax.plot([p["fast_bytes"] / 1e9 for p in mine], [p["slowdown"] for p in mine], marker="o", markersize=4,
                linestyle=LINESTYLES[i // len(COLORS) % len(LINESTYLES)], color=COLORS[i % len(COLORS)], label=name)
        # A gap at the left edge does not read as one; mark where the policy ran out of memory (not for all-fast,
        # which by definition fits only the whole footprint).
        oom = [p["fast_bytes"] / 1e9 for p in mine if p["slowdown"] is None and name != "all-fast"]
        ax.plot(oom, [0.03] * len(oom), "x", color=COLORS[i % len(COLORS)], markersize=8, mew=2,
                transform=mtransforms.blended_transform_factory(ax.transData, ax.transAxes),
                label=f"{name}: out of memory" if oom else None)
    ax.axhline(within, color="0.3", linestyle="--", linewidth=1, label=f"within {within:.2f}x")
    slowdowns = [p["slowdown"] for p in points if p["slowdown"] is not None]
    log = bool(slowdowns) and max(slowdowns) > 4
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(mticker.ScalarFormatter())  # 1, 10 rather than 10^0, 10^1
    # Headroom so the answer's note at the top does not sit on the slowest policy's line.
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 2 if log else hi + (hi - lo) * 0.2)
    ax.set_ylabel("slowdown vs all-fast (x)")
    ax.grid(True, alpha=0.3)


def draw_cost(ax, plan, points, fractions):
    fastest, near = [], []
    for fraction in fractions:
        ran = [p for p in points if p["fraction"] == fraction and p["seconds"] is not None]
        if not ran:
            continue
        fastest.append(min(ran, key=lambda p: p["seconds"]))
        near += [p for p in ran if p["slowdown"] is not None and p["slowdown"] <= plan["within"]]
    ax.plot([p["fast_bytes"] / 1e9 for p in near], [p["cost_dollars"] for p in near], "o", color="tab:green",
            alpha=0.3, markersize=8, label=f"a policy within {plan['within']:.2f}x")
    ax.plot([p["fast_bytes"] / 1e9 for p in fastest], [p["cost_dollars"] for p in fastest], "s-", color="tab:blue",
            markersize=4, label="fastest policy at that size")
    # Which policy was fastest changes along the line; say so at each point.
    for p in fastest:
        ax.annotate(p["policy"], (p["fast_bytes"] / 1e9, p["cost_dollars"]), textcoords="offset points",
                    xytext=(4, -10), fontsize=7, color="tab:blue")
    dram = plan["all_dram_cost_dollars"]
    ax.axhline(dram, color="0.3", linestyle="--", linewidth=1, label=f"all-DRAM ${dram:,.0f}")
    ax.margins(y=0.12)
    ax.set_ylabel("memory cost ($)")
    ax.set_xlabel("fast tier (GB)")
    ax.grid(True, alpha=0.3)


def plot(args):
    plan = load_plan(args.plan)
    points = sorted(plan["points"], key=lambda p: p["fraction"])
    in_file = list(dict.fromkeys(p["policy"] for p in points))
    policies = in_file
    if args.policies:
        policies = [s.strip() for s in args.policies.split(",") if s.strip()]
        unknown = [s for s in policies if s not in in_file]
        if unknown:
            raise PlanError(f"{args.plan}: no policy {', '.join(unknown)} in the plan; it has {', '.join(in_file)}")
        points = [p for p in points if p["policy"] in policies]
    fractions = list(dict.fromkeys(p["fraction"] for p in points))

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    draw_slowdown(top, plan, points, policies)
    draw_cost(bottom, plan, points, fractions)
    answer = plan["answer"]
    if answer["found"]:
        for ax, y in ((top, answer["slowdown"]), (bottom, answer["cost_dollars"])):
            ax.plot([answer["fast_bytes"] / 1e9], [y], "*", color="gold", markeredgecolor="black", markersize=16,
                    zorder=5, label="answer")
    note, color = (answer_label(answer), "black") if answer["found"] else (f"no answer: {answer['reason']}", "tab:red")
    top.text(0.01, 0.97, note, transform=top.transAxes, va="top", fontsize=9, color=color,
             bbox={"boxstyle": "round", "facecolor": "lightyellow", "edgecolor": color})
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    bottom.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    machine = plan["machine"]
    # A --title replaces only the first line: the figure must still say its numbers are modeled.
    top.set_title((args.title or f"{plan['model']}: modeled {machine['slow']['name']} + {machine['fast']['name']}, "
                   f"footprint {format_bytes(plan['footprint_bytes'])}")
                  + "\n(emulation-free model, not a measurement)", fontsize=11)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"plot_plan: wrote {args.output} ({len(policies)} policies, {len(fractions)} fast-tier sizes)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", help="plan JSON written by cachedarrays-plan")
    parser.add_argument("-o", "--output", required=True, help="output PNG")
    parser.add_argument("--policies", default="", help="draw only these policies, comma separated (default: all)")
    parser.add_argument("--title", default="", help="title's first line (the 'not a measurement' line stays)")
    args = parser.parse_args()
    try:
        return plot(args)
    except PlanError as e:
        print(f"plot_plan: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
