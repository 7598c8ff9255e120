#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this and nothing else):
#  1. a warnings-as-errors build of everything, and every ctest test
#     (unit, property, stress, examples, quick benchmarks, install/consumer);
#  2. the API reference: Doxygen over the public headers, every warning
#     (an undocumented public class or function among them) an error;
#  3. the Debian package: built by CPack, installed with apt, the install
#     consumers built against it from /usr and run, then removed;
#  4. the suite again under AddressSanitizer and UndefinedBehaviorSanitizer,
#     one Clang build instrumented for both at -O1 (the suite runs several
#     times faster than at -O0, and the sanitizers lose nothing they report);
#  5. the libFuzzer targets (fuzz/), built in that same Clang build, so with
#     the same sanitizers and nothing compiled twice, each fuzzing for 30 s
#     from its seed corpus: a crash fails the run;
#  6. the multi-threaded tests (stress, asynchronous copies, the mover, reads
#     that skip the runtime lock, the capacity planner's parallel replays)
#     under ThreadSanitizer, in a build of only their files.
# Each stage prints its minutes: CI has 90 in all on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

jobs=$(nproc)
# Line tables only (-g1): enough for every backtrace and sanitizer report,
# and a third less to compile than full debug information.
line_tables="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
stage_start=$SECONDS
stage_end() { echo "== $1: $(( (SECONDS - stage_start) / 60 )) min $(( (SECONDS - stage_start) % 60 )) s"; stage_start=$SECONDS; }

echo "== build (RelWithDebInfo, -Werror) and full suite"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo "$line_tables" -DCACHEDARRAYS_WERROR=ON -DCACHEDARRAYS_BUILD_DOCS=ON >/dev/null
cmake --build build-test -j"$jobs"
ctest --test-dir build-test --output-on-failure -j"$jobs"
stage_end "build and full suite"

echo "== API reference (Doxygen, warnings are errors)"
cmake --build build-test --target docs
stage_end "API reference"

echo "== Debian package: built, installed, used by the install consumers, removed"
bash tools/check_deb.sh build-test
stage_end "Debian package"

echo "== address and undefined-behaviour sanitizers (Clang; the fuzz targets built beside the suite)"
cmake -S . -B build-sanitize -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
  -DCACHEDARRAYS_SANITIZE=address,undefined -DCACHEDARRAYS_WERROR=ON \
  -DCACHEDARRAYS_BUILD_FUZZERS=ON -DCACHEDARRAYS_FUZZ_SECONDS=30 \
  -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF -DCACHEDARRAYS_BUILD_TOOLS=OFF >/dev/null
cmake --build build-sanitize -j"$jobs"
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -E '^(install|fuzz)\.'
stage_end "address and undefined-behaviour sanitizers"

echo "== fuzzing (libFuzzer, the sanitizers' build)"
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -R '^fuzz\.'
stage_end "fuzzing"

echo "== thread sanitizer (multi-threaded tests)"
cmake -S . -B build-thread -DCMAKE_BUILD_TYPE=RelWithDebInfo "$line_tables" -DCACHEDARRAYS_SANITIZE=thread -DCACHEDARRAYS_WERROR=ON \
  -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF -DCACHEDARRAYS_BUILD_NN=OFF \
  -DCACHEDARRAYS_BUILD_TOOLS=OFF \
  "-DCACHEDARRAYS_TEST_FILTER=/(async_copy|stress|unlocked_reads|copy_engine|copy_timeline|autotm_policy|planned_policies|capacity_plan)_tests\\.cpp$" \
  >/dev/null
cmake --build build-thread -j"$jobs" --target cachedarrays_tests
TSAN_OPTIONS="suppressions=$PWD/tools/tsan.supp halt_on_error=1" \
  ctest --test-dir build-thread --output-on-failure -j"$jobs" -R 'stress|thread|async|unlocked|placement'
stage_end "thread sanitizer"
