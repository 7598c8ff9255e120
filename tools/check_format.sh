#!/usr/bin/env bash
# Fails when a C++ file of the tree is not laid out as clang-format lays it out
# (.clang-format), naming each such file and the command that fixes it. CI runs
# it as its own stage (tools/test.sh); Debian 12's clang-format (14) is the
# reference, as other versions lay some constructs out differently.
#   bash tools/check_format.sh          check every tracked .cpp and .hpp
#   bash tools/check_format.sh --fix    reformat them in place
set -euo pipefail
cd "$(dirname "$0")/.."

fix=false
case "${1:-}" in
  "") ;;
  --fix) fix=true ;;
  *) echo "check_format: unknown argument '$1'; allowed: none (check) or --fix" >&2; exit 2 ;;
esac
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is not installed; bash tools/install-deps.sh installs it" >&2
  exit 2
fi

# The tracked files in a clone; every such file on disk otherwise (a source tarball).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
else
  mapfile -t files < <(find include src tests bench examples tools fuzz -name '*.cpp' -o -name '*.hpp' | sort)
fi

if $fix; then
  clang-format -i --style=file "${files[@]}"
  echo "check_format: reformatted ${#files[@]} files"
  exit 0
fi

# One clang-format for every file: it reports each line it would change as
# "FILE:LINE:COL: error: code should be clang-formatted".
mapfile -t drifted < <(clang-format --dry-run --Werror --style=file "${files[@]}" 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
for file in "${drifted[@]}"; do echo "check_format: $file is not as clang-format lays it out"; done
echo "check_format: ${#files[@]} files, ${#drifted[@]} not formatted ($(clang-format --version | head -1))"
if ((${#drifted[@]})); then
  echo "check_format: fix them with: bash tools/check_format.sh --fix (or clang-format -i FILE)"
  exit 1
fi
