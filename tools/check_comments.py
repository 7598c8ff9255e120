#!/usr/bin/env python3
"""Checks that code comments say why, never when.

A comment explains why the code is as it is; the history of how it got
there belongs to version control, and figures measured on some machine on
some day belong in docs/results/. So a comment carries

  - no issue reference: "issue 14", "issues 3 and 4", "#14", "(#14)";
  - no commit hash: a word of 7 to 40 lowercase hex characters with at
    least one digit and at least one of a-f, not written as 0x...

Only comments are read: `//` and `/* */` in *.hpp, *.cpp and *.h, and `#`
comments in *.py, *.sh, *.cmake, *.cmake.in and CMakeLists.txt, under
include/ src/ tests/ bench/ examples/ tools/ fuzz/ cmake/ and the top-level
CMakeLists.txt. String literals (C++ raw strings, Python triple-quoted
strings, CMake quoted and bracket arguments, shell quotes and here-documents)
are not comments, so a hash printed to the user is not a finding. A `#`
followed by six or eight hex digits, or in a line that speaks of colour,
is a colour, not an issue.

Measured figures (timings, ratios, bandwidths, accuracies) are too varied to
tell from design constants and published figures by pattern, so this tool
does not enforce them; reviewers do.

Prints one line per finding, naming file and line, and exits 1 if there is
any.

    check_comments.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import io
import pathlib
import re
import sys
import tokenize

DIRS = ("include", "src", "tests", "bench", "examples", "tools", "fuzz", "cmake")
CPP_SUFFIXES = (".hpp", ".cpp", ".h")
HASH_SUFFIXES = (".py", ".sh", ".cmake", ".cmake.in")
HINT = "comments say why, never when (a figure belongs in docs/results/)"

ISSUE_WORD = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)
ISSUE_HASH = re.compile(r"(?<![\w&#])#(\d+)(?![\w])")
COLOUR = re.compile(r"colou?r|rgb|\bhex\b", re.IGNORECASE)
COMMIT = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{7,40}(?![0-9A-Za-z_])")
DIGIT = re.compile(r"[0-9]")
HEX_LETTER = re.compile(r"[a-f]")


# --- comments of C++ -------------------------------------------------------

RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")


def cpp_comments(text):
    """(line, text) for each line of each comment of a C++ source."""
    out = []
    i, n, line = 0, len(text), 1

    def skip_quoted(i, quote):
        """Index after the literal opened at text[i] (stops at a newline)."""
        i += 1
        while i < n and text[i] != quote and text[i] != "\n":
            i += 2 if text[i] == "\\" else 1
        return min(i + 1, n) if i < n and text[i] == quote else i

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = i
            while True:  # a backslash at the end of the line continues it
                k = text.find("\n", j)
                k = n if k < 0 else k
                if text[j:k].endswith("\\") and k < n:
                    j = k + 1
                    continue
                break
            for offset, part in enumerate(text[i + 2:k].split("\n")):
                out.append((line + offset, part))
            line += text.count("\n", i, k)
            i = k
        elif text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k
            for offset, part in enumerate(text[i + 2:k].split("\n")):
                out.append((line + offset, part))
            line += text.count("\n", i, k)
            i = k + 2
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in RAW_PREFIXES and j < n and text[j] == '"':
                open_paren = text.find("(", j)
                delimiter = text[j + 1:open_paren] if open_paren >= 0 else ""
                end = text.find(")" + delimiter + '"', open_paren) if open_paren >= 0 else -1
                end = n if end < 0 else end + len(delimiter) + 2
                line += text.count("\n", i, end)
                i = end
            else:
                i = j  # an identifier; a prefix (L, u8) leaves its quote next
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1  # a pp-number, whose ' are digit separators
            while j < n and (text[j].isalnum() or text[j] in "._'"
                             or (text[j] in "+-" and text[j - 1] in "eEpP")):
                j += 1
            i = j
        elif c in "\"'":
            i = skip_quoted(i, c)
        else:
            i += 1
    return [(number, part.lstrip("/*!<").strip()) for number, part in out]


# --- comments of Python, shell and CMake ----------------------------------

def python_comments(text):
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return shell_comments(text)  # not Python after all: read it leniently
    return [(t.start[0], t.string.lstrip("#").strip()) for t in tokens if t.type == tokenize.COMMENT]


HEREDOC = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def shell_comments(text):
    out = []
    lines = text.split("\n")
    number = 0
    in_quote = None  # ' or " while a quoted word spans lines
    while number < len(lines):
        source = lines[number]
        number += 1
        i, n = 0, len(source)
        while i < n:
            c = source[i]
            if in_quote:
                if c == "\\" and in_quote == '"':
                    i += 2
                    continue
                if c == in_quote:
                    in_quote = None
                i += 1
            elif c == "\\":
                i += 2
            elif c in "'\"":
                in_quote = c
                i += 1
            elif c == "#" and (i == 0 or source[i - 1] in " \t;&|()"):
                out.append((number, source[i:].lstrip("#").strip()))
                break
            else:
                i += 1
        if in_quote is None:
            for m in HEREDOC.finditer(source.split("#")[0]):
                strip_tabs, terminator = m.group(1) == "-", m.group(3)
                while number < len(lines):
                    body = lines[number]
                    number += 1
                    if (body.lstrip("\t") if strip_tabs else body) == terminator:
                        break
    return out


BRACKET_OPEN = re.compile(r"\[(=*)\[")


def cmake_comments(text):
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == "\\":
            i += 2
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + 1
        elif c == "#":
            bracket = BRACKET_OPEN.match(text, i + 1)
            if bracket:
                close = "]" + bracket.group(1) + "]"
                k = text.find(close, bracket.end())
                k = n if k < 0 else k
                body = text[bracket.end():k]
                k += len(close)
            else:
                k = text.find("\n", i)
                k = n if k < 0 else k
                body = text[i + 1:k]
            for offset, part in enumerate(body.split("\n")):
                out.append((line + offset, part.lstrip("#").strip()))
            line += text.count("\n", i, k)
            i = k
        elif c == "[" and (i == 0 or text[i - 1] in " \t\n(") and BRACKET_OPEN.match(text, i):
            bracket = BRACKET_OPEN.match(text, i)
            close = "]" + bracket.group(1) + "]"
            k = text.find(close, bracket.end())
            k = n if k < 0 else k + len(close)
            line += text.count("\n", i, k)
            i = k
        else:
            i += 1
    return out


# --- the rules ---------------------------------------------------------------

def findings(comment, following=""):
    """(what, excerpt) for each rule a comment line breaks. `following` is
    the comment's next line, if any, so that "issue" at the end of one line
    and its number at the start of the next are one reference; a match that
    starts on the next line is that line's own finding."""
    text = comment + " " + following if following else comment
    found = []
    for m in ISSUE_WORD.finditer(text):
        if m.start() < len(comment):
            found.append(("issue reference", m.group(0)))
    for m in ISSUE_HASH.finditer(comment):
        if len(m.group(1)) in (6, 8) or COLOUR.search(comment):
            continue  # a colour
        found.append(("issue reference", m.group(0)))
    for m in COMMIT.finditer(comment):
        word = m.group(0)
        if DIGIT.search(word) and HEX_LETTER.search(word):
            found.append(("commit hash", word))
    return found


def comments_of(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    name = path.name
    if name.endswith(CPP_SUFFIXES):
        return cpp_comments(text)
    if name.endswith(".py"):
        return python_comments(text)
    if name.endswith(".sh"):
        return shell_comments(text)
    return cmake_comments(text)


def sources(root):
    files = [root / "CMakeLists.txt"] if (root / "CMakeLists.txt").is_file() else []
    for d in DIRS:
        for p in (root / d).rglob("*"):
            if p.is_file() and (p.name.endswith(CPP_SUFFIXES + HASH_SUFFIXES) or p.name == "CMakeLists.txt"):
                files.append(p)
    return sorted(files)


def excerpt(comment, limit=100):
    return comment if len(comment) <= limit else comment[:limit - 3] + "..."


def main():
    here = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=here)
    root = parser.parse_args().root.resolve()

    files = sources(root)
    if not files:
        print(f"check_comments: no sources under {root} ({', '.join(DIRS)})")
        return 2
    count = 0
    for path in files:
        comments = comments_of(path)
        for i, (number, comment) in enumerate(comments):
            following = ""
            if i + 1 < len(comments) and comments[i + 1][0] == number + 1:
                following = comments[i + 1][1]
            for what, _ in findings(comment, following):
                print(f"{path.relative_to(root)}:{number}: {what} in a comment: {excerpt(comment)}; {HINT}")
                count += 1
    print(f"check_comments: {len(files)} files, {count} comment(s) naming an issue or a commit")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
