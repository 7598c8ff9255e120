// The --data flag: a spec string parsed once into a Source, from which the
// training and test splits are opened.
#include <string>
#include <system_error>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

namespace {

constexpr std::string_view data_forms =
    "\"synthetic\", \"fashion-mnist\" or \"fashion-mnist:DIR\" (the four IDX files, gzipped or not), "
    "\"mnist:DIR\" (a directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]), "
    "\"mnist:IMAGES,LABELS\" (two IDX files), \"cifar10:DIR\" (a cifar-10-batches-bin directory: "
    "data_batch_*.bin, test_batch.bin) or \"cifar10:FILE\" (one CIFAR-10 binary file)";

enum class Kind { synthetic, fashion_mnist, mnist_dir, mnist_files, cifar10_dir, cifar10_file };

struct Source {
  Kind kind;
  std::filesystem::path first;   // the directory or file (IMAGES for mnist_files)
  std::filesystem::path second;  // LABELS for mnist_files
};

bool is_existing_directory(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

Source parse(std::string_view spec) {
  constexpr std::string_view fashion = "fashion-mnist";
  constexpr std::string_view mnist = "mnist:";
  constexpr std::string_view cifar = "cifar10:";
  if (spec == "synthetic") return {Kind::synthetic, {}, {}};
  if (spec == fashion) return {Kind::fashion_mnist, default_fashion_mnist_dir(), {}};
  if (spec.starts_with(fashion) && spec.size() > fashion.size() + 1 && spec[fashion.size()] == ':') {
    return {Kind::fashion_mnist, std::filesystem::path(spec.substr(fashion.size() + 1)), {}};
  }
  if (spec.starts_with(cifar) && spec.size() > cifar.size()) {
    const std::filesystem::path path(spec.substr(cifar.size()));
    return {is_existing_directory(path) ? Kind::cifar10_dir : Kind::cifar10_file, path, {}};
  }
  if (spec.starts_with(mnist) && spec.size() > mnist.size()) {
    const std::string_view rest = spec.substr(mnist.size());
    // A directory first, so a directory whose name holds a comma still works.
    if (is_existing_directory(std::filesystem::path(rest))) return {Kind::mnist_dir, std::filesystem::path(rest), {}};
    const std::size_t comma = rest.find(',');
    if (comma == std::string_view::npos || comma == 0 || comma + 1 == rest.size()) {
      throw invalid_argument("cachedarrays::nn: dataset \"" + std::string(spec) +
                             "\" names neither a directory nor a pair of files; use mnist:DIR (holding "
                             "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]) or mnist:IMAGES,LABELS, e.g. "
                             "mnist:train-images-idx3-ubyte,train-labels-idx1-ubyte");
    }
    return {Kind::mnist_files, std::filesystem::path(rest.substr(0, comma)),
            std::filesystem::path(rest.substr(comma + 1))};
  }
  throw invalid_argument("cachedarrays::nn: unknown dataset \"" + std::string(spec) + "\"; use " +
                         std::string(data_forms));
}

// Whether a directory's test split is there: any of its files present. A
// half-present split is opened anyway, so that its missing file is named.
bool has_test_split(const Source& source) {
  switch (source.kind) {
    case Kind::synthetic:
    case Kind::fashion_mnist: return true;
    case Kind::mnist_dir: {
      const detail::IdxNames names = detail::idx_names(Split::test);
      return detail::find_data_file(source.first, names.images) || detail::find_data_file(source.first, names.labels);
    }
    case Kind::cifar10_dir: return detail::find_data_file(source.first, "test_batch.bin").has_value();
    case Kind::mnist_files:
    case Kind::cifar10_file: return false;
  }
  return false;
}

std::unique_ptr<Dataset> open_split(const Source& source, Split split, const Dims& synthetic_dims,
                                    std::int64_t synthetic_classes, std::uint64_t seed) {
  if (split == Split::test && !has_test_split(source)) return nullptr;
  switch (source.kind) {
    case Kind::synthetic:
      return synthetic_dataset(synthetic_dims, synthetic_classes,
                               split == Split::train ? seed : detail::synthetic_test_seed(seed));
    case Kind::fashion_mnist: return fashion_mnist_dataset(split, source.first);
    case Kind::mnist_dir: return mnist_dataset(source.first, split);
    case Kind::mnist_files: return mnist_dataset(source.first, source.second);
    case Kind::cifar10_dir: return cifar10_dataset(source.first, split);
    case Kind::cifar10_file: return cifar10_dataset(source.first);
  }
  return nullptr;
}

}  // namespace

DataSplits open_data(std::string_view spec, const Dims& synthetic_dims, std::int64_t synthetic_classes,
                     std::uint64_t seed) {
  const Source source = parse(spec);
  DataSplits splits;
  splits.train = open_split(source, Split::train, synthetic_dims, synthetic_classes, seed);
  splits.test = open_split(source, Split::test, synthetic_dims, synthetic_classes, seed);
  return splits;
}

std::unique_ptr<Dataset> open_dataset(std::string_view spec, const Dims& image_dims, std::int64_t classes,
                                      std::uint64_t seed) {
  return open_split(parse(spec), Split::train, image_dims, classes, seed);
}

}  // namespace cachedarrays::nn
