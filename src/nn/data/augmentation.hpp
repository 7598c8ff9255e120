// Training-time augmentation of one CHW image: random crop with zero
// padding and horizontal flip, as torchvision's RandomCrop(padding=p) and
// RandomHorizontalFlip, applied in that order.
#pragma once

#include <cstdint>
#include <span>

#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn::detail {

struct Augmentation {
  // Where the crop starts in the image padded by `padding` on each side:
  // 0 to 2 * padding each; `padding` is the centre (no shift).
  std::int64_t top = 0;
  std::int64_t left = 0;
  std::int64_t padding = 0;
  bool flip = false;  // mirror left-right after cropping
};

// The augmentation of sample `sample` in epoch `epoch`: a function of
// (key, epoch, sample) alone, `key` being the sampler's seed mixed.
[[nodiscard]] Augmentation draw_augmentation(std::uint64_t key, std::int64_t epoch, std::int64_t sample,
                                             std::int64_t padding, bool flip);

// dst(c, y, x) = src(c, y + top - padding, x' + left - padding), with
// x' = W - 1 - x when flipping, else x, and 0 where that falls outside src.
// `src` and `dst` are C * H * W floats of `chw` and must not overlap.
void augment(const Augmentation& a, std::span<const float> src, std::span<float> dst, const Dims& chw);

}  // namespace cachedarrays::nn::detail
