#!/usr/bin/env python3
"""Checks that no code outside the policy layer decodes a policy's name.

A policy's name is decoded once, when policy::Registry looks up its
descriptor (include/cachedarrays/policy/policy_descriptor.hpp); everything
else asks the descriptor (needs_program(), memory_mode(), modeled_only(),
plans_ahead(), ...). This scans the C++ sources under include/, src/,
bench/, tools/ and examples/ (include/cachedarrays/policy/ excepted; tests/
are not scanned) for a quoted built-in policy name compared with something:

    x == "2lm:m"    "ca-lm" != x    x.compare("redl")
    x.rfind("autotm", 0) == 0       x.starts_with("ca")   (a name's prefix)

The built-in names are the name-like string literals of the file that
defines the built-in descriptors (BUILTIN below). Comments are ignored, and
so is text inside string literals. Prints one line per comparison, naming
the file and line, and exits 1 if there is any.

    check_policy_names.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import pathlib
import re
import sys

BUILTIN = "include/cachedarrays/policy/builtin_policies-inl.hpp"
EXEMPT = "include/cachedarrays/policy/"
SCANNED = ("include", "src", "bench", "tools", "examples")
SUFFIXES = {".hpp", ".cpp", ".h", ".cc"}
# "ca-lm", "autoswap:bo", "2lm:m": no spaces, no "+planner" (the descriptor
# parses those), no trailing separator.
NAME_LITERAL = re.compile(r'"([a-z0-9]+(?:[-:][a-z0-9]+)*)"')
STRING = r'"((?:[^"\\]|\\.)*)"'
COMPARISONS = [
    re.compile(r"(?:==|!=)\s*" + STRING),
    re.compile(STRING + r"\s*(?:==|!=)"),
    re.compile(r"\bcompare\s*\(\s*" + STRING),
]
PREFIX_CHECKS = [
    re.compile(r"\bstarts_with\s*\(\s*" + STRING),
    re.compile(r"\brfind\s*\(\s*" + STRING + r"\s*,\s*0\s*\)"),
    re.compile(r"\bfind\s*\(\s*" + STRING + r"\s*\)\s*==\s*0\b"),
]


# Policy names that are also another setting's value (CACHEDARRAYS_COPY=auto
# picks the copy path): a comparison with them is not taken for one of a
# policy name.
SHARED_WORDS = {"auto"}


def builtin_names(root):
    text = (root / BUILTIN).read_text(encoding="utf-8")
    return set(NAME_LITERAL.findall(strip_comments(text))) - SHARED_WORDS


def strip_comments(text):
    """`text` with // and /* */ comments blanked, string and character
    literals kept, so that line numbers stay."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def comparisons_in(text, names):
    """(line, what) for each comparison of a built-in name, or check for a
    prefix of one, in `text`."""
    prefixes = {name[:k] for name in names for k in range(2, len(name) + 1)}
    code = strip_comments(text)
    for number, line in enumerate(code.splitlines(), start=1):
        for pattern in COMPARISONS:
            for m in pattern.finditer(line):
                if m.group(1) in names:
                    yield number, f'the policy name "{m.group(1)}"'
        for pattern in PREFIX_CHECKS:
            for m in pattern.finditer(line):
                if m.group(1) in prefixes:
                    yield number, f'the prefix "{m.group(1)}" of policy names'


def scanned_files(root):
    for top in SCANNED:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix in SUFFIXES and path.is_file() and not rel.startswith(EXEMPT):
                yield path, rel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.root.resolve()
    names = builtin_names(root)
    if len(names) < 10:
        print(f"check_policy_names: found only {len(names)} built-in names in {BUILTIN}; "
              "has the file that defines the built-in descriptors moved?")
        return 1
    found = 0
    for path, rel in scanned_files(root):
        for number, what in comparisons_in(path.read_text(encoding="utf-8", errors="replace"), names):
            print(f"{rel}:{number}: compares {what}; ask the policy's descriptor instead "
                  "(policy::Registry::describe, policy/policy_descriptor.hpp)")
            found += 1
    if found:
        print(f"check_policy_names: {found} comparison(s) of a policy name outside {EXEMPT}")
        return 1
    print(f"check_policy_names: no policy name ({len(names)} built-in) compared outside {EXEMPT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
