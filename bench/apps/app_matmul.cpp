// Blocked matrix multiply C += A B over square matrices stored as tiles, each
// tile an array. Together the three matrices exceed the fast tier; a row of
// A's tiles is reused across a row of C, and all of B across the rows. One
// multiply is one iteration; C keeps accumulating.
#include "app_main.hpp"

#include <cstring>
#include <span>

namespace ca = cachedarrays;

namespace {

// c += a b for tiles of n x n floats, row-major, in i-k-j order. The app and
// the plain reference call this same function on the tiles in the same
// order, so their floats agree bit for bit.
void tile_multiply(std::span<const float> a, std::span<const float> b, std::span<float> c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
}

struct Matmul {
  std::size_t tiles, n;  // tiles x tiles tiles per matrix, each n x n

  explicit Matmul(ca::apps::Size size)
      : tiles(size == ca::apps::Size::bench ? 8 : 6), n(size == ca::apps::Size::bench ? 128 : 48) {}

  std::uint64_t footprint() const { return 3 * tiles * tiles * n * n * sizeof(float); }

  // Tile t of matrix m (0: A, 1: B, 2: C), as the run starts.
  std::vector<float> initial(int m, std::size_t t) const {
    std::vector<float> v(n * n, 0.0f);
    if (m == 2) return v;
    ca::apps::Rng rng{static_cast<std::uint64_t>(m) * 100000 + t};
    for (float& x : v) x = static_cast<float>(rng.uniform()) - 0.5f;
    return v;
  }

  struct Arrays {
    std::vector<ca::CachedArray<float>> m[3];  // A, B, C; tile (i, j) at i * tiles + j
  };

  Arrays setup(ca::Runtime& rt) const {
    Arrays a;
    for (int m = 0; m < 3; ++m) {
      for (std::size_t t = 0; t < tiles * tiles; ++t) {
        a.m[m].push_back(rt.array<float>(n * n));
        const std::vector<float> v = initial(m, t);
        auto w = a.m[m].back().write();
        std::copy(v.begin(), v.end(), w.begin());
      }
    }
    return a;
  }

  void iteration(ca::Runtime& rt, Arrays& a, int /*index*/) const {
    auto& [A, B, C] = a.m;
    for (std::size_t i = 0; i < tiles; ++i) {
      for (std::size_t j = 0; j < tiles; ++j) {
        for (std::size_t k = 0; k < tiles; ++k) {
          if (k + 1 < tiles) {
            A[i * tiles + k + 1].will_read();
            B[(k + 1) * tiles + j].will_read();
          }
          rt.kernel("gemm-tile", ca::reads(A[i * tiles + k], B[k * tiles + j]), ca::writes(C[i * tiles + j]),
                    [&](std::span<const float> x, std::span<const float> y, std::span<float> z) {
                      tile_multiply(x, y, z, n);
                    });
        }
        C[i * tiles + j].archive();  // done until the next multiply
      }
      for (std::size_t k = 0; k < tiles; ++k) A[i * tiles + k].archive();  // the row is not read again
    }
  }

  std::string verify(Arrays& a, int iterations) const {
    std::vector<std::vector<float>> m[3];
    for (int x = 0; x < 3; ++x) {
      for (std::size_t t = 0; t < tiles * tiles; ++t) m[x].push_back(initial(x, t));
    }
    for (int it = 0; it < iterations; ++it) {
      for (std::size_t i = 0; i < tiles; ++i) {
        for (std::size_t j = 0; j < tiles; ++j) {
          for (std::size_t k = 0; k < tiles; ++k) {
            tile_multiply(m[0][i * tiles + k], m[1][k * tiles + j], m[2][i * tiles + j], n);
          }
        }
      }
    }
    for (std::size_t t = 0; t < tiles * tiles; ++t) {
      const auto got = a.m[2][t].read();
      if (std::memcmp(got.data(), m[2][t].data(), n * n * sizeof(float)) != 0) {
        return fmt::format("tile ({}, {}) of C differs from the plain computation after {} multiplies", t / tiles,
                           t % tiles, iterations);
      }
    }
    return "";
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<Matmul>(argc, argv, "matmul", "a blocked matrix multiply C += A B over tiles");
}
