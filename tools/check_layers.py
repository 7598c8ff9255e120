#!/usr/bin/env python3
"""Checks that every #include under src/, include/ and tools/ follows the layers.

docs/design.md, "Layout ... and the layers": arrows point one way only,

    types <- heap <- manager <- plan <- policy <- runtime <- {sim, nn}

A file may include its own layer and the layers below it; sim and nn are
siblings that never include each other. The bottom layer `types` is the
files directly in include/cachedarrays/ (and directly in src/); the
umbrella header cachedarrays.hpp sits above every layer, so no layer may
include it.

The plan layer is itself a stack of rooms, and a file of a room includes
its own room and the rooms below it:

    program <- detail <- offsets <- schedule

program holds what every planner shares (the program, its time models, the
tier costs and the move plan), detail the private helpers of the planners
above it, offsets the offset planners, and schedule the scheduling planners.
(src/plan/plan.cpp compiles them all and belongs to no room.)

A layer's detail/ folder is private to it: a file of another layer (or the
umbrella) includes the layer's public headers, never cachedarrays/<layer>/
.../detail/..., even where the arrows would allow the layer.

The command-line tools (tools/*.cpp) are installed programs built on the
installed library: they include only its public headers (no detail/, no
private header of src/) and nothing from bench/, which is neither installed
nor a layer of the library.

Prints one line per include against these rules, naming the file and line,
and exits 1 if there is any.

    check_layers.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import pathlib
import re
import sys

RANK = {"types": 0, "heap": 1, "manager": 2, "plan": 3, "policy": 4, "runtime": 5, "sim": 6, "nn": 6}
UMBRELLA = "umbrella"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
ARROWS = "types <- heap <- manager <- plan <- policy <- runtime <- {sim, nn}"
PLAN_ROOMS = {"program": 0, "detail": 1, "offsets": 2, "schedule": 3}
ROOM_ARROWS = "program <- detail <- offsets <- schedule"


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


def resolve(include, including_file, root):
    """The file an include names inside the repository, or None (a system or
    third-party header). Tried as a library header, a private header of
    src/, then relative to the including file."""
    for candidate in (root / "include" / include, root / "src" / include, including_file.parent / include):
        if candidate.is_file():
            return candidate.resolve()
    return None


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


def plan_room(path, root):
    """The room of plan a library file lies in, or None (another layer, or
    no room: src/plan/plan.cpp)."""
    rel = path.relative_to(root).parts
    below = rel[2:] if rel[:2] == ("include", "cachedarrays") else rel[1:] if rel[0] == "src" else ()
    if len(below) > 2 and below[0] == "plan" and below[1] in PLAN_ROOMS:
        return below[1]
    return None


def room_problem(include, path, root):
    """The message for an include from one room of plan into a room above
    it, or None."""
    source = plan_room(path, root)
    found = resolve(include, path, root)
    target = plan_room(found, root) if source is not None and found is not None else None
    if target is None or PLAN_ROOMS[target] <= PLAN_ROOMS[source]:
        return None
    below = [r for r in PLAN_ROOMS if PLAN_ROOMS[r] <= PLAN_ROOMS[source]]
    return (f"includes {include} (plan's {target} room), but plan's {source} room may include only the rooms "
            f"{', '.join(below)} (the rooms' arrows: {ROOM_ARROWS})")


def in_detail(include, including_file, root):
    """Whether the include names a header in some detail/ folder of the library."""
    if "detail" in include.split("/")[:-1]:
        return True
    found = resolve(include, including_file, root)
    return found is not None and "detail" in found.relative_to(root).parts[:-1]


def layer_problems(path, root):
    """(line, message) for each include of a library file against the layers."""
    source = file_layer(path, root)
    if source is None:
        yield 0, f"lies in no layer; put it in one of the folders {', '.join(RANK)}"
        return
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = INCLUDE.match(line)
        if not m:
            continue
        include = m.group(1)
        target = target_layer(include, path, root)
        if target is None:
            continue
        if not allowed(source, target):
            yield number, (f"includes {include} ({target} layer), "
                           f"but the {source} layer may include only: {may_include(source)}")
        elif target == source == "plan" and room_problem(include, path, root):
            yield number, room_problem(include, path, root)
        elif target != source and in_detail(include, path, root):
            yield number, (f"includes {include}, a detail/ header of the {target} layer, which is private "
                           f"to that layer; the {source} layer includes the {target} layer's public headers "
                           f"(include/cachedarrays/{target}/ outside detail/)")


def tool_problems(path, root):
    """(line, message) for each include of a command-line tool beyond the
    installed library's public headers."""
    bench = (root / "bench").resolve()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = INCLUDE.match(line)
        if not m:
            continue
        include = m.group(1)
        local = path.parent / include
        found = local.resolve() if local.is_file() else None
        if found is None and (bench / include).is_file():
            found = (bench / include).resolve()  # through an include directory of bench/
        if "bench" in include.split("/")[:-1] or (found is not None and found.is_relative_to(bench)):
            yield number, (f"includes {include} from bench/: an installed tool may not depend on the "
                           "benchmarks (bench/ is not installed and is no layer of the library); move what "
                           "it needs into the library or into tools/")
        elif in_detail(include, path, root):
            yield number, (f"includes {include}, a detail/ header: an installed tool includes only the "
                           "library's public headers (include/cachedarrays/ outside detail/)")
        elif include.split("/")[0] in RANK and (root / "src" / include).is_file():
            yield number, (f"includes {include}, a private header of src/: an installed tool includes only "
                           "the library's public headers (include/cachedarrays/ outside detail/)")


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
    tools = sorted((root / "tools").glob("*.cpp")) if (root / "tools").is_dir() else []
    violations = 0
    for checked, problems in ((files, layer_problems), (tools, tool_problems)):
        for path in checked:
            for number, message in problems(path, root):
                where = f"{path.relative_to(root)}:{number}" if number else f"{path.relative_to(root)}"
                print(f"{where}: {message}")
                violations += 1
    print(f"check_layers: {len(files)} library files and {len(tools)} tools, {violations} include(s) against "
          f"the arrows {ARROWS}, plan's rooms {ROOM_ARROWS}, the privacy of detail/, or the tools' "
          "public-only rule")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
