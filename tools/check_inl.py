#!/usr/bin/env python3
"""Checks the rules of the -inl files (docs/design.md "Header-only use").

In header-only mode every translation unit of a program compiles the -inl
files, so whatever they define must exist once per program:

  - no anonymous namespace (it makes one copy per translation unit): use
    namespace detail, CACHEDARRAYS_INLINE and a name unique in the library;
  - nothing else with internal linkage at namespace scope (`static`, or a
    `const` / `constexpr` variable without `inline`): use an inline
    variable, a function-local static of a CACHEDARRAYS_INLINE function, or
    a CACHEDARRAYS_INLINE function;
  - the file includes cachedarrays/config.hpp, which defines
    CACHEDARRAYS_INLINE;
  - some header includes it under #ifdef CACHEDARRAYS_HEADER_ONLY, or
    header-only users never compile it.

A declaring header (one that is no -inl file and lies in no detail/
folder: what a program that includes cachedarrays.hpp reads) includes no
operating-system header (<linux/...>, <sys/...>, <unistd.h>, ...): the
calls that need one go out of line into the -inl file, so that a user's
program does not get the OS's macros and names with the library's API.

A function left without CACHEDARRAYS_INLINE is caught by linking two
translation units (tests/header_only), not here. Prints one line per
problem, naming file and line, and exits 1 if there is any.

    check_inl.py [--root DIR]     (default: the repository this file is in)
    check_inl.py --self-test      the rules catch planted cases
"""
import argparse
import pathlib
import re
import sys

ANONYMOUS_NAMESPACE = re.compile(r"^\s*namespace\s*\{")
# Declarations at column 0 (namespace scope in this code base's layout):
# anything `static`, and `const` / `constexpr` variables (an initialiser
# before any parenthesis; a constexpr function is inline already).
INTERNAL_LINKAGE = re.compile(r"^(static\b|(const|constexpr)\b[^(]*[={])")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
IFDEF_HEADER_ONLY = re.compile(r"^\s*#\s*ifdef\s+CACHEDARRAYS_HEADER_ONLY\b")
ENDIF = re.compile(r"^\s*#\s*endif\b")
OS_HEADER = re.compile(r"^(linux|sys|asm|bits)/|^(unistd|fcntl|pthread|sched|signal|dlfcn|numa|numaif|"
                       r"libpmem2?|hwloc)\.h$")


def header_only_includes(headers):
    """The includes each header makes inside #ifdef CACHEDARRAYS_HEADER_ONLY."""
    included = set()
    for path in headers:
        inside = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if IFDEF_HEADER_ONLY.match(line):
                inside = True
            elif ENDIF.match(line):
                inside = False
            elif inside and (m := INCLUDE.match(line)):
                included.add(m.group(1))
    return included


def problems_in(text, include_name, wired):
    rel = "include/" + include_name
    for number, line in enumerate(text.splitlines(), start=1):
        if ANONYMOUS_NAMESPACE.match(line):
            yield (f"{rel}:{number}: anonymous namespace: one copy per translation unit in "
                   "header-only mode; use namespace detail, CACHEDARRAYS_INLINE and a name unique "
                   "in the library")
        elif INTERNAL_LINKAGE.match(line):
            yield (f"{rel}:{number}: internal linkage at namespace scope: one per translation unit "
                   "in header-only mode; make a variable inline (or a function-local static of a "
                   "CACHEDARRAYS_INLINE function), a function CACHEDARRAYS_INLINE")
    if '#include "cachedarrays/config.hpp"' not in text:
        yield f"{rel}: does not include cachedarrays/config.hpp, which defines CACHEDARRAYS_INLINE"
    if include_name not in wired:
        yield (f"{rel}: no header includes it under #ifdef CACHEDARRAYS_HEADER_ONLY, so "
               "header-only users never compile it")


def os_header_problems(text, include_name):
    """A declaring header's includes of operating-system headers."""
    for number, line in enumerate(text.splitlines(), start=1):
        m = INCLUDE.match(line)
        if m and OS_HEADER.search(m.group(1)):
            yield (f"include/{include_name}:{number}: includes <{m.group(1)}>, an operating-system header, "
                   "in a declaring header that programs read; declare the call here and define it in the "
                   "-inl file, which includes the OS header")


def self_test():
    """The rules catch planted per-translation-unit entities and pass clean code."""
    name = "cachedarrays/planted-inl.hpp"
    clean = "\n".join([
        "#pragma once",
        '#include "cachedarrays/config.hpp"',
        "namespace cachedarrays::detail {",
        "inline constexpr int limit = 3;",
        "constexpr int thrice(int x) { return 3 * x; }",
        "CACHEDARRAYS_INLINE int twice(int x) { return 2 * x; }",
        "}",
        ""])
    planted = clean + "\n".join([
        "namespace { int per_tu = 0; }",                # line 8
        "static int also_per_tu = 0;",                  # 9
        "constexpr int per_tu_constant{1};",            # 10
        "static int per_tu_function() { return 1; }",  # 11
        ""])
    failures = list(problems_in(clean, name, {name}))
    found = list(problems_in(planted, name, {name}))
    for line in (8, 9, 10, 11):
        if not any(p.startswith(f"include/{name}:{line}: ") for p in found):
            failures.append(f"planted line {line} not reported")
    if not any("no header includes it" in p for p in problems_in(clean, name, set())):
        failures.append("an -inl file no header includes was not reported")
    declaring = "#pragma once\n#include <atomic>\n#include <linux/futex.h>\n#include <unistd.h>\n#include <vector>\n"
    os_found = list(os_header_problems(declaring, "cachedarrays/planted.hpp"))
    if [p.split(": ")[0] for p in os_found] != ["include/cachedarrays/planted.hpp:3", "include/cachedarrays/planted.hpp:4"]:
        failures.append(f"the OS headers of a declaring header (lines 3 and 4) were not reported alone: {os_found}")
    for f in failures:
        print(f"check_inl self-test: {f}")
    print(f"check_inl self-test: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


def main():
    here = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=here)
    parser.add_argument("--self-test", action="store_true", help=self_test.__doc__)
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = args.root.resolve()
    include = root / "include"
    files = sorted((include / "cachedarrays").rglob("*.hpp"))
    inl = [p for p in files if p.name.endswith("-inl.hpp")]
    wired = header_only_includes([p for p in files if p not in inl])
    problems = [problem for path in inl
                for problem in problems_in(path.read_text(encoding="utf-8"),
                                           path.relative_to(include).as_posix(), wired)]
    declaring = [p for p in files if p not in inl and "detail" not in p.relative_to(include).parts]
    problems += [problem for path in declaring
                 for problem in os_header_problems(path.read_text(encoding="utf-8"),
                                                   path.relative_to(include).as_posix())]
    for p in problems:
        print(p)
    print(f"check_inl: {len(inl)} -inl files and {len(declaring)} declaring headers, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
