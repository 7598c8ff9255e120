// MNIST in its IDX files (yann.lecun.com/exdb/mnist): a big-endian header
// (magic, counts, sizes) followed by one unsigned byte per pixel or label.
// Fashion-MNIST uses the same files (fashion_mnist.cpp).
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

namespace {

constexpr std::uint32_t images_magic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr std::uint32_t labels_magic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr std::uint8_t idx_classes = 10;            // MNIST and Fashion-MNIST alike

std::uint32_t big_endian32(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return static_cast<std::uint32_t>(bytes[at]) << 24 | static_cast<std::uint32_t>(bytes[at + 1]) << 16 |
         static_cast<std::uint32_t>(bytes[at + 2]) << 8 | static_cast<std::uint32_t>(bytes[at + 3]);
}

std::string hex32(std::uint32_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(value >> shift) & 0xf];
  return s;
}

// Checks the header's length and magic number; returns the file's bytes.
std::vector<std::uint8_t> read_idx(const std::filesystem::path& file, const std::string& what, std::size_t header_bytes,
                                   std::uint32_t magic, const std::string& other) {
  std::vector<std::uint8_t> bytes = detail::read_data_file(file, what);
  const std::string prefix = "cachedarrays::nn: " + what + " " + detail::quoted(file);
  // The magic number first: a swapped pair is named as such even when the
  // label file is shorter than an image header.
  const std::uint32_t found = bytes.size() >= 4 ? big_endian32(bytes, 0) : magic;
  if (found != magic) {
    const std::uint32_t other_magic = magic == images_magic ? labels_magic : images_magic;
    const std::string hint = found == other_magic ? ": it looks like the " + other + ", are the two swapped?" : "";
    throw invalid_argument(prefix + " has magic number " + hex32(found) + "; expected " + hex32(magic) + " (" + what +
                           ")" + hint);
  }
  if (bytes.size() < header_bytes) {
    throw invalid_argument(prefix + " is truncated: " + std::to_string(bytes.size()) + " bytes, less than its " +
                           std::to_string(header_bytes) + "-byte IDX header");
  }
  return bytes;
}

}  // namespace

namespace detail {

IdxNames idx_names(Split split) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  return {prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"};
}

std::unique_ptr<Dataset> idx_dataset(const std::filesystem::path& images_idx, const std::filesystem::path& labels_idx,
                                     std::string_view family, double mean, double stddev) {
  const std::string images_what = std::string(family) + " image file";
  const std::string labels_what = std::string(family) + " label file";
  std::vector<std::uint8_t> image_file = read_idx(images_idx, images_what, 16, images_magic, labels_what);
  std::vector<std::uint8_t> label_file = read_idx(labels_idx, labels_what, 8, labels_magic, images_what);
  const std::string images_prefix = "cachedarrays::nn: " + images_what + " " + detail::quoted(images_idx);
  const std::string labels_prefix = "cachedarrays::nn: " + labels_what + " " + detail::quoted(labels_idx);

  const std::uint64_t count = big_endian32(image_file, 4);
  const std::uint64_t rows = big_endian32(image_file, 8);
  const std::uint64_t columns = big_endian32(image_file, 12);
  if (count == 0 || rows == 0 || columns == 0) {
    throw invalid_argument(images_prefix + " announces " + std::to_string(count) + " images of " +
                           std::to_string(rows) + "x" + std::to_string(columns) +
                           " pixels; expected at least one image of at least 1x1");
  }
  const std::uint64_t pixel_bytes = image_file.size() - 16;
  const std::uint64_t per_image = rows * columns;  // < 2^64: both below 2^32
  if (pixel_bytes / per_image != count || pixel_bytes % per_image != 0) {
    throw invalid_argument(images_prefix + " has " + std::to_string(pixel_bytes) +
                           " bytes after its header, but the header announces " + std::to_string(count) +
                           " images of " + std::to_string(rows) + "x" + std::to_string(columns) + " pixels (" +
                           (pixel_bytes / per_image < count ? "truncated" : "trailing data") + ")");
  }
  const std::uint64_t label_count = big_endian32(label_file, 4);
  if (label_file.size() - 8 != label_count) {
    throw invalid_argument(labels_prefix + " has " + std::to_string(label_file.size() - 8) +
                           " bytes after its header, but the header announces " + std::to_string(label_count) +
                           " labels (" + (label_file.size() - 8 < label_count ? "truncated" : "trailing data") + ")");
  }
  if (label_count != count) {
    throw invalid_argument("cachedarrays::nn: " + images_what + " " + detail::quoted(images_idx) + " holds " +
                           std::to_string(count) + " images but " + labels_what + " " + detail::quoted(labels_idx) +
                           " holds " + std::to_string(label_count) +
                           " labels; pass the matching pair (train-images with train-labels, t10k with t10k)");
  }
  for (std::size_t i = 8; i < label_file.size(); ++i) {
    if (label_file[i] >= idx_classes) {
      throw invalid_argument(labels_prefix + ": label " + std::to_string(i - 8) + " is " +
                             std::to_string(label_file[i]) + "; " + std::string(family) + " labels are 0 to 9");
    }
  }
  image_file.erase(image_file.begin(), image_file.begin() + 16);
  label_file.erase(label_file.begin(), label_file.begin() + 8);
  const Dims dims = {1, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(columns)};
  return std::make_unique<ByteImageDataset>(std::string(family) + " " + quoted(images_idx), dims, idx_classes,
                                            std::move(image_file), std::move(label_file), std::vector<double>{mean},
                                            std::vector<double>{stddev});
}

}  // namespace detail

std::unique_ptr<Dataset> mnist_dataset(const std::filesystem::path& images_idx,
                                       const std::filesystem::path& labels_idx) {
  // Scaled to [0, 1] only, as this library always has for MNIST.
  return detail::idx_dataset(images_idx, labels_idx, "MNIST", 0.0, 1.0);
}

std::unique_ptr<Dataset> mnist_dataset(const std::filesystem::path& dir, Split split) {
  const std::string prefix = "cachedarrays::nn: the MNIST directory " + detail::quoted(dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw invalid_argument(prefix + " does not exist or is not a directory");
  const detail::IdxNames names = detail::idx_names(split);
  const auto images = detail::find_data_file(dir, names.images);
  const auto labels = detail::find_data_file(dir, names.labels);
  for (const auto& [file, name] : {std::pair{images, names.images}, std::pair{labels, names.labels}}) {
    if (!file) {
      throw invalid_argument(prefix + " has no " + name + " (nor " + name + ".gz) for the " +
                             std::string(detail::split_name(split)) +
                             " split; expected {train,t10k}-images-idx3-ubyte and {train,t10k}-labels-idx1-ubyte, "
                             "each possibly gzipped (.gz)");
    }
  }
  return mnist_dataset(*images, *labels);
}

}  // namespace cachedarrays::nn
