#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this and nothing else):
#  1. a warnings-as-errors build of everything, and every ctest test
#     (unit, property, stress, examples, install/consumer);
#  2. the suite again under AddressSanitizer and UndefinedBehaviorSanitizer;
#  3. the multi-threaded tests (stress, asynchronous copies) under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

jobs=$(nproc)
run_build() {  # dir, cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -DCACHEDARRAYS_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

echo "== build (RelWithDebInfo, -Werror) and full suite"
run_build build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir build-test --output-on-failure -j"$jobs"

for san in address undefined; do
  echo "== $san sanitizer"
  run_build "build-$san" -DCMAKE_BUILD_TYPE=Debug -DCACHEDARRAYS_SANITIZE=$san \
    -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF
  ctest --test-dir "build-$san" --output-on-failure -j"$jobs" -E '^install\.'
done

echo "== thread sanitizer (multi-threaded tests)"
run_build build-thread -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCACHEDARRAYS_SANITIZE=thread \
  -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF
TSAN_OPTIONS="suppressions=$PWD/tools/tsan.supp halt_on_error=1" \
  ctest --test-dir build-thread --output-on-failure -j"$jobs" -R 'stress|thread|async'
