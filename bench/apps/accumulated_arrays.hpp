// Arrays of values read into one accumulator, as app_kv_zipf and app_phases
// read them: the values filled from a seeded generator, the kernel that adds
// one into the sum, and the check of the sum against the same additions in
// plain vectors.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "app_main.hpp"

namespace cachedarrays::apps {

/// sum[j] += value[j]: the kernel of the app and of its plain reference.
inline void accumulate(std::span<const std::uint64_t> value, std::span<std::uint64_t> sum) {
  for (std::size_t j = 0; j < value.size(); ++j) sum[j] += value[j];
}

/// `count` arrays of `words` words, array i filled from Rng{first_seed + i},
/// and the accumulator.
struct AccumulatedArrays {
  std::size_t count = 0, words = 0;
  std::uint64_t first_seed = 0;

  /// Array i's contents.
  [[nodiscard]] std::vector<std::uint64_t> initial(std::size_t i) const {
    Rng rng{first_seed + i};
    std::vector<std::uint64_t> v(words);
    for (auto& x : v) x = rng.next();
    return v;
  }

  /// The footprint of the arrays and the accumulator.
  [[nodiscard]] std::uint64_t footprint() const { return (count + 1) * words * sizeof(std::uint64_t); }

  struct Arrays {
    std::vector<CachedArray<std::uint64_t>> values;
    CachedArray<std::uint64_t> sum;
  };

  /// The arrays, filled, and the accumulator, zeroed.
  [[nodiscard]] Arrays setup(Runtime& rt) const {
    Arrays a;
    for (std::size_t i = 0; i < count; ++i) {
      a.values.push_back(rt.array<std::uint64_t>(words));
      const auto v = initial(i);
      auto w = a.values.back().write();
      std::copy(v.begin(), v.end(), w.begin());
    }
    a.sum = rt.array<std::uint64_t>(words);
    auto w = a.sum.write();
    std::fill(w.begin(), w.end(), 0);
    return a;
  }

  /// "" when the accumulator holds the sum of the arrays `reads_of(it)`
  /// names, for it in [0, iterations).
  template <typename ReadsOf>
  [[nodiscard]] std::string verify(Arrays& a, int iterations, ReadsOf reads_of) const {
    std::vector<std::uint64_t> sum(words, 0);
    std::vector<std::vector<std::uint64_t>> values;
    for (std::size_t i = 0; i < count; ++i) values.push_back(initial(i));
    for (int it = 0; it < iterations; ++it) {
      for (const std::size_t i : reads_of(it)) accumulate(values[i], sum);
    }
    const auto got = a.sum.read();
    if (std::memcmp(got.data(), sum.data(), words * sizeof(std::uint64_t)) != 0) {
      return fmt::format("the accumulator differs from the plain computation after {} iterations", iterations);
    }
    return "";
  }
};

}  // namespace cachedarrays::apps
