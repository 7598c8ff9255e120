// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) where Debian's
// dataset-fashion-mnist package puts it: MNIST's four IDX file names,
// gzipped, in /usr/share/datasets/fashion-mnist.
#include <cstdlib>
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/runtime/environment.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

namespace {

constexpr const char* package_dir = "/usr/share/datasets/fashion-mnist";

// What a person can do about a missing file; tests look for this sentence.
constexpr std::string_view remedy =
    "install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist) or set "
    "CACHEDARRAYS_FASHION_MNIST_DIR";

std::filesystem::path required_file(const std::filesystem::path& dir, const std::string& name, Split split,
                                    std::string_view kind) {
  if (auto file = detail::find_data_file(dir, name)) return *file;
  throw invalid_argument("cachedarrays::nn: Fashion-MNIST's " + std::string(detail::split_name(split)) + " " +
                         std::string(kind) + " are missing: " + detail::quoted(dir / (name + ".gz")) +
                         " does not exist (nor does the uncompressed " + name + "); " + std::string(remedy) +
                         " to the directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz");
}

}  // namespace

std::filesystem::path default_fashion_mnist_dir() {
  return fashion_mnist_dir_from_environment().value_or(std::filesystem::path(package_dir));
}

std::unique_ptr<Dataset> fashion_mnist_dataset(Split split, const std::filesystem::path& dir) {
  const detail::IdxNames names = detail::idx_names(split);
  const std::filesystem::path images = required_file(dir, names.images, split, "images");
  const std::filesystem::path labels = required_file(dir, names.labels, split, "labels");
  return detail::idx_dataset(images, labels, "Fashion-MNIST", fashion_mnist_mean, fashion_mnist_std);
}

}  // namespace cachedarrays::nn
