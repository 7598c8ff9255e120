// The decoded form of CIFAR-10 and (Fashion-)MNIST: 8-bit CHW images in
// memory, normalised per channel through a 256-entry table on the way out.
#include <string>
#include <utility>

#include "cachedarrays/nn/data.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn::detail {

ByteImageDataset::ByteImageDataset(std::string name, Dims image_dims, std::int64_t classes,
                                   std::vector<std::uint8_t> pixels, std::vector<std::uint8_t> labels,
                                   const std::vector<double>& mean, const std::vector<double>& std)
    : name_(std::move(name)),
      image_dims_(std::move(image_dims)),
      classes_(classes),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {
  for (std::size_t c = 0; c < mean.size(); ++c) {
    for (int byte = 0; byte < 256; ++byte) decoded_.push_back(static_cast<float>((byte / 255.0 - mean[c]) / std[c]));
  }
}

std::int64_t ByteImageDataset::sample(std::int64_t index, std::span<float> image) const {
  check_sample(index, image, size(), image_dims_, name_);
  const auto plane = static_cast<std::size_t>(image_dims_[1] * image_dims_[2]);
  const std::uint8_t* src = pixels_.data() + static_cast<std::size_t>(index) * image.size();
  for (std::size_t c = 0; c < static_cast<std::size_t>(image_dims_[0]); ++c) {
    const float* table = decoded_.data() + 256 * c;
    for (std::size_t p = 0; p < plane; ++p) image[c * plane + p] = table[src[c * plane + p]];
  }
  return labels_[static_cast<std::size_t>(index)];
}

void ByteImageDataset::next_batch(std::span<float> images, std::span<float> labels) {
  const std::int64_t batch = checked_batch_size(images, labels, image_dims_, name_);
  const std::size_t per_image = images.size() / static_cast<std::size_t>(batch);
  for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
    labels[i] = static_cast<float>(sample(next_, images.subspan(i * per_image, per_image)));
    next_ = (next_ + 1) % size();
  }
}

}  // namespace cachedarrays::nn::detail
