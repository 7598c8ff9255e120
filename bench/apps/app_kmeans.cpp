// k-means (Lloyd's algorithm): the points sit in blocks, each an array
// streamed once per iteration, while the centroids and the per-cluster sums
// are read or written by every block's kernel (the hot data). One Lloyd
// iteration is one iteration. The points are floats, the sums doubles; the
// app and the plain reference run the same functions in the same order, so
// the centroids agree bit for bit and are compared exactly.
#include "app_main.hpp"

#include <cstring>
#include <limits>
#include <span>

namespace ca = cachedarrays;

namespace {

constexpr std::uint64_t seed = 3;
constexpr std::size_t dims = 8, clusters = 16;

// Adds each point of `points` to the sum of its nearest centroid (the first
// of equally near ones); sums holds clusters x (dims sums, then a count).
void assign(std::span<const float> points, std::span<const float> centroids, std::span<double> sums) {
  for (std::size_t p = 0; p < points.size() / dims; ++p) {
    const float* x = &points[p * dims];
    std::size_t best = 0;
    float best_distance = std::numeric_limits<float>::max();
    for (std::size_t c = 0; c < clusters; ++c) {
      float d = 0;
      for (std::size_t i = 0; i < dims; ++i) d += (x[i] - centroids[c * dims + i]) * (x[i] - centroids[c * dims + i]);
      if (d < best_distance) {
        best_distance = d;
        best = c;
      }
    }
    for (std::size_t i = 0; i < dims; ++i) sums[best * (dims + 1) + i] += x[i];
    sums[best * (dims + 1) + dims] += 1;
  }
}

// The new centroids, the means of their points (an empty cluster stays),
// and the sums cleared for the next iteration.
void update(std::span<double> sums, std::span<float> centroids) {
  for (std::size_t c = 0; c < clusters; ++c) {
    const double count = sums[c * (dims + 1) + dims];
    for (std::size_t i = 0; i < dims; ++i) {
      if (count > 0) centroids[c * dims + i] = static_cast<float>(sums[c * (dims + 1) + i] / count);
    }
  }
  std::fill(sums.begin(), sums.end(), 0.0);
}

struct Kmeans {
  std::size_t blocks, block_points;
  std::vector<std::vector<float>> points;  // as the arrays hold them
  std::vector<float> start;                // the first centroids: the first points

  explicit Kmeans(ca::apps::Size size)
      : blocks(size == ca::apps::Size::bench ? 32 : 8), block_points(size == ca::apps::Size::bench ? 131072 : 4096) {
    ca::apps::Rng rng{seed};
    std::vector<float> centers(clusters * dims);
    for (float& c : centers) c = static_cast<float>(10 * rng.uniform());
    for (std::size_t b = 0; b < blocks; ++b) {
      std::vector<float> v(block_points * dims);
      for (std::size_t p = 0; p < block_points; ++p) {
        const std::size_t c = rng.below(clusters);
        for (std::size_t i = 0; i < dims; ++i) {
          v[p * dims + i] = centers[c * dims + i] + static_cast<float>(rng.uniform() - 0.5);
        }
      }
      points.push_back(std::move(v));
    }
    start.assign(points[0].begin(), points[0].begin() + clusters * dims);
  }

  std::uint64_t footprint() const {
    return blocks * block_points * dims * sizeof(float) + clusters * dims * sizeof(float) +
           clusters * (dims + 1) * sizeof(double);
  }

  struct Arrays {
    std::vector<ca::CachedArray<float>> points;
    ca::CachedArray<float> centroids;
    ca::CachedArray<double> sums;
  };

  Arrays setup(ca::Runtime& rt) const {
    Arrays a;
    for (const auto& v : points) {
      a.points.push_back(rt.array<float>(v.size()));
      std::copy(v.begin(), v.end(), a.points.back().write().begin());
    }
    a.centroids = rt.array<float>(start.size());
    std::copy(start.begin(), start.end(), a.centroids.write().begin());
    a.sums = rt.array<double>(clusters * (dims + 1));
    auto w = a.sums.write();
    std::fill(w.begin(), w.end(), 0.0);
    return a;
  }

  void iteration(ca::Runtime& rt, Arrays& a, int /*index*/) const {
    for (std::size_t b = 0; b < blocks; ++b) {
      if (b + 1 < blocks) a.points[b + 1].will_read();
      rt.kernel("kmeans-assign", ca::reads(a.points[b], a.centroids), ca::writes(a.sums), assign);
      a.points[b].archive();
    }
    rt.kernel("kmeans-update", ca::writes(a.sums, a.centroids), update);
  }

  std::string verify(Arrays& a, int iterations) const {
    std::vector<float> centroids = start;
    std::vector<double> sums(clusters * (dims + 1), 0.0);
    for (int it = 0; it < iterations; ++it) {
      for (const auto& v : points) assign(v, centroids, sums);
      update(sums, centroids);
    }
    const auto got = a.centroids.read();
    if (std::memcmp(got.data(), centroids.data(), centroids.size() * sizeof(float)) != 0) {
      return fmt::format("the centroids differ from the plain computation after {} iterations", iterations);
    }
    return "";
  }
};

}  // namespace

int main(int argc, char** argv) {
  return ca::apps::app_main<Kmeans>(argc, argv, "kmeans", "Lloyd's k-means over points in streamed blocks");
}
