#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this and nothing else):
#  0. the layout: every C++ file as clang-format lays it out (.clang-format);
#  1. a warnings-as-errors build of everything, and every ctest test
#     (unit, property, stress, examples, quick benchmarks, install/consumer);
#  2. the API reference: Doxygen over the public headers, every warning
#     (an undocumented public class or function among them) an error;
#  3. the Debian package: built by CPack, installed with apt, the install
#     consumers built against it from /usr and run, then removed;
#  4. the suite again under AddressSanitizer and UndefinedBehaviorSanitizer,
#     one Clang build instrumented for both at -O1;
#  5. the libFuzzer targets (fuzz/), built in that same Clang build, each
#     fuzzing for 20 s from its seed corpus: a crash fails the run;
#  6. the multi-threaded tests under ThreadSanitizer, in a build of only
#     their files.
# The builds are configured by tools/ci_builds.sh. On 2 cores CI must end in
# 30 minutes, so the next build compiles at the lowest priority beside the
# stages before it (the sanitizers' build from the start, beside the GCC
# build, the suite, the reference and the package; ThreadSanitizer's beside
# the sanitizers' suite): it takes only the time they leave idle, and they
# run as fast as alone.
# Each stage prints its minutes against its share of the 30 (the shares add
# up to 30), and a warning when it takes more, so that drift shows before CI
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ci_builds.sh
jobs=$(nproc)

ci_budget_seconds=1800
ci_start=$SECONDS
stage_name="" stage_budget=0 stage_start=$SECONDS
over_budget=()
stage() {
  stage_name=$1 stage_budget=$2 stage_start=$SECONDS
  echo "== $stage_name (budget $(minutes "$stage_budget"))"
}
minutes() { echo "$(($1 / 60)) min $(($1 % 60)) s"; }
stage_end() {
  local took=$((SECONDS - stage_start))
  echo "== $stage_name: $(minutes "$took") (budget $(minutes "$stage_budget"))"
  if ((took > stage_budget)); then
    echo "== WARNING: '$stage_name' took $(minutes "$took"), over its budget of $(minutes "$stage_budget") of CI's 30 min"
    over_budget+=("$stage_name")
  fi
}

# Background builds: started niced, waited for by name; their output goes to
# a log that is printed when they fail. Whatever is still running when the
# script ends (a failure) is stopped.
declare -A background_pid=() background_log=() background_start=()
background() {
  local name=$1
  shift
  background_log[$name]=$(mktemp)
  background_start[$name]=$SECONDS
  nice -n 19 bash -c "$*" >"${background_log[$name]}" 2>&1 &
  background_pid[$name]=$!
}
join_background() {
  local name=$1
  if ! wait "${background_pid[$name]}"; then
    cat "${background_log[$name]}"
    echo "== FAILED: $name (in the background)"
    exit 1
  fi
  echo "== $name: done, $(minutes $((SECONDS - ${background_start[$name]}))) after it started in the background"
  unset "background_pid[$name]"
}
stop_background() {
  local pid
  for pid in "${background_pid[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
set -m  # each background build in its own process group, so that it stops whole

stage "dependencies" 15
bash tools/install-deps.sh
stage_end

stage "format (clang-format, .clang-format)" 10
bash tools/check_format.sh
stage_end

# From here the sanitizers' Clang build compiles beside the stages, taking
# only what they leave idle (the GCC build's configure and its last targets
# leave a core idle, the suite much more).
background "address and undefined-behaviour sanitizers: build" \
  "source tools/ci_builds.sh && configure_build sanitize build-sanitize && cmake --build build-sanitize -j$jobs"

stage "build (GCC, -O2, -Werror)" 500
configure_build main build-test
cmake --build build-test -j"$jobs"
stage_end

stage "full suite" 230
# The header-only install consumer, the suite's longest test, is built and
# run against the installed package in the package stage: CI runs it there
# alone (the other install tests, also against a prefix other than /usr,
# stay here).
ctest --test-dir build-test --output-on-failure -j"$jobs" -E '^install\.header_only_consumer$' \
  --output-junit "$PWD/build-test/suite-junit.xml"
stage_end

stage "API reference (Doxygen, warnings are errors)" 15
cmake --build build-test --target docs
stage_end

stage "Debian package: built, installed, used by the install consumers, removed" 90
bash tools/check_deb.sh build-test
stage_end

stage "address and undefined-behaviour sanitizers: the rest of their build" 360
join_background "address and undefined-behaviour sanitizers: build"
stage_end

background "thread sanitizer: build" \
  "source tools/ci_builds.sh && configure_build thread build-thread && cmake --build build-thread -j$jobs --target cachedarrays_tests"

stage "address and undefined-behaviour sanitizers: the suite" 410
# The suite's own test times, measured above, order this run: the longest
# tests start first, so that none runs alone on one core at the end.
# CTest's own cost file carries the tests named without a space; the doctest
# cases' times go in as their COST (tools/ctest_costs.py).
mkdir -p build-sanitize/Testing/Temporary
cp build-test/Testing/Temporary/CTestCostData.txt build-sanitize/Testing/Temporary/
/usr/bin/python3 tools/ctest_costs.py build-test/suite-junit.xml build-sanitize/tests/measured_costs.cmake
# The checks of the tree's text (label `tree`) run none of the library's
# code: the suite above ran them.
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -E '^(install|fuzz)\.' -LE '^tree$'
stage_end

stage "fuzzing (libFuzzer, the sanitizers' build)" 50
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -R '^fuzz\.'
stage_end

stage "thread sanitizer (multi-threaded tests)" 120
join_background "thread sanitizer: build"
TSAN_OPTIONS="$ci_tsan_options" ctest --test-dir build-thread --output-on-failure -j"$jobs" -R "$ci_thread_test_names"
stage_end

total=$((SECONDS - ci_start))
echo "== all stages: $(minutes "$total") (budget $(minutes "$ci_budget_seconds"))"
if ((total > ci_budget_seconds)); then
  echo "== WARNING: CI took $(minutes "$total"), over its budget of 30 min; over their own budgets: ${over_budget[*]:-none}"
fi
