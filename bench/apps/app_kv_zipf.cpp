// Hot and cold values, as a key-value store's reads meet them: N arrays,
// and each iteration K kernels that each read one array chosen by a
// Zipf(1.1) law and add it into an accumulator. A few arrays take most of
// the reads; which ones is fixed (a seeded shuffle of the ranks), while
// every iteration draws new reads, as requests do not repeat.
#include "app_main.hpp"

#include <cstring>
#include <span>
#include <utility>

namespace ca = cachedarrays;

namespace {

constexpr double zipf_exponent = 1.1;
constexpr std::uint64_t seed = 7;

void accumulate(std::span<const std::uint64_t> value, std::span<std::uint64_t> sum) {
  for (std::size_t j = 0; j < value.size(); ++j) sum[j] += value[j];
}

struct KvZipf {
  std::size_t arrays, kernels, words;
  ca::apps::Zipf law;

  explicit KvZipf(ca::apps::Size size)
      : arrays(size == ca::apps::Size::bench ? 200 : 24),
        kernels(size == ca::apps::Size::bench ? 400 : 48),
        words((size == ca::apps::Size::bench ? (1u << 20) : (64u << 10)) / sizeof(std::uint64_t)),
        law(arrays, zipf_exponent, seed) {}

  std::uint64_t footprint() const { return (arrays + 1) * words * sizeof(std::uint64_t); }

  std::vector<std::uint64_t> initial(std::size_t a) const {
    ca::apps::Rng rng{1000 + a};
    std::vector<std::uint64_t> v(words);
    for (auto& x : v) x = rng.next();
    return v;
  }

  // The arrays iteration `index` reads, in order.
  std::vector<std::size_t> reads_of(int index) const {
    ca::apps::Rng rng{seed * 1000003 + static_cast<std::uint64_t>(index)};
    std::vector<std::size_t> chosen;
    for (std::size_t k = 0; k < kernels; ++k) chosen.push_back(law.draw(rng));
    return chosen;
  }

  struct Arrays {
    std::vector<ca::CachedArray<std::uint64_t>> values;
    ca::CachedArray<std::uint64_t> sum;
  };

  Arrays setup(ca::Runtime& rt) const {
    Arrays a;
    for (std::size_t i = 0; i < arrays; ++i) {
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

  void iteration(ca::Runtime& rt, Arrays& a, int index) const {
    for (const std::size_t i : reads_of(index)) rt.kernel("accumulate", ca::reads(a.values[i]), ca::writes(a.sum), accumulate);
  }

  std::string verify(Arrays& a, int iterations) const {
    std::vector<std::uint64_t> sum(words, 0);
    std::vector<std::vector<std::uint64_t>> values;
    for (std::size_t i = 0; i < arrays; ++i) values.push_back(initial(i));
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

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<KvZipf>(argc, argv, "kv_zipf",
                                    "arrays read by a Zipf(1.1) law and added into an accumulator");
}
