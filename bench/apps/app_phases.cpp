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
#include "accumulated_arrays.hpp"

#include <string>
#include <vector>

namespace ca = cachedarrays;

namespace {

constexpr double zipf_exponent = 1.1;
constexpr std::uint64_t seed = 11;

struct Phases {
  std::size_t hot_kernels, stream_passes;
  int phase_length;  // iterations per phase, warm-ups included
  ca::apps::AccumulatedArrays data;
  ca::apps::Zipf law;
  using Arrays = ca::apps::AccumulatedArrays::Arrays;

  explicit Phases(ca::apps::Size size)
      : hot_kernels(size == ca::apps::Size::bench ? 192 : 24),
        stream_passes(2),
        phase_length(size == ca::apps::Size::bench ? 20 : 2),
        data{size == ca::apps::Size::bench ? 64u : 12u,
             (size == ca::apps::Size::bench ? (4u << 20) : (64u << 10)) / sizeof(std::uint64_t), 2000},
        law(data.count, zipf_exponent, seed) {}

  std::uint64_t footprint() const { return data.footprint(); }

  /// "hot" or "stream": the phase iteration `index` is in.
  std::string phase_of(int index) const { return (index / phase_length) % 2 == 0 ? "hot" : "stream"; }

  // The arrays iteration `index` reads, in order.
  std::vector<std::size_t> reads_of(int index) const {
    std::vector<std::size_t> chosen;
    if (phase_of(index) == "stream") {
      for (std::size_t pass = 0; pass < stream_passes; ++pass) {
        for (std::size_t i = 0; i < data.count; ++i) chosen.push_back(i);
      }
      return chosen;
    }
    ca::apps::Rng rng{seed * 1000003 + static_cast<std::uint64_t>(index)};
    for (std::size_t k = 0; k < hot_kernels; ++k) chosen.push_back(law.draw(rng));
    return chosen;
  }

  Arrays setup(ca::Runtime& rt) const { return data.setup(rt); }

  void iteration(ca::Runtime& rt, Arrays& a, int index) const {
    const std::vector<std::size_t> reads = reads_of(index);
    const bool stream = phase_of(index) == "stream";
    for (std::size_t k = 0; k < reads.size(); ++k) {
      // A stream says what it reads next and what it is done with.
      if (stream && k + 2 < reads.size()) a.values[reads[k + 2]].will_read();
      rt.kernel("accumulate", ca::reads(a.values[reads[k]]), ca::writes(a.sum), ca::apps::accumulate);
      if (stream) a.values[reads[k]].archive();
    }
  }

  std::string verify(Arrays& a, int iterations) const {
    return data.verify(a, iterations, [this](int it) { return reads_of(it); });
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<Phases>(argc, argv, "phases",
                                    "arrays read as a hot set for a phase of iterations, then as a stream, "
                                    "alternating");
}
