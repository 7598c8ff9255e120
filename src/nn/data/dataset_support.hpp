// Private to src/nn/data: file reading with errors that name the file, the
// span checks every dataset does, the in-memory dataset of 8-bit images
// that CIFAR-10 and (Fashion-)MNIST all become once parsed, and the IDX
// reader both MNISTs share.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/nn/data.hpp"

namespace cachedarrays::nn::detail {

// "'/path/to/file'"
[[nodiscard]] std::string quoted(const std::filesystem::path& path);

// "training" / "test"
[[nodiscard]] std::string_view split_name(Split split);

// The whole file, inflated when it is gzip-compressed (data_file.cpp).
// Throws invalid_argument naming `what` ("CIFAR-10 file") and the path when
// it is missing, not a regular file, unreadable, or a broken gzip stream.
[[nodiscard]] std::vector<std::uint8_t> read_data_file(const std::filesystem::path& path, std::string_view what);

// `name.gz` in `dir` if it is there, else `name` if it is there, else none.
[[nodiscard]] std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& dir,
                                                                  std::string_view name);

// The batch size (labels.size()) after checking that `images` holds exactly
// that many images of `image_dims`; throws invalid_argument otherwise.
std::int64_t checked_batch_size(std::span<const float> images, std::span<const float> labels, const Dims& image_dims,
                                std::string_view dataset);

// Throws invalid_argument unless 0 <= index < size and `image` holds
// exactly one image of `image_dims`.
void check_sample(std::int64_t index, std::span<const float> image, std::int64_t size, const Dims& image_dims,
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
  std::int64_t sample(std::int64_t index, std::span<float> image) const override;
  void next_batch(std::span<float> images, std::span<float> labels) override;

 private:
  std::string name_;
  Dims image_dims_;
  std::int64_t classes_;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::uint8_t> labels_;
  std::vector<float> decoded_;  // [channel][byte]
  std::int64_t next_ = 0;       // the sample the next batch starts with
};

// An IDX image file and its label file (mnist.cpp), read as `family`
// ("MNIST", "Fashion-MNIST": the word error messages use) and normalised
// with one mean and standard deviation.
[[nodiscard]] std::unique_ptr<Dataset> idx_dataset(const std::filesystem::path& images_idx,
                                                   const std::filesystem::path& labels_idx, std::string_view family,
                                                   double mean, double stddev);

// The distributed names of a split's IDX files, without .gz:
// {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"} or the t10k pair.
struct IdxNames {
  std::string images;
  std::string labels;
};
[[nodiscard]] IdxNames idx_names(Split split);

// The seed of the synthetic test split, a fixed function of the training
// seed that gives other samples.
[[nodiscard]] std::uint64_t synthetic_test_seed(std::uint64_t seed);

}  // namespace cachedarrays::nn::detail
