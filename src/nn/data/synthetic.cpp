// The paper's input: "randomly generated using a normal distribution".
//
// Counter-based (counter_random.hpp): every random number is splitmix64 of
// (seed, position), so sample i is the same whatever the batch size, any
// sample can be drawn on its own (sample), batches can be generated in
// parallel, and the stream is the same on every standard library (the
// distributions of <random> are not specified bit for bit; the Box-Muller
// transform here is).
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn/data/counter_random.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

namespace {

using detail::mix64;

// Uniform in (0, 1]: never 0, so its logarithm is finite.
double unit_open_low(std::uint64_t bits) { return static_cast<double>((bits >> 11) + 1) * 0x1.0p-53; }

class SyntheticDataset final : public Dataset {
 public:
  SyntheticDataset(Dims image_dims, std::int64_t classes, std::uint64_t seed)
      : image_dims_(std::move(image_dims)), classes_(classes), base_(mix64(seed)) {
    per_image_ = 1;
    for (std::int64_t d : image_dims_) per_image_ *= d;
    pairs_ = (per_image_ + 1) / 2;
  }

  [[nodiscard]] std::int64_t size() const override { return std::numeric_limits<std::int64_t>::max(); }
  [[nodiscard]] Dims image_dims() const override { return image_dims_; }
  [[nodiscard]] std::int64_t classes() const override { return classes_; }

  std::int64_t sample(std::int64_t index, std::span<float> image) const override {
    detail::check_sample(index, image, size(), image_dims_, "the synthetic dataset");
    return fill_sample(static_cast<std::uint64_t>(index), image);
  }

  void next_batch(std::span<float> images, std::span<float> labels) override {
    const std::int64_t batch = detail::checked_batch_size(images, labels, image_dims_, "the synthetic dataset");
    const std::uint64_t first = next_;
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, batch), [&](const tbb::blocked_range<std::int64_t>& r) {
      for (std::int64_t i = r.begin(); i != r.end(); ++i) {
        const auto offset = static_cast<std::size_t>(i * per_image_);
        labels[static_cast<std::size_t>(i)] = static_cast<float>(fill_sample(
            first + static_cast<std::uint64_t>(i), images.subspan(offset, static_cast<std::size_t>(per_image_))));
      }
    });
    next_ += static_cast<std::uint64_t>(batch);
  }

 private:
  // The n-th number of this dataset's stream.
  [[nodiscard]] std::uint64_t random(std::uint64_t n) const { return detail::stream_at(base_, n); }

  // Writes sample `index`'s pixels and returns its label. It uses counters
  // [index * stride, (index + 1) * stride): two per pair of pixels
  // (Box-Muller), one for the label.
  std::int64_t fill_sample(std::uint64_t index, std::span<float> pixels) const {
    const std::uint64_t stride = 2 * static_cast<std::uint64_t>(pairs_) + 1;
    const std::uint64_t first = index * stride;
    for (std::int64_t p = 0; p < pairs_; ++p) {
      const std::uint64_t n = first + 2 * static_cast<std::uint64_t>(p);
      const double radius = std::sqrt(-2.0 * std::log(unit_open_low(random(n))));
      const double angle = 2.0 * std::numbers::pi * unit_open_low(random(n + 1));
      const auto at = static_cast<std::size_t>(2 * p);
      pixels[at] = static_cast<float>(radius * std::cos(angle));
      if (at + 1 < pixels.size()) pixels[at + 1] = static_cast<float>(radius * std::sin(angle));
    }
    return static_cast<std::int64_t>(
        detail::uniform_below(random(first + stride - 1), static_cast<std::uint64_t>(classes_)));
  }

  Dims image_dims_;
  std::int64_t classes_;
  std::uint64_t base_;
  std::int64_t per_image_;
  std::int64_t pairs_;
  std::uint64_t next_ = 0;
};

}  // namespace

// Not seed + 1: the test split of seed s must not be the training split of
// a run with seed s + 1.
std::uint64_t detail::synthetic_test_seed(std::uint64_t seed) { return mix64(seed ^ 0x7465'7374'7370'6c74ULL); }

std::unique_ptr<Dataset> synthetic_dataset(Dims image_dims, std::int64_t classes, std::uint64_t seed) {
  bool valid = image_dims.size() == 3;
  for (std::int64_t d : image_dims) valid = valid && d >= 1;
  if (!valid) {
    std::string dims;
    for (std::int64_t d : image_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw invalid_argument("cachedarrays::nn: synthetic images must have dims {C, H, W}, each at least 1, got {" +
                           dims + "}");
  }
  if (classes < 1) {
    throw invalid_argument("cachedarrays::nn: the synthetic dataset needs at least 1 class, got " +
                           std::to_string(classes));
  }
  return std::make_unique<SyntheticDataset>(std::move(image_dims), classes, seed);
}

}  // namespace cachedarrays::nn
