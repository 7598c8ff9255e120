#!/usr/bin/env python3
"""Checks that no function in the programs a user reads first is too long.

The examples and the benchmarks are what a user copies from: each function
there should be read in one sitting, so none is longer than LIMIT lines
(80), counted from the first line of its signature to its closing brace.
A longer one usually holds two concepts (parsing, a run, a report); split
it along them.

The C++ files (*.cpp, *.hpp, *.h) under bench/ and examples/ are read by a
heuristic over brace matching, not a parser: comments, string and character
literals and preprocessor lines are dropped; a brace at namespace or class
scope opens a function body when the text before it is a signature (it ends
with `)`, perhaps followed by qualifiers or a trailing return type, or holds
a constructor's initialiser list), and a brace inside a body belongs to that
body, so a lambda or a local class counts towards the function around it.

Prints one line per function over the limit, naming file, line and function,
and exits 1 if there is any.

    check_function_length.py [--root DIR] [--limit N] [DIR ...]
        (default root: the repository this file is in; default DIRs: bench examples)
"""
import argparse
import pathlib
import re
import sys

DEFAULT_DIRS = ("bench", "examples")
SUFFIXES = (".cpp", ".hpp", ".h")
SCOPE_KEYWORD = re.compile(r"^(template\s*<.*>\s*)?(inline\s+)?(namespace|class|struct|union|enum|extern)\b")
# What may follow a signature's closing parenthesis before its body.
QUALIFIERS = re.compile(r"^(\s*(const|volatile|noexcept|override|final|mutable|&&|&|noexcept\s*\(.*\)"
                        r"|->\s*[\w:<>,\s*&]+))*\s*$")
INITIALISER_LIST = re.compile(r"\)\s*(noexcept\s*)?:(?!:)")
NAME = re.compile(r"([~\w:]+|operator\s*\S+)\s*(<[^()]*>)?\s*$")


def code_of(text):
    """The text with comments, string and character literals and preprocessor
    lines blanked (newlines kept, so that line numbers hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" or (line_start and text[i:].lstrip(" \t").startswith("#")):
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            end = text.find(")" + delimiter + '"', open_paren)
            end = n if end == -1 else end + len(delimiter) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():
                # A digit separator: 1'000'000.
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_signature(header):
    """Whether the text before a brace at namespace or class scope is a
    function's signature (or a lambda's, bound to a name there)."""
    last = header.rfind(")")
    if last == -1:
        return False
    return bool(QUALIFIERS.match(header[last + 1:]) or INITIALISER_LIST.search(header))


def function_name(header):
    before = header[:header.find("(")].rstrip()
    if before.endswith("]"):
        before = before[:before.rfind("=")].rstrip() if "=" in before else before
    match = NAME.search(before)
    return match.group(1) if match else before.split()[-1] if before.split() else "?"


def functions(text):
    """(name, first line, last line) of each function body in the C++ text."""
    code = code_of(text)
    stack = []  # per open brace: "scope", "function" or "other"
    header, header_line = "", None
    body_start = body_name = None
    line = 1
    for c in code:
        if c == "\n":
            line += 1
        in_function = "function" in stack
        if c == "{":
            if in_function:
                stack.append("other")
            else:
                h = " ".join(header.split())
                if SCOPE_KEYWORD.match(h):
                    stack.append("scope")
                elif is_signature(h):
                    stack.append("function")
                    body_start, body_name = header_line or line, function_name(h)
                else:
                    # A brace initialiser: part of the declaration around it.
                    stack.append("other")
                    header += "{"
                    continue
                header, header_line = "", None
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "function":
                yield body_name, body_start, line
                header, header_line = "", None
            elif kind == "other" and not in_function:
                header += "}"
            elif not in_function:
                header, header_line = "", None
        elif c == ";" and not in_function and (not stack or stack[-1] != "other"):
            header, header_line = "", None
        elif not in_function:
            if header_line is None and not c.isspace():
                header_line = line
            header += c


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("dirs", nargs="*", default=list(DEFAULT_DIRS))
    args = parser.parse_args()
    findings = 0
    for directory in args.dirs:
        for path in sorted((args.root / directory).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            rel = path.relative_to(args.root).as_posix()
            for name, first, last in functions(path.read_text(encoding="utf-8")):
                length = last - first + 1
                if length > args.limit:
                    findings += 1
                    print(f"{rel}:{first}: {name} is {length} lines, over {args.limit}; split it along its concepts")
    if findings:
        print(f"check_function_length: {findings} function(s) over {args.limit} lines")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
