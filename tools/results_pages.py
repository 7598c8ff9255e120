"""The Markdown of docs/results/: a page per recorded benchmark with its
machine, its command and its figures as tables, and the summary page
(README.md) that leads with the headline sentences and their charts and
links every benchmark's page.

Used by tools/render_results.py; the charts and their sentences come from
tools/results_charts.py.
"""
from __future__ import annotations

import json

# Columns longer than this are cut in tables: a note belongs in the JSON.
MAX_CELL = 60

PREAMBLE = [
    "Rendered by `tools/render_results.py render` from `docs/results/data/*.json`; do not edit by hand",
    "(the ctest `results.rendered` fails when a page or a chart here is stale).",
]


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
            lines += [f"## {title} · {key}", ""] + _rows_table(value) + [""]
        elif isinstance(value, dict):
            lines += [f"## {title} · {key}", ""] + _object_tables(value, f"{title} · {key}")
    return lines


def _machine_line(m: dict) -> str:
    return f"{m['cpu']}, {m['isa']}, {m['cores']} cores"


def benchmark_page(document: dict, charts: list[tuple[str, str]]) -> str:
    """One recorded benchmark: where and how it ran, the charts drawn from
    it ((title, PNG file name) each) and its figures as tables."""
    m = document["machine"]
    out = [
        f"# {document['benchmark']}",
        "",
        *PREAMBLE,
        "What the benchmark measures and what its columns mean: [docs/benchmarks.md](../benchmarks.md);",
        "every recorded benchmark: [the summary](README.md).",
        "",
        f"- command: `{document['command']}`",
        f"- machine: {m['cpu']} ({m['isa']}), {m['cores']} cores, {m['memory_gib']} GiB, "
        f"Linux {m['kernel']}, oneDNN {m['onednn']}",
        f"- measured: {m['date']} at commit {m['commit']}",
    ]
    reported = m.get("reported")
    if reported:
        out.append(f"- as the benchmark saw it: {reported.get('cpu', '?')} ({reported.get('vendor', '?')}), "
                   f"{reported.get('isa', '?')}, {reported.get('cores', '?')} cores online; "
                   f"copy path {reported.get('copy_path', '?')}")
    out.append("")
    for title, filename in charts:
        out += [f"![{title}](charts/{filename})", ""]
    figures = document["figures"]
    if _is_rows(figures):
        out += _rows_table(figures) + [""]
    elif isinstance(figures, dict):
        out += _object_tables(figures, document["benchmark"])
    else:
        out += [f"`{_cell(figures)}`", ""]
    return "\n".join(out).rstrip() + "\n"


def summary_page(documents: list[dict], headlines: list[tuple[str, str, str, tuple[str, ...]]]) -> str:
    """The results' front page: each headline's sentence, then its chart,
    then every recorded benchmark linked to its page. A headline is (title,
    sentence, PNG file name, the recorded names it was drawn from)."""
    by_name = {d["benchmark"]: d for d in documents}

    def sources(names: tuple[str, ...]) -> str:
        return ", ".join(f"[{n}]({n}.md)" for n in names)

    out = [
        "# Measured results",
        "",
        *PREAMBLE,
        "Each benchmark's JSON is recorded with the machine it ran on (`tools/run_benchmarks.sh` runs them",
        "and records each); its tables are on its own page, linked below. What each benchmark measures and",
        "what its columns mean: [docs/benchmarks.md](../benchmarks.md).",
        "A figure marked *emulated* ran with an emulated slow tier; *modeled* figures come from the replay",
        "under the kernel time models, not from a run.",
        "",
    ]
    if not documents:
        out.append("No benchmark has been recorded yet.")
        return "\n".join(out).rstrip() + "\n"
    if headlines:
        out += ["## Headlines", ""]
        out += [f"- **{title}.** {sentence} ({sources(names)})" for title, sentence, _, names in headlines]
        out.append("")
        for title, _, filename, names in headlines:
            machines = sorted({_machine_line(by_name[n]["machine"]) for n in names})
            out += [f"### {title}", "", f"![{title}](charts/{filename})", "",
                    f"From {sources(names)}; measured on {'; '.join(machines)}.", ""]
    out += ["## Every recorded benchmark", "", "| benchmark | machine | date |", "|---|---|---|"]
    for d in documents:
        out.append(f"| [{d['benchmark']}]({d['benchmark']}.md) | {_machine_line(d['machine'])} | "
                   f"{d['machine']['date']} |")
    return "\n".join(out).rstrip() + "\n"
