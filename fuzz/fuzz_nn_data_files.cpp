// libFuzzer target: the data set files of cachedarrays::nn as a
// user hands them over (data.hpp) — an MNIST / Fashion-MNIST IDX pair or
// CIFAR-10 binary batches, each plain or gzipped — written to a scratch
// directory and opened through the public entry points. There is no CSV
// reader in nn to fuzz.
//
// Input: byte 0 picks the format and the entry point (see open()); bytes 1
// and 2 are the big-endian length of the first file; the rest is the first
// file and then the second (IDX: images then labels; CIFAR-10: two batches).
// Bad input must end in invalid_argument, never in a crash, a hang or a
// huge allocation. A data set that opens must hand out what it claims:
// its first and last samples, labels 0 to 9 (the file's own label bytes
// where they can be read off the input), finite pixels, a wrapping batch.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "fuzz_scratch.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

using Bytes = std::span<const std::uint8_t>;

constexpr std::size_t cifar_record = 1 + 3 * 32 * 32;

bool is_gzip(Bytes file) { return file.size() >= 2 && file[0] == 0x1f && file[1] == 0x8b; }

// The name a directory reader looks for, with .gz when the file is gzipped
// (as Debian ships them; the readers go by the content, not the name).
std::string name_for(const std::string& name, Bytes file) { return is_gzip(file) ? name + ".gz" : name; }

// The label bytes of the input, when the data set's labels are exactly
// them (plain files read as one): label i is labels[i * stride].
struct KnownLabels {
  Bytes labels;
  std::size_t stride = 1;
};

std::unique_ptr<nn::Dataset> open_idx(unsigned mode, Bytes images, Bytes labels, KnownLabels& known) {
  const nn::Split split = (mode & 1) != 0 ? nn::Split::test : nn::Split::train;
  const std::string prefix = split == nn::Split::train ? "train" : "t10k";
  const fuzz::ScratchDir& dir = fuzz::scratch();
  const auto images_file = dir.write(name_for(prefix + "-images-idx3-ubyte", images), images);
  const auto labels_file = dir.write(name_for(prefix + "-labels-idx1-ubyte", labels), labels);
  if (!is_gzip(labels) && labels.size() >= 8) known = {labels.subspan(8), 1};
  switch ((mode >> 1) % 3) {
    case 0: return nn::mnist_dataset(images_file, labels_file);
    case 1: return nn::mnist_dataset(dir.path(), split);
    default: return nn::fashion_mnist_dataset(split, dir.path());
  }
}

std::unique_ptr<nn::Dataset> open_cifar10(unsigned mode, Bytes first, Bytes second, KnownLabels& known) {
  const fuzz::ScratchDir& dir = fuzz::scratch();
  switch (mode % 3) {
    case 0: {  // one file
      if (!is_gzip(first)) known = {first, cifar_record};
      return nn::cifar10_dataset(dir.write(name_for("data_batch_1.bin", first), first));
    }
    case 1: {  // the training split of a directory: one or two batches
      dir.write(name_for("data_batch_1.bin", first), first);
      if (!second.empty()) dir.write(name_for("data_batch_2.bin", second), second);
      if (!is_gzip(first) && second.empty()) known = {first, cifar_record};
      return nn::open_dataset("cifar10:" + dir.path().string(), {3, 32, 32}, 10, 0);
    }
    default: {  // the test split, beside a training batch it must not read
      dir.write(name_for("test_batch.bin", first), first);
      dir.write("data_batch_1.bin", second);
      if (!is_gzip(first)) known = {first, cifar_record};
      return nn::cifar10_dataset(dir.path(), nn::Split::test);
    }
  }
}

void check_sample(const nn::Dataset& data, std::int64_t index, std::span<float> image, const KnownLabels& known) {
  const std::int64_t label = data.sample(index, image);
  if (label < 0 || label >= data.classes()) __builtin_trap();
  const auto at = static_cast<std::size_t>(index) * known.stride;
  if (!known.labels.empty() && (at >= known.labels.size() || known.labels[at] != label)) __builtin_trap();
  if (!std::all_of(image.begin(), image.end(), [](float v) { return std::isfinite(v); })) __builtin_trap();
}

void check(nn::Dataset& data, const KnownLabels& known) {
  const std::int64_t size = data.size();
  const nn::Dims dims = data.image_dims();
  if (size < 1 || data.classes() != 10 || dims.size() != 3) __builtin_trap();
  std::int64_t per_image = 1;
  for (std::int64_t d : dims) {
    if (d < 1) __builtin_trap();
    per_image *= d;
  }
  std::vector<float> images(2 * static_cast<std::size_t>(per_image));
  const std::span<float> image = std::span(images).first(static_cast<std::size_t>(per_image));
  check_sample(data, 0, image, known);
  check_sample(data, size - 1, image, known);
  // Two batches of two: with one or two samples, the order wraps around.
  std::vector<float> labels(2);
  for (int batch = 0; batch < 2; ++batch) {
    data.next_batch(images, labels);
    for (float label : labels) {
      if (!(label >= 0 && label < 10)) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const fuzz::ClearScratch clear;
  const unsigned selector = data[0];
  const std::size_t first_size = std::min<std::size_t>(std::size_t{data[1]} << 8 | data[2], size - 3);
  const Bytes first(data + 3, first_size);
  const Bytes second(data + 3 + first_size, size - 3 - first_size);
  KnownLabels known;
  std::unique_ptr<nn::Dataset> dataset;
  try {
    dataset = (selector & 1) == 0 ? open_idx(selector >> 1, first, second, known)
                                  : open_cifar10(selector >> 1, first, second, known);
  } catch (const ca::invalid_argument&) {
    return 0;  // refused, naming the file and what is wrong
  }
  check(*dataset, known);
  return 0;
}
