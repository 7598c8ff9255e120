// Private to src/nn/data: file reading with errors that name the file, the
// batch-span check every dataset does, and the in-memory dataset of 8-bit
// images that CIFAR-10 and MNIST both become once parsed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/nn/data.hpp"

namespace cachedarrays::nn::detail {

// The whole file; throws invalid_argument naming `what` ("CIFAR-10 file")
// and the path when it is missing, not a regular file, or unreadable.
[[nodiscard]] std::vector<std::uint8_t> read_whole_file(const std::filesystem::path& path, std::string_view what);

// "'/path/to/file'"
[[nodiscard]] std::string quoted(const std::filesystem::path& path);

// The batch size (labels.size()) after checking that `images` holds exactly
// that many images of `image_dims`; throws invalid_argument otherwise.
std::int64_t checked_batch_size(std::span<const float> images, std::span<const float> labels, const Dims& image_dims,
                                std::string_view dataset);

// Images of bytes, one plane per channel (CHW), decoded on the way out as
// (byte / 255 - mean[c]) / std[c] (through a table computed in double, so
// each value is the float nearest that).
class ByteImageDataset final : public Dataset {
 public:
  ByteImageDataset(std::string name, Dims image_dims, std::int64_t classes, std::vector<std::uint8_t> pixels,
                   std::vector<std::uint8_t> labels, const std::vector<double>& mean, const std::vector<double>& std);

  [[nodiscard]] std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  [[nodiscard]] Dims image_dims() const override { return image_dims_; }
  [[nodiscard]] std::int64_t classes() const override { return classes_; }
  void next_batch(std::span<float> images, std::span<float> labels) override;

 private:
  std::string name_;
  Dims image_dims_;
  std::int64_t classes_;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::uint8_t> labels_;
  std::vector<float> decoded_;  // [channel][byte]
  std::int64_t next_ = 0;  // the sample the next batch starts with
};

}  // namespace cachedarrays::nn::detail
