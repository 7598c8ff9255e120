#!/usr/bin/env bash
# Flake hunting: runs the test suite, or a filter of it, N times beside K busy
# loops that take CPU from it, in any of CI's builds, and reports every test
# that failed at least once, with how often. A test that fails only when the
# machine is loaded or slow (a sanitizer) is a flake: fix the test or the
# code, whichever is wrong.
#
#   bash tools/stress_tests.sh [--runs N] [--busy K] [--filter REGEX] [--exclude REGEX] [-j J]
#                              [--build main|sanitize|thread]... [--build-dir DIR]...
#
#   --runs N        times to run the suite in each build (default 5)
#   --busy K        busy loops running beside every run (default 2; 0: none)
#   --filter REGEX  only the ctest tests whose names match (ctest -R)
#   --exclude REGEX leave out the ctest tests whose names match (ctest -E)
#   -j J            tests run side by side (default: the number of cores)
#   --build KIND    configure and build one of CI's builds (tools/ci_builds.sh)
#                   in build-stress-KIND and run there: main (GCC, the whole
#                   suite), sanitize (Clang, AddressSanitizer and
#                   UndefinedBehaviorSanitizer), thread (ThreadSanitizer, the
#                   multi-threaded tests); repeatable
#   --build-dir DIR run in a build directory that is already built; repeatable
# With neither --build nor --build-dir: --build main.
#
# The fuzzers, the installed package and the sanitizer build's
# sanitizer-free checks are left out, as tools/test.sh leaves them out of
# the sanitizer stages. Exit status: 0 when every run of every test passed,
# 1 when any failed, 2 on bad arguments. The report is also written to
# stress-report.txt in the current directory.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ci_builds.sh

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
runs=5 busy=2 filter="" exclude="" jobs=$(nproc)
kinds=() dirs=()
while (($#)); do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --busy) busy=${2:?--busy needs a number}; shift 2 ;;
    --filter) filter=${2:?--filter needs a regular expression}; shift 2 ;;
    --exclude) exclude=${2:?--exclude needs a regular expression}; shift 2 ;;
    -j) jobs=${2:?-j needs a number}; shift 2 ;;
    --build) kinds+=("${2:?--build needs main, sanitize or thread}"); shift 2 ;;
    --build-dir) dirs+=("${2:?--build-dir needs a directory}"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "stress_tests: unknown argument '$1'" >&2; usage ;;
  esac
done
for n in "$runs" "$busy" "$jobs"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "stress_tests: '$n' is not a whole number (--runs, --busy and -j take one)" >&2; exit 2; }
done
((runs >= 1)) || { echo "stress_tests: --runs must be at least 1" >&2; exit 2; }
((jobs >= 1)) || { echo "stress_tests: -j must be at least 1" >&2; exit 2; }
((${#kinds[@]} + ${#dirs[@]})) || kinds=(main)

# Every build to run: the ones to make first, then the ones given.
targets=()
for kind in "${kinds[@]}"; do
  case "$kind" in main|sanitize|thread) ;; *) echo "stress_tests: unknown build '$kind'; allowed: main, sanitize, thread" >&2; exit 2 ;; esac
  dir=build-stress-$kind
  echo "stress_tests: building '$kind' in $dir"
  configure_build "$kind" "$dir"
  if [ "$kind" = thread ]; then cmake --build "$dir" -j"$jobs" --target cachedarrays_tests; else cmake --build "$dir" -j"$jobs"; fi
  targets+=("$kind:$dir")
done
for dir in "${dirs[@]}"; do
  [ -f "$dir/CTestTestfile.cmake" ] || { echo "stress_tests: '$dir' is not a build directory with tests" >&2; exit 2; }
  kind=main
  grep -q 'CACHEDARRAYS_SANITIZE:STRING=address' "$dir/CMakeCache.txt" 2>/dev/null && kind=sanitize
  grep -q 'CACHEDARRAYS_SANITIZE:STRING=thread' "$dir/CMakeCache.txt" 2>/dev/null && kind=thread
  targets+=("$kind:$dir")
done

busy_pids=()
stop_busy() {
  for pid in "${busy_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  busy_pids=()
}
trap stop_busy EXIT

declare -A failures=()
report=$(mktemp)
for target in "${targets[@]}"; do
  kind=${target%%:*} dir=${target#*:}
  args=(--test-dir "$dir" -j"$jobs" --output-on-failure)
  run_filter=$filter run_exclude=$exclude
  case "$kind" in
    sanitize) run_exclude="^(install|fuzz)\.${run_exclude:+|$run_exclude}" ;;
    thread) [ -n "$run_filter" ] || run_filter=$ci_thread_test_names ;;
  esac
  [ -z "$run_filter" ] || args+=(-R "$run_filter")
  [ -z "$run_exclude" ] || args+=(-E "$run_exclude")
  for ((run = 1; run <= runs; ++run)); do
    for ((b = 0; b < busy; ++b)); do
      (while :; do :; done) &
      busy_pids+=($!)
    done
    echo "stress_tests: $dir, run $run of $runs, beside $busy busy loops"
    start=$SECONDS
    log="$dir/stress-run-$run.log"
    # ctest leaves the last failing run's list when a run passes: never
    # count an earlier run's failures again.
    failed="$dir/Testing/Temporary/LastTestsFailed.log"
    rm -f "$failed"
    if [ "$kind" = thread ]; then
      TSAN_OPTIONS="$ci_tsan_options" ctest "${args[@]}" >"$log" 2>&1 || true
    else
      ctest "${args[@]}" >"$log" 2>&1 || true
    fi
    stop_busy
    summary=$(grep -E '^[0-9]+% tests passed' "$log" || echo "no summary: see $log")
    echo "stress_tests:   $summary ($((SECONDS - start)) s)"
    if grep -qE '^[0-9]+% tests passed' "$log" && [ -s "$failed" ]; then
      while IFS=: read -r _ name; do
        key="$dir $name"
        failures[$key]=$(( ${failures[$key]:-0} + 1 ))
      done <"$failed"
    elif ! grep -qE '^[0-9]+% tests passed' "$log"; then
      failures["$dir (the run itself: $log)"]=$(( ${failures["$dir (the run itself: $log)"]:-0} + 1 ))
    fi
  done
done

{
  echo "stress_tests: ${runs} runs of each build beside ${busy} busy loops, -j${jobs}${filter:+, tests matching '$filter'}${exclude:+, leaving out '$exclude'}"
  if ((${#failures[@]} == 0)); then
    echo "no test failed in any run"
  else
    echo "tests that failed at least once (failed runs / runs, build, test):"
    for key in "${!failures[@]}"; do echo "  ${failures[$key]}/$runs  $key"; done | sort -t/ -k1,1nr
  fi
} | tee "$report"
cp "$report" stress-report.txt
rm -f "$report"
((${#failures[@]} == 0))
