#!/usr/bin/env python3
"""Checks that the namespaces of the library's files follow their folders.

docs/design.md, "Namespaces follow folders":

    include/cachedarrays/*.hpp, heap/, manager/, runtime/, sim/   cachedarrays
    plan/, policy/, nn/                                           cachedarrays::<folder>

The core a program names without a prefix (the types, heaps, manager,
runtime and simulator) shares `cachedarrays`; each room a user reaches by
name (planners, policies, the trainer) has its own namespace. A file may also
open its namespace's `::detail` (its private helpers), and a file in a
detail/ folder opens only that. The manager's slow-tier emulation model and
its fault injection each have a named sub-namespace (`cachedarrays::emulation`,
`cachedarrays::fault`), kept in the files that define them. The same holds
for src/<folder>/.

Only the namespaces a file opens at the outermost level are checked
(`namespace cachedarrays::plan {` at the start of a line); a namespace opened
inside one (a model's own, `detail` nested by hand) is the file's business.

Prints one line per namespace against the rule, naming the file and line,
and exits 1 if there is any.

    check_namespaces.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import pathlib
import re
import sys

OWN_NAMESPACE = {"plan": "cachedarrays::plan", "policy": "cachedarrays::policy", "nn": "cachedarrays::nn"}
CORE = ("heap", "manager", "runtime", "sim")
NAMED_SUBSPACES = {"manager": ("cachedarrays::emulation", "cachedarrays::fault")}
OPENED = re.compile(r"^namespace\s+(cachedarrays[A-Za-z_:]*)\s*\{")


def folder_namespace(parts):
    """The namespace of a file given as parts below include/cachedarrays/ or
    src/, or None when the file lies in no folder of the library."""
    if len(parts) == 1:
        return "cachedarrays"
    if parts[0] in OWN_NAMESPACE:
        return OWN_NAMESPACE[parts[0]]
    return "cachedarrays" if parts[0] in CORE else None


def allowed(parts):
    """The namespaces a file given as parts may open at the outermost level."""
    own = folder_namespace(parts)
    if "detail" in parts[:-1]:
        return (own + "::detail",)
    return (own, own + "::detail") + NAMED_SUBSPACES.get(parts[0], ())


def problems(path, parts):
    own = folder_namespace(parts)
    if own is None:
        yield 0, "lies in no folder with a namespace; put it in one of: " + ", ".join(CORE + tuple(OWN_NAMESPACE))
        return
    permitted = allowed(parts)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = OPENED.match(line)
        if m and m.group(1) not in permitted:
            yield number, (f"opens namespace {m.group(1)}, but a file of {'/'.join(parts[:-1]) or 'the top folder'} "
                           f"opens only {' or '.join(permitted)} (docs/design.md, \"Namespaces follow folders\")")


def main():
    here = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=here)
    root = parser.parse_args().root.resolve()

    bases = (root / "include" / "cachedarrays", root / "src")
    files = sorted((base, p) for base in bases if base.is_dir() for p in base.rglob("*")
                   if p.suffix in (".hpp", ".cpp", ".h"))
    if not files:
        print(f"check_namespaces: no sources under {bases[0]} or {bases[1]}")
        return 2
    violations = 0
    for base, path in files:
        for number, message in problems(path, path.relative_to(base).parts):
            where = f"{path.relative_to(root)}:{number}" if number else f"{path.relative_to(root)}"
            print(f"{where}: {message}")
            violations += 1
    print(f"check_namespaces: {len(files)} library files, {violations} namespace(s) against their folders")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
