// Hot and cold values, as a key-value store's reads meet them: N arrays,
// and each iteration K kernels that each read one array chosen by a
// Zipf(1.1) law and add it into an accumulator. A few arrays take most of
// the reads; which ones is fixed (a seeded shuffle of the ranks), while
// every iteration draws new reads, as requests do not repeat.
#include "accumulated_arrays.hpp"

#include <string>
#include <vector>

namespace ca = cachedarrays;

namespace {

constexpr double zipf_exponent = 1.1;
constexpr std::uint64_t seed = 7;

struct KvZipf {
  std::size_t kernels;
  ca::apps::AccumulatedArrays data;
  ca::apps::Zipf law;
  using Arrays = ca::apps::AccumulatedArrays::Arrays;

  explicit KvZipf(ca::apps::Size size)
      : kernels(size == ca::apps::Size::bench ? 400 : 48),
        data{size == ca::apps::Size::bench ? 200u : 24u,
             (size == ca::apps::Size::bench ? (1u << 20) : (64u << 10)) / sizeof(std::uint64_t), 1000},
        law(data.count, zipf_exponent, seed) {}

  std::uint64_t footprint() const { return data.footprint(); }

  // The arrays iteration `index` reads, in order.
  std::vector<std::size_t> reads_of(int index) const {
    ca::apps::Rng rng{seed * 1000003 + static_cast<std::uint64_t>(index)};
    std::vector<std::size_t> chosen;
    for (std::size_t k = 0; k < kernels; ++k) chosen.push_back(law.draw(rng));
    return chosen;
  }

  Arrays setup(ca::Runtime& rt) const { return data.setup(rt); }

  void iteration(ca::Runtime& rt, Arrays& a, int index) const {
    for (const std::size_t i : reads_of(index)) {
      rt.kernel("accumulate", ca::reads(a.values[i]), ca::writes(a.sum), ca::apps::accumulate);
    }
  }

  std::string verify(Arrays& a, int iterations) const {
    return data.verify(a, iterations, [this](int it) { return reads_of(it); });
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<KvZipf>(argc, argv, "kv_zipf",
                                    "arrays read by a Zipf(1.1) law and added into an accumulator");
}
