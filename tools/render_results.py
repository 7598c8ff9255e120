#!/usr/bin/env python3
"""The measured figures as data: benchmark JSON in, docs/results/ out.

Three steps, so that a figure is never typed by hand and never stale:

  record  wraps one benchmark's JSON output (the file its --json or --plots
          flag wrote) with the machine it ran on -- CPU model, ISA, cores,
          memory, oneDNN version, date, commit -- and the command that made
          it, into docs/results/data/<name>.json; the machine the benchmark
          itself reported (its JSON's "machine": CPU, ISA, cores, the copy
          path it chose) is kept beside it and shown on the page;
  render  writes docs/results/ from every file in docs/results/data/: a
          page per benchmark, <name>.md, with the machine and the command,
          then its figures as tables (a list of rows is one table; an
          object's scalar fields are one table and each list of rows inside
          it another); the headline charts, charts/<chart>.png
          (tools/results_charts.py); and the summary, README.md, that leads
          with each headline's number and chart and links every page
          (tools/results_pages.py);
  check   renders into a temporary folder and compares with docs/results/
          byte for byte, naming each stale page or chart (the ctest
          results.rendered).

    tools/render_results.py record hint_overhead build/hint.json -- build/bench/hint_overhead --json build/hint.json
    /usr/bin/python3 tools/render_results.py render

render and check draw with Debian's matplotlib (python3-matplotlib), so run
them with /usr/bin/python3; record needs no matplotlib.

`tools/run_benchmarks.sh` runs the benchmarks and records each in turn.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"

def _read_first(path: str, pattern: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(pattern, line)
                if m:
                    return m.group(1).strip()
    except OSError:
        pass
    return None


def _command_output(args: list[str]) -> str | None:
    try:
        out = subprocess.run(args, capture_output=True, text=True, check=False, cwd=ROOT)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def machine() -> dict:
    """What the figures were measured on, read off this machine."""
    flags = (_read_first("/proc/cpuinfo", r"flags\s*:\s*(.*)") or "").split()
    isa = [name for name in ("avx512f", "avx2", "avx", "sse4_2") if name in flags]
    mem_kib = _read_first("/proc/meminfo", r"MemTotal:\s*(\d+) kB")
    commit = _command_output(["git", "rev-parse", "--short=12", "HEAD"])
    # Changes to what the benchmarks are built from; results and scripts do not count.
    dirty = _command_output(["git", "status", "--porcelain", "--untracked-files=no", "--", "include", "src",
                             "bench", "examples", "CMakeLists.txt", "cmake"])
    return {
        "cpu": _read_first("/proc/cpuinfo", r"model name\s*:\s*(.*)") or platform.processor() or "unknown",
        "isa": isa[0] if isa else "baseline x86-64",
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem_kib) / 1024 / 1024, 1) if mem_kib else None,
        "onednn": _command_output(["dpkg-query", "-W", "-f=${Version}", "libdnnl-dev"]) or "unknown",
        "kernel": platform.release(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": (commit or "unknown") + (" (with uncommitted changes)" if dirty else ""),
    }


def _portable(command: list[str], output: Path) -> str:
    """The command as a reader would type it: the build tree's programs as
    build/..., the benchmark's own JSON file as FILE.json, and no temporary
    paths."""
    words = []
    for word in command:
        if Path(word) == output:
            word = "FILE.json"
        else:
            word = re.sub(r"^/\S*/(bench|examples)/([^/]+)$", r"build/\1/\2", word)
            word = re.sub(r"^/tmp/\S*/([^/]+)$", r"\1", word)
        words.append(word)
    return " ".join(words)


def record(name: str, output: Path, command: list[str], results: Path = RESULTS) -> Path:
    if not re.fullmatch(r"[a-z0-9_.-]+", name):
        raise SystemExit(f"render_results: name '{name}': allowed are lowercase letters, digits, '_', '.', '-'")
    try:
        figures = json.loads(output.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"render_results: {output}: no such file; run the benchmark with its --json flag first")
    except json.JSONDecodeError as e:
        raise SystemExit(f"render_results: {output}: not JSON ({e})")
    here = machine()
    # The benchmark's own view of the machine goes with this one; a list of
    # rows it wrapped to hold that view is a list of rows again.
    # (A modeled machine, such as cachedarrays-plan's tiers, names no CPU:
    # it stays with the figures.)
    if isinstance(figures, dict) and isinstance(figures.get("machine"), dict) and "cpu" in figures["machine"]:
        here["reported"] = figures.pop("machine")
        if set(figures) == {"rows"}:
            figures = figures["rows"]
    data = results / "data"
    data.mkdir(parents=True, exist_ok=True)
    target = data / f"{name}.json"
    document = {"benchmark": name, "command": _portable(command, output), "machine": here, "figures": figures}
    target.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return target


def _documents(results: Path) -> list[dict]:
    documents = []
    for path in sorted((results / "data").glob("*.json")):
        try:
            documents.append(json.loads(path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as e:
            raise SystemExit(f"render_results: {path}: not JSON ({e})")
    return documents


def _rendered(folder: Path) -> list[Path]:
    """The files render writes in a results folder: every page beside data/
    and every chart."""
    return sorted(list(folder.glob("*.md")) + list((folder / "charts").glob("*.png")))


def render(results: Path = RESULTS, out: Path | None = None) -> Path:
    """Writes the pages and charts of the figures in results/data/ into out
    (default: results itself), and removes a page or chart there that no
    recorded file renders any more."""
    # Imported here, so that recording a benchmark needs no matplotlib.
    import results_charts
    import results_pages

    out = out or results
    documents = _documents(results)
    figures = {d["benchmark"]: d["figures"] for d in documents}
    out.mkdir(parents=True, exist_ok=True)
    before = set(_rendered(out))
    drawn = results_charts.draw_charts(figures, out / "charts")
    written = {out / "charts" / filename for _, filename, _ in drawn}
    for d in documents:
        charts = [(chart.title, filename) for chart, filename, _ in drawn if d["benchmark"] in chart.data]
        page = out / f"{d['benchmark']}.md"
        page.write_text(results_pages.benchmark_page(d, charts), encoding="utf-8")
        written.add(page)
    headlines = [(chart.title, sentence, filename, chart.data) for chart, filename, sentence in drawn]
    summary = out / "README.md"
    summary.write_text(results_pages.summary_page(documents, headlines), encoding="utf-8")
    written.add(summary)
    for stale in sorted(before - written):
        stale.unlink()
    return summary


def check(results: Path = RESULTS) -> list[str]:
    """Renders into a temporary folder and compares, byte for byte, with the
    pages and charts in results; returns one line per file that differs, is
    missing or should not be there."""
    with tempfile.TemporaryDirectory(prefix="render_results.") as scratch:
        fresh = Path(scratch)
        render(results, fresh)
        want = {p.relative_to(fresh): p.read_bytes() for p in _rendered(fresh)}
        have = {p.relative_to(results): p.read_bytes() for p in _rendered(results)}
    findings = []
    for name in sorted(set(want) | set(have)):
        shown = _shown(results / name)
        if name not in have:
            findings.append(f"{shown}: missing (the recorded figures render it)")
        elif name not in want:
            findings.append(f"{shown}: stale (no recorded figure renders it any more)")
        elif want[name] != have[name]:
            findings.append(f"{shown}: stale (it differs from what the recorded figures render)")
    return findings


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the results folder (default docs/results): data/ inside it, the pages beside")
    sub = parser.add_subparsers(dest="step", required=True)
    rec = sub.add_parser("record", help="wrap one benchmark's JSON with this machine into docs/results/data/")
    rec.add_argument("name", help="the benchmark's name in the results (e.g. hint_overhead)")
    rec.add_argument("output", type=Path, help="the JSON file the benchmark wrote")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="-- the command that wrote it")
    sub.add_parser("render", help="write docs/results/ (pages and charts) from docs/results/data/*.json")
    sub.add_parser("check", help="fail naming each page or chart in docs/results/ that render would change")
    args = parser.parse_args(argv)
    if args.step == "record":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        print(f"render_results: recorded {record(args.name, args.output, command, args.results)}")
    elif args.step == "render":
        print(f"render_results: wrote {render(args.results)} and the pages and charts beside it")
    else:
        findings = check(args.results)
        if findings:
            option = "" if args.results.resolve() == RESULTS else f" --results {args.results}"
            refresh = f"/usr/bin/python3 tools/render_results.py{option} render"
            print("\n".join(f"render_results: {f}" for f in findings))
            print(f"render_results: {len(findings)} file(s) stale; refresh them with `{refresh}` "
                  f"and commit them")
            return 1
        print(f"render_results: {_shown(args.results)} is up to date with its recorded figures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
