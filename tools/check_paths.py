#!/usr/bin/env python3
"""Checks that no code or doc leads to a file outside the repository.

A clone anywhere must build, test and read the same: a path into one
machine's directories, or out of the checkout into a directory beside it,
works on that machine only. So a tracked text file holds

  - no relative path that climbs out of the repository: `../x` is resolved
    from the file's own directory (a Markdown link, an include), and
    `${PROJECT_SOURCE_DIR}/..`, `${CMAKE_SOURCE_DIR}/..` and
    `${CMAKE_CURRENT_SOURCE_DIR}/..` from the directory they name;
  - no absolute path into the root user's, a home or a work directory at
    the top of the file system, which no other machine has.

System paths (/usr/share/..., /dev/shm) are the Debian machine's, not one
machine's, and pass. An install's `$ORIGIN/../lib` is relative to the
installed program, not to the source tree, and passes. docs/results/data
holds what benchmarks printed on the machine they ran on, and is not read.

Prints one line per finding, naming file and line, and exits 1 if there is
any.

    check_paths.py [--root DIR]     (default: the repository this file is in)
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

SKIPPED_DIRS = ("docs/results/data",)
TEXT_SUFFIXES = (".hpp", ".cpp", ".h", ".py", ".sh", ".cmake", ".in", ".md", ".txt", ".json", ".yml", ".yaml",
                 ".supp", ".cfg", ".toml", "")
HINT = "keep every file the project needs inside the repository (docs/references.md lists where data came from)"

# A path-like word holding "../": letters, digits and the characters paths use.
CLIMBING = re.compile(r"[\w${}.+~@/-]*\.\./[\w${}.+~@/-]*")
MACHINE_DIR = re.compile(r"(?<![\w.~$}-])/(root|home|work)/[\w.-]")
CMAKE_DIRS = ("${PROJECT_SOURCE_DIR}", "${CMAKE_SOURCE_DIR}", "${CMAKE_CURRENT_SOURCE_DIR}")


def tracked_files(root: pathlib.Path) -> list[pathlib.Path]:
    """The repository's tracked files, or every file under a root that is not a checkout."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
        if (root / ".git").exists():
            return [root / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git" and not d.startswith("build")]
        files.extend(pathlib.Path(dirpath) / f for f in filenames)
    return files


def escapes(root: pathlib.Path, base: pathlib.Path, relative: str) -> bool:
    """Whether `relative`, read from directory `base`, names a place outside `root`."""
    target = os.path.normpath(os.path.join(str(base), relative))
    return os.path.commonpath([str(root), target]) != str(root)


def findings_in(root: pathlib.Path, path: pathlib.Path) -> list[str]:
    rel = path.relative_to(root).as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in CLIMBING.finditer(line):
            word = match.group(0)
            if word.startswith("$ORIGIN") or "://" in line[max(0, match.start() - 8):match.start() + 3]:
                continue
            base, rest = path.parent, word
            for var in CMAKE_DIRS:
                if word.startswith(var):
                    base = root if var != "${CMAKE_CURRENT_SOURCE_DIR}" else path.parent
                    rest = word[len(var):].lstrip("/")
                    break
            else:
                # Only a path that starts climbing at once is read from the
                # file's directory; "a/../b" stays where it began.
                rest = word[word.index("../"):] if not word.startswith("../") else word
                if "$" in rest or "{" in rest:
                    continue
            if escapes(root, base, rest):
                out.append(f"{rel}:{number}: path outside the repository: {word}")
        for match in MACHINE_DIR.finditer(line):
            out.append(f"{rel}:{number}: path into one machine's directories: {line[match.start():].split()[0]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.root.resolve()
    findings = []
    for path in sorted(tracked_files(root)):
        rel = path.relative_to(root).as_posix()
        if any(rel.startswith(d + "/") for d in SKIPPED_DIRS) or not path.is_file():
            continue
        if path.suffix not in TEXT_SUFFIXES and path.name not in ("CMakeLists.txt",):
            continue
        findings.extend(findings_in(root, path))
    for f in findings:
        print(f)
    if findings:
        print(f"check_paths: {len(findings)} path(s) leading outside the repository; {HINT}")
        return 1
    print(f"check_paths: no path leads outside {root.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
