// Training data for the CNN trainer: the paper's normally distributed
// synthetic images with random labels, and the CIFAR-10 and MNIST files
// for runs whose loss should mean something.
//
// A dataset hands out batches in a fixed order, wrapping around at its end
// (no shuffling: a run is reproducible from its arguments alone). Images
// come as NCHW floats, labels as class indices stored in floats, the forms
// Trainer::step takes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn {

class Dataset {
 public:
  Dataset() = default;
  virtual ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  // Number of samples before the order wraps around.
  [[nodiscard]] virtual std::int64_t size() const = 0;
  // {C, H, W} of one image.
  [[nodiscard]] virtual Dims image_dims() const = 0;
  [[nodiscard]] virtual std::int64_t classes() const = 0;
  // Fills `images` (batch * C * H * W floats, NCHW) and `labels` (batch
  // floats, class indices) with the next batch, wrapping around; the batch
  // size is labels.size(). Throws invalid_argument when the spans do not
  // fit each other.
  virtual void next_batch(std::span<float> images, std::span<float> labels) = 0;
};

// Pixels drawn from N(0, 1) and labels uniform over [0, classes), as the
// paper's runs use. Endless (size() is the largest int64). Sample i depends
// only on the seed and i, not on how the samples are split into batches.
[[nodiscard]] std::unique_ptr<Dataset> synthetic_dataset(Dims image_dims, std::int64_t classes, std::uint64_t seed);

// CIFAR-10 binary format: records of 1 label byte (0-9) and 3072 pixel
// bytes (the R, G, B planes of a 32x32 image). `file_or_dir` is one such
// file or a directory, meaning all the data_batch_*.bin files in it (the
// training set; test_batch.bin is left out), in name order. Pixels are
// scaled to [0, 1] and then normalised per channel with the CIFAR-10
// training set's mean (0.4914, 0.4822, 0.4465) and standard deviation
// (0.2470, 0.2435, 0.2616).
[[nodiscard]] std::unique_ptr<Dataset> cifar10_dataset(const std::filesystem::path& file_or_dir);

// MNIST's IDX files (uncompressed): images with magic 0x00000803, count,
// rows, columns; labels with magic 0x00000801, count; big-endian 32-bit
// header fields, then one byte per pixel / label. Images are 1 x rows x
// columns (1x28x28 for MNIST), pixels scaled to [0, 1]; 10 classes.
[[nodiscard]] std::unique_ptr<Dataset> mnist_dataset(const std::filesystem::path& images_idx,
                                                     const std::filesystem::path& labels_idx);

// The --data flag of the training CLI: "synthetic" (using image_dims,
// classes and seed), "cifar10:PATH", "mnist:IMAGES,LABELS" (split at the
// first comma). For a file dataset, image_dims and classes are what the
// model expects: the images must have exactly those dims and the labels
// must be below `classes`, otherwise invalid_argument says what to change.
[[nodiscard]] std::unique_ptr<Dataset> open_dataset(std::string_view spec, const Dims& image_dims,
                                                    std::int64_t classes, std::uint64_t seed);

}  // namespace cachedarrays::nn
