// Training data for the CNN trainer: the paper's normally distributed
// synthetic images with random labels, and the Fashion-MNIST, MNIST and
// CIFAR-10 files for runs whose loss and accuracy should mean something.
//
// A dataset is random access (sample) and also hands out batches in a fixed
// order, wrapping around at its end (next_batch: no shuffling, a run is
// reproducible from its arguments alone). Epochs over a shuffled order, with
// augmentation, are BatchSampler's (batch_sampler.hpp). Images come as NCHW
// floats, labels as class indices stored in floats, the forms Trainer::step
// takes.
//
// IDX and CIFAR-10 files may be gzip-compressed (as Debian ships them): a
// file that starts with gzip's magic bytes 1f 8b is inflated on reading.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn {

/// Training data (see the file comment): random access to samples, and
/// batches in a fixed order that wraps around at the end. Images are CHW
/// floats, labels class indices; made by the functions below.
class Dataset {
 public:
  Dataset() = default;
  virtual ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  /// Number of samples before the order wraps around (the largest int64 for
  /// the endless synthetic set).
  [[nodiscard]] virtual std::int64_t size() const = 0;
  /// {C, H, W} of one image.
  [[nodiscard]] virtual Dims image_dims() const = 0;
  /// The number of classes; labels are 0 to classes() - 1.
  [[nodiscard]] virtual std::int64_t classes() const = 0;
  /// Writes sample `index` (0 <= index < size()) into `image` (exactly
  /// C * H * W floats, CHW) and returns its label. Throws invalid_argument
  /// naming the dataset on a bad index or span size. Safe to call from
  /// several threads at once (BatchSampler does).
  virtual std::int64_t sample(std::int64_t index, std::span<float> image) const = 0;
  /// Fills `images` (batch * C * H * W floats, NCHW) and `labels` (batch
  /// floats, class indices) with the next batch, wrapping around; the batch
  /// size is labels.size(). Throws invalid_argument when the spans do not
  /// fit each other.
  virtual void next_batch(std::span<float> images, std::span<float> labels) = 0;
};

/// Which part of a data set: the one to train on, or the held-out one to
/// measure accuracy on.
enum class Split { train, test };

/// Pixels drawn from N(0, 1) and labels uniform over [0, classes), as the
/// paper's runs use. Endless (size() is the largest int64). Sample i depends
/// only on the seed and i, not on how the samples are split into batches.
[[nodiscard]] std::unique_ptr<Dataset> synthetic_dataset(Dims image_dims, std::int64_t classes, std::uint64_t seed);

/// CIFAR-10 binary format: records of 1 label byte (0-9) and 3072 pixel
/// bytes (the R, G, B planes of a 32x32 image). `file_or_dir` is one such
/// file or a directory, meaning all the data_batch_*.bin[.gz] files in it
/// (the training set; test_batch.bin is left out), in name order. Pixels are
/// scaled to [0, 1] and then normalised per channel with the CIFAR-10
/// training set's mean (0.4914, 0.4822, 0.4465) and standard deviation
/// (0.2470, 0.2435, 0.2616). Throws invalid_argument naming the file when
/// one is missing or malformed.
[[nodiscard]] std::unique_ptr<Dataset> cifar10_dataset(const std::filesystem::path& file_or_dir);
/// One split of a cifar-10-batches-bin directory: data_batch_*.bin or
/// test_batch.bin (each may be gzipped), normalised as above.
[[nodiscard]] std::unique_ptr<Dataset> cifar10_dataset(const std::filesystem::path& dir, Split split);

/// MNIST's IDX files: images with magic 0x00000803, count, rows, columns;
/// labels with magic 0x00000801, count; big-endian 32-bit header fields, then
/// one byte per pixel / label. Images are 1 x rows x columns (1x28x28 for
/// MNIST), pixels scaled to [0, 1]; 10 classes. Throws invalid_argument
/// naming the file when one is missing or malformed.
[[nodiscard]] std::unique_ptr<Dataset> mnist_dataset(const std::filesystem::path& images_idx,
                                                     const std::filesystem::path& labels_idx);
/// One split of a directory holding the four files under their distributed
/// names: {train,t10k}-images-idx3-ubyte and {train,t10k}-labels-idx1-ubyte,
/// each possibly gzipped (.gz, preferred when both are there).
[[nodiscard]] std::unique_ptr<Dataset> mnist_dataset(const std::filesystem::path& dir, Split split);

/// Fashion-MNIST's pixel mean over its training set, after scaling to [0, 1].
/// Fashion-MNIST is Zalando's drop-in replacement for MNIST: 60,000 training
/// and 10,000 test images of clothing, 1x28x28, 10 classes, in the same IDX
/// files and names as MNIST. Its pixels are scaled to [0, 1] and normalised
/// with this mean and fashion_mnist_std (nn_data_tests.cpp computes both
/// from the real files and checks them to 4 decimals).
inline constexpr double fashion_mnist_mean = 0.2860;
/// Fashion-MNIST's pixel standard deviation over its training set, after
/// scaling to [0, 1] (see fashion_mnist_mean).
inline constexpr double fashion_mnist_std = 0.3530;
/// Where Fashion-MNIST's files are looked for by default:
/// $CACHEDARRAYS_FASHION_MNIST_DIR when set and not empty, else where
/// Debian's dataset-fashion-mnist package installs the files,
/// /usr/share/datasets/fashion-mnist.
[[nodiscard]] std::filesystem::path default_fashion_mnist_dir();
/// One split of Fashion-MNIST from the IDX files in `dir` (gzipped or not),
/// normalised with fashion_mnist_mean and fashion_mnist_std. When a file is
/// missing, invalid_argument names it and says to install the package or
/// set CACHEDARRAYS_FASHION_MNIST_DIR.
[[nodiscard]] std::unique_ptr<Dataset> fashion_mnist_dataset(
    Split split, const std::filesystem::path& dir = default_fashion_mnist_dir());

/// A data set's two splits, as open_data() returns them.
struct DataSplits {
  std::unique_ptr<Dataset> train;  ///< the training split; never null
  /// The test split; null when the source has no test split (a single file,
  /// a pair of files, a directory without one).
  std::unique_ptr<Dataset> test;
};

/// Both splits of the data the `--data` flag of the training CLI names:
///
///     "synthetic"            image_dims, classes and seed; the test split is
///                            drawn from a fixed function of the seed, so its
///                            samples differ from the training ones
///     "fashion-mnist[:DIR]"  DIR defaults to default_fashion_mnist_dir()
///     "mnist:DIR"            DIR/{train,t10k}-*-ubyte[.gz]; test when the t10k
///                            files are there
///     "mnist:IMAGES,LABELS"  two IDX files (split at the first comma); no test
///     "cifar10:DIR"          data_batch_*.bin; test = test_batch.bin if there
///     "cifar10:FILE"         one batch file; no test
///
/// A file data set dictates its image dims and classes: `synthetic_dims` and
/// `synthetic_classes` are used by "synthetic" only, so build the model from
/// the returned train->image_dims() and train->classes(). An unknown spec
/// gets an invalid_argument listing these forms.
[[nodiscard]] DataSplits open_data(std::string_view spec, const Dims& synthetic_dims, std::int64_t synthetic_classes,
                                   std::uint64_t seed);

/// The training split of open_data(spec, ...), without reading the test
/// split. As with open_data, a file data set's dims and classes are its own
/// and are not checked against image_dims and classes (which only shape
/// "synthetic"): read them from the result.
[[nodiscard]] std::unique_ptr<Dataset> open_dataset(std::string_view spec, const Dims& image_dims, std::int64_t classes,
                                                    std::uint64_t seed);

}  // namespace cachedarrays::nn
