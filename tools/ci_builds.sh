# The builds CI tests, configured one way wherever they are made: sourced by
# tools/test.sh (CI) and tools/stress_tests.sh (flake hunting), so that a
# flake found by the one is a flake of the other's builds.
#   source tools/ci_builds.sh; configure_build main|sanitize|thread DIR [extra cmake arguments]

# The multi-threaded test files, which the ThreadSanitizer build compiles
# alone, and the ctest names that select their cases.
ci_thread_test_files='/(async_copy|stress|unlocked_reads|unlocked_writes|pin_slots|policy_switch|auto_policy|copy_engine|copy_timeline|autotm_policy|planned_policies|capacity_plan)_tests\.cpp$'
ci_thread_test_names='stress|thread|async|unlocked|placement'
# ThreadSanitizer's suppressions (the reasons are in the file).
ci_tsan_options="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tsan.supp halt_on_error=1"

configure_build() {
  local kind=$1 dir=$2
  shift 2
  # The sanitizers' builds keep line tables only (-g1): enough for every
  # report they print, and much less to compile than full debug information.
  local line_tables="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
  case "$kind" in
    main)
      # Everything, warnings as errors, and the API reference's target, at -O2
      # and without debug information: nothing in it reads any (a test's
      # failure names its file and line itself), GCC's warnings do not depend
      # on it, and line tables make every compile markedly slower.
      cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
        -DCACHEDARRAYS_WERROR=ON -DCACHEDARRAYS_BUILD_DOCS=ON "$@" >/dev/null ;;
    sanitize)
      # AddressSanitizer and UndefinedBehaviorSanitizer in one Clang build at
      # -O1 (the suite runs several times faster than at -O0, and the
      # sanitizers lose nothing they report), with the libFuzzer targets, so
      # that they share its objects and its instrumentation.
      cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
        "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DCACHEDARRAYS_SANITIZE=address,undefined -DCACHEDARRAYS_WERROR=ON \
        -DCACHEDARRAYS_BUILD_FUZZERS=ON -DCACHEDARRAYS_FUZZ_SECONDS=20 \
        -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF -DCACHEDARRAYS_BUILD_TOOLS=OFF \
        "$@" >/dev/null ;;
    thread)
      # ThreadSanitizer on the multi-threaded test files only.
      cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$line_tables" -DCACHEDARRAYS_SANITIZE=thread \
        -DCACHEDARRAYS_WERROR=ON -DCACHEDARRAYS_BUILD_BENCHMARKS=OFF -DCACHEDARRAYS_BUILD_EXAMPLES=OFF \
        -DCACHEDARRAYS_BUILD_NN=OFF -DCACHEDARRAYS_BUILD_TOOLS=OFF "-DCACHEDARRAYS_TEST_FILTER=$ci_thread_test_files" \
        "$@" >/dev/null ;;
    *)
      echo "configure_build: unknown build '$kind'; allowed: main, sanitize, thread" >&2
      return 2 ;;
  esac
}
