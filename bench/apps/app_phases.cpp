// A program whose access pattern changes: N arrays, read for a phase of
// iterations as a key-value store's hot and cold values are (K kernels, each
// adding one array drawn by a Zipf(1.1) law into an accumulator), then for a
// phase as a stream (each array in turn added into the accumulator, with
// will_read two arrays ahead and archive behind), and so on, alternating. The
// policy that suits one phase need not suit the other: a hot set wants its
// few arrays kept in fast memory, a stream wants each array once, in order.
// Each timed iteration's phase goes in the report, so that
// bench/app_policies can price the oracle that runs each phase under its own
// best policy.
#include "app_main.hpp"

#include <cstring>
#include <span>
#include <string>

namespace ca = cachedarrays;

namespace {

constexpr double zipf_exponent = 1.1;
constexpr std::uint64_t seed = 11;

void accumulate(std::span<const std::uint64_t> value, std::span<std::uint64_t> sum) {
  for (std::size_t j = 0; j < value.size(); ++j) sum[j] += value[j];
}

struct Phases {
  std::size_t arrays, hot_kernels, stream_passes, words;
  int phase_length;  // iterations per phase, warm-ups included
  ca::apps::Zipf law;

  explicit Phases(ca::apps::Size size)
      : arrays(size == ca::apps::Size::bench ? 64 : 12),
        hot_kernels(size == ca::apps::Size::bench ? 192 : 24),
        stream_passes(2),
        words((size == ca::apps::Size::bench ? (4u << 20) : (64u << 10)) / sizeof(std::uint64_t)),
        phase_length(size == ca::apps::Size::bench ? 20 : 2),
        law(arrays, zipf_exponent, seed) {}

  std::uint64_t footprint() const { return (arrays + 1) * words * sizeof(std::uint64_t); }

  /// "hot" or "stream": the phase iteration `index` is in.
  std::string phase_of(int index) const { return (index / phase_length) % 2 == 0 ? "hot" : "stream"; }

  std::vector<std::uint64_t> initial(std::size_t a) const {
    ca::apps::Rng rng{2000 + a};
    std::vector<std::uint64_t> v(words);
    for (auto& x : v) x = rng.next();
    return v;
  }

  // The arrays iteration `index` reads, in order.
  std::vector<std::size_t> reads_of(int index) const {
    std::vector<std::size_t> chosen;
    if (phase_of(index) == "stream") {
      for (std::size_t pass = 0; pass < stream_passes; ++pass) {
        for (std::size_t i = 0; i < arrays; ++i) chosen.push_back(i);
      }
      return chosen;
    }
    ca::apps::Rng rng{seed * 1000003 + static_cast<std::uint64_t>(index)};
    for (std::size_t k = 0; k < hot_kernels; ++k) chosen.push_back(law.draw(rng));
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
    const std::vector<std::size_t> reads = reads_of(index);
    const bool stream = phase_of(index) == "stream";
    for (std::size_t k = 0; k < reads.size(); ++k) {
      // A stream says what it reads next and what it is done with.
      if (stream && k + 2 < reads.size()) a.values[reads[k + 2]].will_read();
      rt.kernel("accumulate", ca::reads(a.values[reads[k]]), ca::writes(a.sum), accumulate);
      if (stream) a.values[reads[k]].archive();
    }
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
  return ca::apps::app_main<Phases>(argc, argv, "phases",
                                    "arrays read as a hot set for a phase of iterations, then as a stream, "
                                    "alternating");
}
