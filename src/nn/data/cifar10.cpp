// CIFAR-10, binary version (cifar-10-batches-bin): each file is a run of
// 3073-byte records, a label byte then the R, G and B planes of a 32x32
// image; the pixel planes are already in CHW order. The training set is
// data_batch_1..5.bin, the test set test_batch.bin; any may be gzipped.
#include <algorithm>
#include <string>
#include <system_error>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

namespace {

constexpr std::int64_t side = 32;
constexpr std::int64_t channels = 3;
constexpr std::size_t image_bytes = channels * side * side;
constexpr std::size_t record_bytes = 1 + image_bytes;
constexpr std::uint8_t classes = 10;

// Of the 50,000 training images, after scaling to [0, 1].
const std::vector<double> channel_mean = {0.4914, 0.4822, 0.4465};
const std::vector<double> channel_std = {0.2470, 0.2435, 0.2616};

// The training files of a directory, in name order.
std::vector<std::filesystem::path> batch_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("data_batch_") && (name.ends_with(".bin") || name.ends_with(".bin.gz"))) {
      files.push_back(entry.path());
    }
  }
  if (ec) throw invalid_argument("cachedarrays::nn: cannot list the CIFAR-10 directory " + detail::quoted(dir));
  if (files.empty()) {
    throw invalid_argument(
        "cachedarrays::nn: the CIFAR-10 directory " + detail::quoted(dir) +
        " holds no data_batch_*.bin files (nor data_batch_*.bin.gz); expected the binary version of CIFAR-10 "
        "(cifar-10-batches-bin), or pass one file");
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Appends the records of one file.
void read_records(const std::filesystem::path& file, std::vector<std::uint8_t>& pixels,
                  std::vector<std::uint8_t>& labels) {
  const std::vector<std::uint8_t> bytes = detail::read_data_file(file, "CIFAR-10 file");
  const std::string prefix = "cachedarrays::nn: CIFAR-10 file " + detail::quoted(file);
  if (bytes.empty()) {
    throw invalid_argument(prefix + " is empty; expected records of " + std::to_string(record_bytes) +
                           " bytes (1 label byte + 3072 pixel bytes)");
  }
  if (bytes.size() % record_bytes != 0) {
    throw invalid_argument(prefix + " has " + std::to_string(bytes.size()) + " bytes, not a whole number of " +
                           std::to_string(record_bytes) + "-byte records (1 label byte + 3072 pixel bytes): " +
                           "truncated, or not CIFAR-10's binary version?");
  }
  const std::size_t records = bytes.size() / record_bytes;
  pixels.reserve(pixels.size() + records * image_bytes);
  labels.reserve(labels.size() + records);
  for (std::size_t r = 0; r < records; ++r) {
    const std::uint8_t* record = bytes.data() + r * record_bytes;
    if (record[0] >= classes) {
      throw invalid_argument(prefix + ": record " + std::to_string(r) + " has label " + std::to_string(record[0]) +
                             "; CIFAR-10 labels are 0 to 9 (CIFAR-100 files, with 2 label bytes, are not supported)");
    }
    labels.push_back(record[0]);
    pixels.insert(pixels.end(), record + 1, record + record_bytes);
  }
}

std::unique_ptr<Dataset> dataset_of(const std::vector<std::filesystem::path>& files, const std::string& name) {
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;
  for (const auto& file : files) read_records(file, pixels, labels);
  return std::make_unique<detail::ByteImageDataset>(name, Dims{channels, side, side}, classes, std::move(pixels),
                                                    std::move(labels), channel_mean, channel_std);
}

}  // namespace

std::unique_ptr<Dataset> cifar10_dataset(const std::filesystem::path& file_or_dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(file_or_dir, ec)) return cifar10_dataset(file_or_dir, Split::train);
  return dataset_of({file_or_dir}, "CIFAR-10 " + detail::quoted(file_or_dir));
}

std::unique_ptr<Dataset> cifar10_dataset(const std::filesystem::path& dir, Split split) {
  const std::string name = "CIFAR-10 " + detail::quoted(dir) + " (" + std::string(detail::split_name(split)) + ")";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw invalid_argument("cachedarrays::nn: the CIFAR-10 directory " + detail::quoted(dir) +
                           " does not exist or is not a directory");
  }
  if (split == Split::train) return dataset_of(batch_files(dir), name);
  const auto test = detail::find_data_file(dir, "test_batch.bin");
  if (!test) {
    throw invalid_argument("cachedarrays::nn: the CIFAR-10 directory " + detail::quoted(dir) +
                           " has no test_batch.bin (nor test_batch.bin.gz), the test split of cifar-10-batches-bin");
  }
  return dataset_of({*test}, name);
}

}  // namespace cachedarrays::nn
