#!/usr/bin/env python3
"""Checks that every #include under src/ and include/ follows the layers.

docs/design.md, "Layout ... and the layers": arrows point one way only,

    types <- heap <- manager <- plan <- policy <- runtime <- {sim, nn}

A file may include its own layer and the layers below it; sim and nn are
siblings that never include each other. The bottom layer `types` is the
files directly in include/cachedarrays/ (and directly in src/); the
umbrella header cachedarrays.hpp sits above every layer, so no layer may
include it. Prints one line per include that runs against the arrows,
naming the file and line, and exits 1 if there is any.

    check_layers.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import pathlib
import re
import sys

RANK = {"types": 0, "heap": 1, "manager": 2, "plan": 3, "policy": 4, "runtime": 5, "sim": 6, "nn": 6}
UMBRELLA = "umbrella"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def layer_of(parts):
    """The layer of a path given as parts below src/ or include/cachedarrays/."""
    if len(parts) == 1:
        return UMBRELLA if parts[0] == "cachedarrays.hpp" else "types"
    return parts[0] if parts[0] in RANK else None


def allowed(source, target):
    if target == UMBRELLA:
        return source == UMBRELLA
    if source == UMBRELLA or source == target:
        return True
    if RANK[target] == RANK[source]:
        return False  # sim and nn: siblings
    return RANK[target] < RANK[source]


def may_include(source):
    if source == UMBRELLA:
        return "anything"
    names = [l for l in RANK if allowed(source, l)]
    return ", ".join(sorted(names, key=lambda l: RANK[l]))


def target_layer(include, including_file, root):
    """The layer an include names, or None for a header outside the library."""
    parts = include.split("/")
    if parts[0] == "cachedarrays" and len(parts) > 1:
        return layer_of(parts[1:])
    if parts[0] in RANK and (root / "src" / include).exists():
        return parts[0]  # a private header of src/<layer>/
    local = including_file.parent / include
    if local.exists():
        return file_layer(local.resolve(), root)
    return None


def file_layer(path, root):
    rel = path.relative_to(root)
    if rel.parts[:2] == ("include", "cachedarrays"):
        return layer_of(rel.parts[2:])
    if rel.parts[0] == "src":
        return layer_of(rel.parts[1:])
    return None


def main():
    here = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=here)
    root = parser.parse_args().root.resolve()

    files = sorted(p for d in ("src", "include/cachedarrays") for p in (root / d).rglob("*")
                   if p.suffix in (".hpp", ".cpp", ".h"))
    if not files:
        print(f"check_layers: no sources under {root}/src or {root}/include/cachedarrays")
        return 2
    violations = 0
    for path in files:
        source = file_layer(path, root)
        if source is None:
            print(f"{path.relative_to(root)}: lies in no layer; put it in one of the folders {', '.join(RANK)}")
            violations += 1
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = target_layer(m.group(1), path, root)
            if target is None or allowed(source, target):
                continue
            print(f"{path.relative_to(root)}:{number}: includes {m.group(1)} ({target} layer), "
                  f"but the {source} layer may include only: {may_include(source)}")
            violations += 1
    print(f"check_layers: {len(files)} files, {violations} include(s) against the arrows "
          "types <- heap <- manager <- plan <- policy <- runtime <- {sim, nn}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
