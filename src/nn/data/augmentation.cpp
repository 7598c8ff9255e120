// Random crop and flip, drawn counter-based so that a sample's
// augmentation in an epoch is the same however the epoch is cut into
// batches and whether or not the run was resumed.
#include "nn/data/augmentation.hpp"

#include <algorithm>

#include "nn/data/counter_random.hpp"

namespace cachedarrays::nn::detail {

Augmentation draw_augmentation(std::uint64_t key, std::int64_t epoch, std::int64_t sample, std::int64_t padding,
                               bool flip) {
  const std::uint64_t stream =
      stream_at(stream_at(key, static_cast<std::uint64_t>(epoch)), static_cast<std::uint64_t>(sample));
  const auto offsets = static_cast<std::uint64_t>(2 * padding + 1);
  Augmentation a;
  a.padding = padding;
  a.top = static_cast<std::int64_t>(uniform_below(stream_at(stream, 0), offsets));
  a.left = static_cast<std::int64_t>(uniform_below(stream_at(stream, 1), offsets));
  a.flip = flip && (stream_at(stream, 2) >> 63) != 0;
  return a;
}

void augment(const Augmentation& a, std::span<const float> src, std::span<float> dst, const Dims& chw) {
  const std::int64_t channels = chw[0];
  const std::int64_t height = chw[1];
  const std::int64_t width = chw[2];
  const std::int64_t dy = a.top - a.padding;  // dst row y reads src row y + dy
  const std::int64_t dx = a.left - a.padding;
  std::fill(dst.begin(), dst.end(), 0.0f);
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t y = std::max<std::int64_t>(0, -dy); y < std::min(height, height - dy); ++y) {
      const float* src_row = src.data() + (c * height + y + dy) * width;
      float* dst_row = dst.data() + (c * height + y) * width;
      for (std::int64_t x = 0; x < width; ++x) {
        const std::int64_t sx = (a.flip ? width - 1 - x : x) + dx;
        if (sx >= 0 && sx < width) dst_row[x] = src_row[sx];
      }
    }
  }
}

}  // namespace cachedarrays::nn::detail
