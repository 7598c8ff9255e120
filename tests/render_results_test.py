#!/usr/bin/env python3
"""tools/render_results.py end to end: three benchmark outputs (a list of
rows, an object holding scalars and a list of rows, and rows beside the
machine the benchmark reported, as bench::write_json writes them) are
recorded with this machine into a scratch results folder and rendered; each
benchmark's page must hold each figure in its table, the machine, the
benchmark's own machine line and the command, the summary must link every
page, and a file that is not JSON must be refused with its name."""
import argparse
import json
import subprocess
import sys
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--tool", required=True)
parser.add_argument("--scratch", required=True, type=Path)
args = parser.parse_args()
scratch = args.scratch
scratch.mkdir(parents=True, exist_ok=True)
results = scratch / "results"
for old in (results / "data").glob("*.json"):
    old.unlink()


def tool(*words, check=True):
    return subprocess.run([sys.executable, args.tool, "--results", str(results), *words], capture_output=True,
                          text=True, check=check)


rows = [{"model": "resnet-18", "policy": "ca-lm", "seconds": 0.25, "ratio": 1.5},
        {"model": "vgg-16", "policy": "all-fast", "seconds": 0.125, "ratio": 1.0}]
(scratch / "rows.json").write_text(json.dumps(rows))
nested = {"cores": 2, "goal": "<= 50 ns", "measured": [{"what": "read guard", "ns": 42.5}]}
(scratch / "nested.json").write_text(json.dumps(nested))
tool("record", "rows_bench", str(scratch / "rows.json"), "--", "bench/rows_bench", "--json", "rows.json")
tool("record", "nested_bench", str(scratch / "nested.json"), "--", "bench/nested_bench")
reported = {"machine": {"cpu": "Test CPU 9000", "vendor": "GenuineIntel", "isa": "avx2", "cores": 2,
                        "copy_path": "auto: small nt, medium memcpy split, large memcpy split (nt avx2)"},
            "rows": [{"direction": "DRAM->DAX", "bytes": 4096, "ratio": 0.97}]}
(scratch / "machine.json").write_text(json.dumps(reported))
tool("record", "machine_bench", str(scratch / "machine.json"), "--", "bench/machine_bench")
tool("render")
pages = {name: (results / f"{name}.md").read_text() for name in ("rows_bench", "nested_bench", "machine_bench")}
expected = {
    "rows_bench": ["# rows_bench", "| model | policy |", "| resnet-18 | ca-lm | 0.25 | 1.5 |",
                   "| vgg-16 | all-fast | 0.125 | 1 |", "command: `bench/rows_bench --json rows.json`", "cores, "],
    "nested_bench": ["# nested_bench", "| cores | 2 |", "| goal | <= 50 ns |", "| read guard | 42.5 |"],
    "machine_bench": ["# machine_bench", "| DRAM->DAX | 4096 | 0.97 |",
                      "as the benchmark saw it: Test CPU 9000 (GenuineIntel), avx2, 2 cores online; copy path auto: "
                      "small nt, medium memcpy split, large memcpy split (nt avx2)"],
}
missing = {name: [e for e in lines if e not in pages[name]] for name, lines in expected.items()}
missing = {name: lines for name, lines in missing.items() if lines}
if missing:
    sys.exit(f"render_results_test: the pages lack {missing}:\n{pages}")
summary = (results / "README.md").read_text()
links = [f"[{name}]({name}.md)" for name in pages]
if any(link not in summary for link in links):
    sys.exit(f"render_results_test: the summary does not link every page ({links}):\n{summary}")
(scratch / "broken.json").write_text("{not json")
refused = tool("record", "broken", str(scratch / "broken.json"), check=False)
if refused.returncode == 0 or "broken.json: not JSON" not in refused.stderr:
    sys.exit(f"render_results_test: a file that is not JSON was not refused by name: {refused.stderr}")
print("render_results_test: passed")
