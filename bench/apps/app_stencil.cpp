// Out-of-core stencil: a 1-D three-point stencil over two arrays, each split
// into blocks that are separate arrays. A sweep reads blocks i-1, i, i+1 of
// one array and writes block i of the other, hints will_read two blocks
// ahead and archive the block it leaves behind; then the two swap. One sweep
// is one iteration. Only the blocks near the sweep are needed at any time.
#include "app_main.hpp"

#include <cstring>
#include <span>
#include <utility>

namespace ca = cachedarrays;

namespace {

// out[j] = (in[j-1] + 2 in[j] + in[j+1]) / 4 across the blocks' boundaries;
// the array's two ends keep their value. The app and the plain reference
// call this same function, so their floats agree bit for bit.
void stencil_block(std::span<const float> left, std::span<const float> mid, std::span<const float> right,
                   std::span<float> out) {
  const std::size_t n = mid.size();
  for (std::size_t j = 0; j < n; ++j) {
    const bool first = j == 0 && left.empty(), last = j + 1 == n && right.empty();
    if (first || last) {
      out[j] = mid[j];
      continue;
    }
    const float l = j == 0 ? left.back() : mid[j - 1];
    const float r = j + 1 == n ? right.front() : mid[j + 1];
    out[j] = 0.25f * l + 0.5f * mid[j] + 0.25f * r;
  }
}

struct Stencil {
  std::size_t blocks, block_floats;

  explicit Stencil(ca::apps::Size size)
      : blocks(size == ca::apps::Size::bench ? 40 : 8),
        block_floats(size == ca::apps::Size::bench ? (4u << 20) / sizeof(float) : (128u << 10) / sizeof(float)) {}

  std::uint64_t footprint() const { return 2 * blocks * block_floats * sizeof(float); }

  std::vector<float> initial(std::size_t b) const {
    ca::apps::Rng rng{1000 + b};
    std::vector<float> v(block_floats);
    for (float& x : v) x = static_cast<float>(rng.uniform());
    return v;
  }

  struct Arrays {
    std::vector<ca::CachedArray<float>> src, dst;
  };

  Arrays setup(ca::Runtime& rt) const {
    Arrays a;
    for (std::size_t b = 0; b < blocks; ++b) {
      a.src.push_back(rt.array<float>(block_floats));
      const std::vector<float> v = initial(b);
      auto w = a.src.back().write();
      std::copy(v.begin(), v.end(), w.begin());
      a.dst.push_back(rt.array<float>(block_floats));
    }
    return a;
  }

  void iteration(ca::Runtime& rt, Arrays& a, int /*index*/) const {
    const std::span<const float> none;
    for (std::size_t i = 0; i < blocks; ++i) {
      if (i + 2 < blocks) a.src[i + 2].will_read();
      if (i == 0) {
        rt.kernel("stencil-edge", ca::reads(a.src[0], a.src[1]), ca::writes(a.dst[0]),
                  [&](std::span<const float> m, std::span<const float> r, std::span<float> o) {
                    stencil_block(none, m, r, o);
                  });
      } else if (i + 1 == blocks) {
        rt.kernel("stencil-edge", ca::reads(a.src[i - 1], a.src[i]), ca::writes(a.dst[i]),
                  [&](std::span<const float> l, std::span<const float> m, std::span<float> o) {
                    stencil_block(l, m, none, o);
                  });
      } else {
        rt.kernel("stencil", ca::reads(a.src[i - 1], a.src[i], a.src[i + 1]), ca::writes(a.dst[i]), stencil_block);
      }
      if (i > 0) a.src[i - 1].archive();
      a.dst[i].archive();
    }
    a.src.back().archive();
    std::swap(a.src, a.dst);
  }

  std::string verify(Arrays& a, int iterations) const {
    std::vector<std::vector<float>> src, dst(blocks, std::vector<float>(block_floats));
    for (std::size_t b = 0; b < blocks; ++b) src.push_back(initial(b));
    for (int it = 0; it < iterations; ++it) {
      for (std::size_t i = 0; i < blocks; ++i) {
        stencil_block(i == 0 ? std::span<const float>() : std::span<const float>(src[i - 1]), src[i],
                      i + 1 == blocks ? std::span<const float>() : std::span<const float>(src[i + 1]), dst[i]);
      }
      std::swap(src, dst);
    }
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto got = a.src[b].read();
      if (std::memcmp(got.data(), src[b].data(), block_floats * sizeof(float)) != 0) {
        return fmt::format("block {} differs from the plain computation after {} sweeps", b, iterations);
      }
    }
    return "";
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<Stencil>(argc, argv, "stencil",
                                     "a three-point stencil swept over two arrays of blocks, out of core");
}
