#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this and nothing else):
#  1. a warnings-as-errors build of everything, and every ctest test
#     (unit, property, stress, examples, install/consumer);
#  2. the suite again under AddressSanitizer and UndefinedBehaviorSanitizer,
#     one build instrumented for both, at -O1 (the suite runs several times
#     faster than at -O0, and the sanitizers lose nothing they report);
#  3. the multi-threaded tests (stress, asynchronous copies, the mover, the
#     capacity planner's parallel replays) under ThreadSanitizer, in a build
#     of only their files;
#  4. the libFuzzer targets (fuzz/), built with Clang under AddressSanitizer
#     and UndefinedBehaviorSanitizer, each fuzzing for 30 s from its seed
#     corpus: a crash fails the run. The nn file readers' targets need the
#     nn library, so this build has it (and only what those targets need;
#     without MPI, which also keeps the build without it compiling).
# Each stage prints its minutes: CI has 90 in all on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

jobs=$(nproc)
run_build() {  # dir, cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -DCACHEDARRAYS_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

stage_start=$SECONDS
stage_end() { echo "== $1: $(( (SECONDS - stage_start) / 60 )) min $(( (SECONDS - stage_start) % 60 )) s"; stage_start=$SECONDS; }

echo "== build (RelWithDebInfo, -Werror) and full suite"
run_build build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir build-test --output-on-failure -j"$jobs"
stage_end "build and full suite"

echo "== address and undefined-behaviour sanitizers"
run_build build-sanitize -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" \
  -DCACHEDARRAYS_SANITIZE=address,undefined \
  -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -E '^install\.'
stage_end "address and undefined-behaviour sanitizers"

echo "== thread sanitizer (multi-threaded tests)"
run_build build-thread -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCACHEDARRAYS_SANITIZE=thread \
  -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF -DCACHEDARRAYS_BUILD_NN=OFF \
  "-DCACHEDARRAYS_TEST_FILTER=/(async_copy|stress|copy_engine|copy_timeline|autotm_policy|planned_policies|capacity_plan)_tests\\.cpp$"
TSAN_OPTIONS="suppressions=$PWD/tools/tsan.supp halt_on_error=1" \
  ctest --test-dir build-thread --output-on-failure -j"$jobs" -R 'stress|thread|async'
stage_end "thread sanitizer"

echo "== fuzzing (libFuzzer, Clang, address and undefined-behaviour sanitizers)"
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCACHEDARRAYS_SANITIZE=address,undefined -DCACHEDARRAYS_BUILD_FUZZERS=ON -DCACHEDARRAYS_BUILD_TESTS=OFF \
  -DCACHEDARRAYS_BUILD_EXAMPLES=OFF -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_NN=ON \
  -DCACHEDARRAYS_BUILD_TOOLS=OFF -DCACHEDARRAYS_WITH_MPI=OFF -DCACHEDARRAYS_FUZZ_SECONDS=30 >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_json_readers fuzz_runtime_ops fuzz_nn_data_files fuzz_nn_checkpoint
ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -R '^fuzz\.'
stage_end "fuzzing"
