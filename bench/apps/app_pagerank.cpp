// PageRank over an R-MAT graph (a = 0.57, b = c = 0.19, d = 0.05; fixed
// seed), pulled along in-edges: the edges sit in CSR blocks by destination,
// each block an array streamed once per iteration; each block's kernel reads
// the sources' contributions at random places and writes its range of the
// new ranks. One PageRank iteration is one iteration. Vertices without
// out-edges leak their rank, as in the simplest formulation.
#include "app_main.hpp"

#include <cstring>
#include <span>
#include <utility>

namespace ca = cachedarrays;

namespace {

constexpr std::uint64_t seed = 5;
constexpr float damping = 0.85f;

// contribution[u] = rank[u] / outdeg(u) (inverse[u] = 1 / outdeg(u), or 0).
void contributions(std::span<const float> rank, std::span<const float> inverse, std::span<float> contribution) {
  for (std::size_t u = 0; u < rank.size(); ++u) contribution[u] = rank[u] * inverse[u];
}

// The new ranks of the block's vertices [first, first + count): `block`
// holds count + 1 offsets, then the sources of their in-edges.
void pull(std::span<const std::uint32_t> block, std::span<const float> contribution, std::span<float> next,
          std::size_t first, std::size_t count) {
  const float base = (1 - damping) / static_cast<float>(next.size());
  for (std::size_t v = 0; v < count; ++v) {
    float sum = 0;
    for (std::uint32_t e = block[v]; e < block[v + 1]; ++e) sum += contribution[block[count + 1 + e]];
    next[first + v] = base + damping * sum;
  }
}

struct PageRank {
  std::size_t vertices, block_vertices;
  std::vector<std::vector<std::uint32_t>> blocks;  // as the arrays hold them
  std::vector<float> inverse;                      // 1 / out-degree

  explicit PageRank(ca::apps::Size size) {
    const int scale = size == ca::apps::Size::bench ? 20 : 14;
    const std::size_t blocks_wanted = size == ca::apps::Size::bench ? 32 : 8;
    vertices = std::size_t{1} << scale;
    block_vertices = vertices / blocks_wanted;
    const std::size_t edges = 8 * vertices;
    // R-MAT: each edge descends `scale` levels into one of four quadrants.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edge_list;  // (source, destination)
    ca::apps::Rng rng{seed};
    std::vector<std::uint32_t> outdeg(vertices, 0);
    for (std::size_t e = 0; e < edges; ++e) {
      std::uint32_t u = 0, v = 0;
      for (int level = 0; level < scale; ++level) {
        const double p = rng.uniform();
        const std::uint32_t down = p >= 0.57 + 0.19 ? 1 : 0, right = (p >= 0.57 && p < 0.76) || p >= 0.95 ? 1 : 0;
        u = (u << 1) | down;
        v = (v << 1) | right;
      }
      edge_list.emplace_back(u, v);
      ++outdeg[u];
    }
    for (const std::uint32_t d : outdeg) inverse.push_back(d == 0 ? 0.0f : 1.0f / static_cast<float>(d));
    // Counting sort by destination, block by block.
    std::vector<std::uint32_t> indeg(vertices, 0);
    for (const auto& [u, v] : edge_list) ++indeg[v];
    std::vector<std::size_t> place(vertices);
    for (std::size_t b = 0; b * block_vertices < vertices; ++b) {
      const std::size_t first = b * block_vertices;
      std::vector<std::uint32_t> block(block_vertices + 1, 0);
      for (std::size_t v = 0; v < block_vertices; ++v) block[v + 1] = block[v] + indeg[first + v];
      for (std::size_t v = 0; v < block_vertices; ++v) place[first + v] = block_vertices + 1 + block[v];
      block.resize(block_vertices + 1 + block[block_vertices]);
      blocks.push_back(std::move(block));
    }
    for (const auto& [u, v] : edge_list) blocks[v / block_vertices][place[v]++] = u;
  }

  std::uint64_t footprint() const {
    std::uint64_t bytes = 4 * vertices * sizeof(float);  // two ranks, the contributions, the inverses
    for (const auto& b : blocks) bytes += b.size() * sizeof(std::uint32_t);
    return bytes;
  }

  struct Arrays {
    std::vector<ca::CachedArray<std::uint32_t>> blocks;
    ca::CachedArray<float> rank, next, contribution, inverse;
  };

  Arrays setup(ca::Runtime& rt) const {
    Arrays a;
    for (const auto& b : blocks) {
      a.blocks.push_back(rt.array<std::uint32_t>(b.size()));
      auto w = a.blocks.back().write();
      std::copy(b.begin(), b.end(), w.begin());
    }
    a.inverse = rt.array<float>(vertices);
    std::copy(inverse.begin(), inverse.end(), a.inverse.write().begin());
    a.rank = rt.array<float>(vertices);
    auto w = a.rank.write();
    std::fill(w.begin(), w.end(), 1.0f / static_cast<float>(vertices));
    a.next = rt.array<float>(vertices);
    a.contribution = rt.array<float>(vertices);
    return a;
  }

  void iteration(ca::Runtime& rt, Arrays& a, int /*index*/) const {
    rt.kernel("pagerank-contributions", ca::reads(a.rank, a.inverse), ca::writes(a.contribution), contributions);
    a.inverse.archive();
    a.rank.archive();  // the next iteration writes it
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      if (b + 1 < blocks.size()) a.blocks[b + 1].will_read();
      // Unnamed: the blocks differ in size, and an unnamed kernel is
      // profiled at its own place in the program.
      rt.kernel(ca::reads(a.blocks[b], a.contribution), ca::writes(a.next),
                [&](std::span<const std::uint32_t> block, std::span<const float> c, std::span<float> next) {
                  pull(block, c, next, b * block_vertices, block_vertices);
                });
      a.blocks[b].archive();
    }
    std::swap(a.rank, a.next);
  }

  std::string verify(Arrays& a, int iterations) const {
    std::vector<float> rank(vertices, 1.0f / static_cast<float>(vertices)), next(vertices), contribution(vertices);
    for (int it = 0; it < iterations; ++it) {
      contributions(rank, inverse, contribution);
      for (std::size_t b = 0; b < blocks.size(); ++b) {
        pull(blocks[b], contribution, next, b * block_vertices, block_vertices);
      }
      std::swap(rank, next);
    }
    const auto got = a.rank.read();
    if (std::memcmp(got.data(), rank.data(), vertices * sizeof(float)) != 0) {
      return fmt::format("the ranks differ from the plain computation after {} iterations", iterations);
    }
    return "";
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<PageRank>(argc, argv, "pagerank", "PageRank over an R-MAT graph in streamed CSR blocks");
}
