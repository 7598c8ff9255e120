// Random DSA instances shared by the offset-planner tests (dsa_mip_tests,
// dsa_search_tests).
#pragma once

#include <cstdint>
#include <vector>

#include "cachedarrays/plan/offsets/dsa_problem.hpp"
#include "test_support.hpp"

namespace test {

// `n` buffers alive within [0, horizon), sizes 1 to `max_units` units of
// `unit` bytes.
inline cachedarrays::plan::DsaProblem small_dsa_problem(Rng& rng, std::uint64_t n, std::uint64_t unit,
                                                        std::uint64_t alignment, std::uint64_t max_units,
                                                        std::uint32_t horizon) {
  std::vector<cachedarrays::plan::DsaBuffer> buffers;
  for (std::uint64_t i = 0; i < n; ++i) {
    cachedarrays::plan::DsaBuffer b;
    b.size = rng.between(1, max_units) * unit;
    b.start = static_cast<std::uint32_t>(rng.below(horizon));
    b.end = static_cast<std::uint32_t>(rng.between(b.start + 1, horizon));
    buffers.push_back(b);
  }
  return cachedarrays::plan::DsaProblem(std::move(buffers), alignment);
}

}  // namespace test
