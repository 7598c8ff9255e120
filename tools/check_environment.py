#!/usr/bin/env python3
"""Checks that the library reads its environment in one place.

docs/design.md, "Configuration": every environment variable is read in
include/cachedarrays/runtime/environment*.hpp, through an EnvironmentLookup,
and listed by environment_variables(); the layers below take the values as
arguments or process-wide settings, and nn asks runtime/environment. This
scans the C++ sources under include/, src/, tools/, bench/ and examples/
(tests/ are not scanned: they set variables to test the readers) for a call
of getenv or secure_getenv (std::, :: or bare) outside those files.
Comments and string literals are ignored. Prints one line per call, naming
the file and line, and exits 1 if there is any.

    check_environment.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import pathlib
import re
import sys

EXEMPT = ("include/cachedarrays/runtime/environment.hpp", "include/cachedarrays/runtime/environment-inl.hpp")
SCANNED = ("include", "src", "tools", "bench", "examples")
SUFFIXES = {".hpp", ".cpp", ".h", ".cc"}
READ = re.compile(r"(?<![\w.>])(?:std\s*::\s*|::\s*)?((?:secure_)?getenv)\s*\(")
RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\(')


def code_only(text):
    """`text` with comments and the insides of string and character literals
    blanked, newlines kept, so that line numbers stay."""
    out = []
    i, n = 0, len(text)

    def blank(chunk):
        return "".join(ch if ch == "\n" else " " for ch in chunk)

    while i < n:
        raw = RAW_STRING.match(text, i) if text[i] == "R" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, raw.end())
            end = n if end < 0 else end + len(close)
            out.append(blank(text[i:end]))
            i = end
        elif text[i] in "\"'":
            quote = text[i]
            j = i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i:j + 1]))
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(blank(text[i:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(blank(text[i:end]))
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def reads_in(text):
    """(line, function) for each call of getenv or secure_getenv in `text`."""
    for number, line in enumerate(code_only(text).splitlines(), start=1):
        for m in READ.finditer(line):
            yield number, m.group(1)


def scanned_files(root):
    for top in SCANNED:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix in SUFFIXES and path.is_file() and rel not in EXEMPT:
                yield path, rel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.root.resolve()
    found = 0
    for path, rel in scanned_files(root):
        for number, function in reads_in(path.read_text(encoding="utf-8", errors="replace")):
            print(f"{rel}:{number}: calls {function}; read the variable in runtime/environment through an "
                  "EnvironmentLookup (process_environment), list it in environment_variables(), and pass "
                  "the value down")
            found += 1
    if found:
        print(f"check_environment: {found} read(s) of the environment outside runtime/environment")
        return 1
    print("check_environment: the environment is read only in runtime/environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
