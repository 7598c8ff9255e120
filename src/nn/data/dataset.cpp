// What every dataset shares: the file reader, the batch check, the decoded
// 8-bit image dataset, and open_dataset (the --data flag).
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

Dataset::~Dataset() = default;

namespace detail {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

std::vector<std::uint8_t> read_whole_file(const std::filesystem::path& path, std::string_view what) {
  const std::string prefix = "cachedarrays::nn: " + std::string(what) + " " + quoted(path);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw invalid_argument(prefix + " cannot be accessed: " + ec.message());
  }
  if (!std::filesystem::exists(status)) throw invalid_argument(prefix + " does not exist");
  if (!std::filesystem::is_regular_file(status)) throw invalid_argument(prefix + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) throw invalid_argument(prefix + " cannot be read (permissions?)");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size())) {
    throw invalid_argument(prefix + ": read " + std::to_string(in.gcount()) + " of its " + std::to_string(size) +
                           " bytes");
  }
  return bytes;
}

std::int64_t checked_batch_size(std::span<const float> images, std::span<const float> labels, const Dims& image_dims,
                                std::string_view dataset) {
  std::int64_t per_image = 1;
  for (std::int64_t d : image_dims) per_image *= d;
  const auto batch = static_cast<std::int64_t>(labels.size());
  if (batch < 1 || static_cast<std::int64_t>(images.size()) != batch * per_image) {
    throw invalid_argument("cachedarrays::nn: next_batch of " + std::string(dataset) + " got room for " +
                           std::to_string(images.size()) + " image floats and " + std::to_string(labels.size()) +
                           " labels; a batch of N images needs N labels (N >= 1) and N * " +
                           std::to_string(per_image) + " floats");
  }
  return batch;
}

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

void ByteImageDataset::next_batch(std::span<float> images, std::span<float> labels) {
  const std::int64_t batch = checked_batch_size(images, labels, image_dims_, name_);
  const auto plane = static_cast<std::size_t>(image_dims_[1] * image_dims_[2]);
  const std::size_t per_image = plane * static_cast<std::size_t>(image_dims_[0]);
  for (std::int64_t i = 0; i < batch; ++i) {
    const auto sample = static_cast<std::size_t>(next_);
    const std::uint8_t* src = pixels_.data() + sample * per_image;
    float* dst = images.data() + static_cast<std::size_t>(i) * per_image;
    for (std::size_t c = 0; c < static_cast<std::size_t>(image_dims_[0]); ++c) {
      const float* table = decoded_.data() + 256 * c;
      for (std::size_t p = 0; p < plane; ++p) dst[c * plane + p] = table[src[c * plane + p]];
    }
    labels[static_cast<std::size_t>(i)] = static_cast<float>(labels_[sample]);
    next_ = (next_ + 1) % size();
  }
}

}  // namespace detail

namespace {

std::string dims_string(const Dims& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i == 0 ? "" : "x") + std::to_string(dims[i]);
  return s;
}

constexpr std::string_view data_forms =
    "\"synthetic\", \"cifar10:PATH\" (a CIFAR-10 binary file, or the directory holding data_batch_*.bin) or "
    "\"mnist:IMAGES,LABELS\" (the two IDX files)";

}  // namespace

std::unique_ptr<Dataset> open_dataset(std::string_view spec, const Dims& image_dims, std::int64_t classes,
                                      std::uint64_t seed) {
  if (spec == "synthetic") return synthetic_dataset(image_dims, classes, seed);
  std::unique_ptr<Dataset> data;
  constexpr std::string_view cifar = "cifar10:";
  constexpr std::string_view mnist = "mnist:";
  if (spec.starts_with(cifar) && spec.size() > cifar.size()) {
    data = cifar10_dataset(std::filesystem::path(spec.substr(cifar.size())));
  } else if (spec.starts_with(mnist)) {
    const std::string_view files = spec.substr(mnist.size());
    const std::size_t comma = files.find(',');
    if (comma == std::string_view::npos || comma == 0 || comma + 1 == files.size()) {
      throw invalid_argument("cachedarrays::nn: dataset \"" + std::string(spec) +
                             "\" names no pair of files; use mnist:IMAGES,LABELS, e.g. "
                             "mnist:train-images-idx3-ubyte,train-labels-idx1-ubyte");
    }
    data = mnist_dataset(std::filesystem::path(files.substr(0, comma)), std::filesystem::path(files.substr(comma + 1)));
  } else {
    throw invalid_argument("cachedarrays::nn: unknown dataset \"" + std::string(spec) + "\"; use " +
                           std::string(data_forms));
  }
  if (data->image_dims() != image_dims) {
    throw invalid_argument("cachedarrays::nn: dataset \"" + std::string(spec) + "\" has " +
                           dims_string(data->image_dims()) + " images but the model takes " +
                           dims_string(image_dims) + "; build the model for " + dims_string(data->image_dims()) +
                           " images");
  }
  if (data->classes() > classes) {
    throw invalid_argument("cachedarrays::nn: dataset \"" + std::string(spec) + "\" has " +
                           std::to_string(data->classes()) + " classes but the model only " + std::to_string(classes) +
                           "; build the model with at least " + std::to_string(data->classes()) + " classes");
  }
  return data;
}

}  // namespace cachedarrays::nn
