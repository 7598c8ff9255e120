#!/usr/bin/env python3
"""The measured figures as data: benchmark JSON in, docs/results/README.md out.

Two steps, so that a figure is never typed by hand:

  record  wraps one benchmark's JSON output (the file its --json or --plots
          flag wrote) with the machine it ran on -- CPU model, ISA, cores,
          memory, oneDNN version, date, commit -- and the command that made
          it, into docs/results/data/<name>.json; the machine the benchmark
          itself reported (its JSON's "machine": CPU, ISA, cores, the copy
          path it chose) is kept beside it and shown on the page;
  render  writes docs/results/README.md from every file in docs/results/data/:
          per benchmark, the machine and the command, then its figures as
          tables (a list of rows is one table; an object's scalar fields are
          one table and each list of rows inside it another).

    tools/render_results.py record hint_overhead build/hint.json -- build/bench/hint_overhead --json build/hint.json
    tools/render_results.py render

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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"

# Columns longer than this are cut in tables: a note belongs in the JSON.
MAX_CELL = 60


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


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _is_rows(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _rows_table(rows: list[dict]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in columns and not _is_rows(value) and not isinstance(value, dict):
                columns.append(key)
    # What names a row (model, policy, instance: text) before what it measured.
    def is_text(column: str) -> bool:
        return any(isinstance(row.get(column), str) for row in rows)
    columns.sort(key=lambda c: not is_text(c))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    return lines


def _object_tables(obj: dict, title: str) -> list[str]:
    lines: list[str] = []
    scalars = {k: v for k, v in obj.items() if not _is_rows(v) and not isinstance(v, dict)}
    if scalars:
        lines += ["| field | value |", "|---|---|"]
        lines += [f"| {k} | {_cell(v)} |" for k, v in scalars.items()]
        lines.append("")
    for key, value in obj.items():
        if _is_rows(value):
            lines += [f"#### {title} · {key}", ""] + _rows_table(value) + [""]
        elif isinstance(value, dict):
            lines += [f"#### {title} · {key}", ""] + _object_tables(value, f"{title} · {key}")
    return lines


def render(results: Path = RESULTS) -> Path:
    documents = []
    for path in sorted((results / "data").glob("*.json")):
        try:
            documents.append(json.loads(path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as e:
            raise SystemExit(f"render_results: {path}: not JSON ({e})")
    out = [
        "# Measured results",
        "",
        "Rendered by `tools/render_results.py render` from `docs/results/data/*.json`; do not edit by hand.",
        "Each benchmark's JSON is recorded with the machine it ran on (`tools/run_benchmarks.sh` runs them",
        "and records each). What each benchmark measures and what its columns mean: "
        "[docs/benchmarks.md](../benchmarks.md).",
        "A figure marked *emulated* ran with an emulated slow tier; *modeled* figures come from the replay",
        "under the kernel time models, not from a run.",
        "",
    ]
    if not documents:
        out.append("No benchmark has been recorded yet.")
    out += ["| benchmark | machine | date |", "|---|---|---|"]
    for d in documents:
        m = d["machine"]
        out.append(f"| [{d['benchmark']}](#{d['benchmark'].replace('.', '').lower()}) | "
                   f"{m['cpu']}, {m['isa']}, {m['cores']} cores | {m['date']} |")
    out.append("")
    for d in documents:
        m = d["machine"]
        out += [
            f"## {d['benchmark']}",
            "",
            f"- command: `{d['command']}`",
            f"- machine: {m['cpu']} ({m['isa']}), {m['cores']} cores, {m['memory_gib']} GiB, "
            f"Linux {m['kernel']}, oneDNN {m['onednn']}",
            f"- measured: {m['date']} at commit {m['commit']}",
        ]
        reported = m.get("reported")
        if reported:
            out.append(f"- as the benchmark saw it: {reported.get('cpu', '?')} ({reported.get('vendor', '?')}), "
                       f"{reported.get('isa', '?')}, {reported.get('cores', '?')} cores online; "
                       f"copy path {reported.get('copy_path', '?')}")
        out += [
            "",
        ]
        figures = d["figures"]
        if _is_rows(figures):
            out += _rows_table(figures) + [""]
        elif isinstance(figures, dict):
            out += _object_tables(figures, d["benchmark"])
        else:
            out += [f"`{_cell(figures)}`", ""]
    target = results / "README.md"
    results.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the results folder (default docs/results): data/ inside it, README.md beside")
    sub = parser.add_subparsers(dest="step", required=True)
    rec = sub.add_parser("record", help="wrap one benchmark's JSON with this machine into docs/results/data/")
    rec.add_argument("name", help="the benchmark's name in the results (e.g. hint_overhead)")
    rec.add_argument("output", type=Path, help="the JSON file the benchmark wrote")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="-- the command that wrote it")
    sub.add_parser("render", help="write docs/results/README.md from docs/results/data/*.json")
    args = parser.parse_args(argv)
    if args.step == "record":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        print(f"render_results: recorded {record(args.name, args.output, command, args.results)}")
    else:
        print(f"render_results: wrote {render(args.results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
