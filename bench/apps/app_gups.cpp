// GUPS with a hot set, the microbenchmark of HeMem (SOSP'21) and Memtis
// (SOSP'23): a table of 64-bit words split into arrays; each kernel makes
// random read-modify-write updates (x ^= key) into one array. 90% of the
// kernels pick an array of the hot set, a tenth of the arrays fixed by a
// seeded shuffle; the rest pick one of the others, uniformly. Bench size:
// 200 arrays of 1 MiB (a hot set of 20 MiB), 1000 kernels of 4096 updates
// per iteration; test size: 20 arrays of 64 KiB, 100 kernels of 256.
#include "app_main.hpp"

#include <cstring>
#include <numeric>
#include <span>
#include <utility>

namespace ca = cachedarrays;

namespace {

constexpr std::uint64_t seed = 11;
constexpr double hot_share = 0.9;        // of the kernels
constexpr std::size_t hot_divisor = 10;  // the hot set: arrays / 10

// `updates` read-modify-writes at places and with keys drawn from `stream`.
void update(std::span<std::uint64_t> table, std::uint64_t stream, std::size_t updates) {
  ca::apps::Rng rng{stream};
  for (std::size_t u = 0; u < updates; ++u) {
    const std::uint64_t key = rng.next();
    table[key % table.size()] ^= key;
  }
}

struct Gups {
  std::size_t arrays, kernels, updates, words;
  std::vector<std::size_t> order;  // the first arrays / 10 are the hot set

  explicit Gups(ca::apps::Size size)
      : arrays(size == ca::apps::Size::bench ? 200 : 20),
        kernels(size == ca::apps::Size::bench ? 1000 : 100),
        updates(size == ca::apps::Size::bench ? 4096 : 256),
        words((size == ca::apps::Size::bench ? (1u << 20) : (64u << 10)) / sizeof(std::uint64_t)),
        order(arrays) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    ca::apps::Rng rng{seed};
    for (std::size_t i = arrays - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  }

  std::uint64_t footprint() const { return arrays * words * sizeof(std::uint64_t); }

  // Kernel k of iteration `index`: which array, and the stream of its updates.
  std::pair<std::size_t, std::uint64_t> kernel_of(int index, std::size_t k) const {
    ca::apps::Rng rng{(seed << 32) + static_cast<std::uint64_t>(index) * kernels + k};
    const std::size_t hot = arrays / hot_divisor;
    const std::size_t pick = rng.uniform() < hot_share ? rng.below(hot) : hot + rng.below(arrays - hot);
    return {order[pick], rng.next()};
  }

  struct Arrays {
    std::vector<ca::CachedArray<std::uint64_t>> table;
  };

  Arrays setup(ca::Runtime& rt) const {
    Arrays a;
    for (std::size_t i = 0; i < arrays; ++i) {
      a.table.push_back(rt.array<std::uint64_t>(words));
      auto w = a.table.back().write();
      std::iota(w.begin(), w.end(), std::uint64_t{i * words});
    }
    return a;
  }

  void iteration(ca::Runtime& rt, Arrays& a, int index) const {
    for (std::size_t k = 0; k < kernels; ++k) {
      const auto [i, stream] = kernel_of(index, k);
      rt.kernel("gups-update", ca::writes(a.table[i]),
                [&, s = stream](std::span<std::uint64_t> t) { update(t, s, updates); });
    }
  }

  std::string verify(Arrays& a, int iterations) const {
    std::vector<std::vector<std::uint64_t>> table(arrays, std::vector<std::uint64_t>(words));
    for (std::size_t i = 0; i < arrays; ++i) std::iota(table[i].begin(), table[i].end(), std::uint64_t{i * words});
    for (int it = 0; it < iterations; ++it) {
      for (std::size_t k = 0; k < kernels; ++k) {
        const auto [i, stream] = kernel_of(it, k);
        update(table[i], stream, updates);
      }
    }
    for (std::size_t i = 0; i < arrays; ++i) {
      const auto got = a.table[i].read();
      if (std::memcmp(got.data(), table[i].data(), words * sizeof(std::uint64_t)) != 0) {
        return fmt::format("array {} of the table differs from the plain computation after {} iterations", i,
                           iterations);
      }
    }
    return "";
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<Gups>(argc, argv, "gups",
                                  "random read-modify-write updates, 90% of them into a hot tenth of the table");
}
