// Wall-clock bounds that hold on any machine. A test checks a time limit's
// contract by what the code reports (it stopped, it said so, its result is
// valid); a wall-clock bound is only there to catch a hang or a runaway, and
// then it is a generous multiple of what the work needs, scaled by how much
// slower this process runs than an ordinary optimised build on an idle core:
// a sanitizer, a debug build, a loaded or slow machine all make it larger.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

// The sanitizers of this build, as CMake's CACHEDARRAYS_SANITIZE spells them
// (tests/CMakeLists.txt defines it for every test binary): both compilers
// are covered alike, where their own macros differ.
#ifndef CACHEDARRAYS_TEST_SANITIZE
#error "CACHEDARRAYS_TEST_SANITIZE must be defined (tests/CMakeLists.txt does, empty without sanitizers)"
#endif

namespace test {

// Instrumented by a sanitizer.
inline constexpr bool sanitized_build = std::string_view(CACHEDARRAYS_TEST_SANITIZE) != "";
// Optimised and not instrumented: the build the longest randomized tests are
// sized for; the others, many times slower, run a fraction of their
// operations.
#ifdef __OPTIMIZE__
inline constexpr bool full_speed_build = !sanitized_build;
#else
inline constexpr bool full_speed_build = false;
#endif

namespace detail {

// The compiled-in floor: instrumented code runs several times slower, even
// where the reference work below would not show it (a solver's library is
// not instrumented, but its callbacks and allocations are).
inline double sanitizer_slowdown() {
  const std::string_view sanitize = CACHEDARRAYS_TEST_SANITIZE;
  double factor = 1;
  if (sanitize.find("address") != std::string_view::npos) factor *= 4;
  if (sanitize.find("undefined") != std::string_view::npos) factor *= 1.5;
  if (sanitize.find("thread") != std::string_view::npos) factor *= 10;
#ifndef __OPTIMIZE__
  factor *= 4;
#endif
  return factor;
}

// A fixed piece of work, sorting pseudo-random numbers, timed at its best of
// three, against what it takes in an optimised build on an idle core of an
// ordinary x86-64 server. The ratio is at least 1: a faster machine keeps
// the bounds as written.
inline double measured_slowdown() {
  using Clock = std::chrono::steady_clock;
  constexpr double reference_seconds = 0.004;
  std::vector<std::uint32_t> values(std::size_t{1} << 16);
  double best = 1e300;
  for (int round = 0; round < 3; ++round) {
    std::uint64_t state = 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(round);
    for (std::uint32_t& v : values) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      v = static_cast<std::uint32_t>(state >> 32);
    }
    const auto start = Clock::now();
    std::sort(values.begin(), values.end());
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return std::max(1.0, best / reference_seconds);
}

}  // namespace detail

// How many times slower than an idle, optimised, uninstrumented build this
// process runs: CACHEDARRAYS_TEST_SLOWDOWN when set (a positive number),
// otherwise the larger of the sanitizer's floor and the measured ratio,
// measured once per process.
inline double slowdown_factor() {
  static const double factor = [] {
    if (const char* s = std::getenv("CACHEDARRAYS_TEST_SLOWDOWN"); s != nullptr && *s != '\0') {
      const double forced = std::strtod(s, nullptr);
      if (forced > 0) return forced;
    }
    return std::max(detail::sanitizer_slowdown(), detail::measured_slowdown());
  }();
  return factor;
}

// A wall-clock bound for work that takes well under `seconds` on an idle,
// optimised build: `seconds` times the slowdown factor. Only a hang or a
// runaway exceeds it.
inline double generous_seconds(double seconds) { return seconds * slowdown_factor(); }

}  // namespace test
