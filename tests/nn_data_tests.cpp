// nn data: CIFAR-10 and MNIST files written here and read back (values,
// labels, order, wrap-around, random access, gzipped twins, directory
// splits), Debian's real Fashion-MNIST files, the synthetic dataset's
// determinism and distribution, open_data / open_dataset. Malformed plain
// files are in nn_negative_tests.cpp; BatchSampler in nn_sampler_tests.cpp.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn_data_files.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace fs = std::filesystem;
using test::cifar_image, test::cifar_pixel, test::cifar_records, test::invalid_argument_message, test::mnist_images,
    test::mnist_labels, test::mnist_pixel, test::TempDir;

// The process's peak resident memory so far.
long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// ---- CIFAR-10 ----------------------------------------------------------------

double cifar_value(int record, std::size_t i) {
  const double mean[] = {0.4914, 0.4822, 0.4465};
  const double stddev[] = {0.2470, 0.2435, 0.2616};
  const std::size_t c = i / (32 * 32);
  return (cifar_pixel(record, i) / 255.0 - mean[c]) / stddev[c];
}

// Reads batches of `batch` and checks they hold `records` in that order.
void check_cifar_batches(nn::Dataset& data, std::size_t batch, const std::vector<int>& records) {
  std::vector<float> images(batch * cifar_image);
  std::vector<float> labels(batch);
  for (std::size_t start = 0; start < records.size(); start += batch) {
    data.next_batch(images, labels);
    for (std::size_t b = 0; b < batch && start + b < records.size(); ++b) {
      const int r = records[start + b];
      CAPTURE(r);
      CHECK(labels[b] == static_cast<float>((r * 3) % 10));
      for (std::size_t i :
           {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{1024}, std::size_t{2500}, cifar_image - 1}) {
        CHECK(images[b * cifar_image + i] == static_cast<float>(cifar_value(r, i)));
      }
    }
  }
}

}  // namespace

TEST_CASE("nn data: a CIFAR-10 file reads back normalised, in order, wrapping around") {
  TempDir dir;
  const fs::path file = dir.write("data_batch_1.bin", cifar_records(0, 3));
  const auto data = nn::cifar10_dataset(file);
  CHECK(data->size() == 3);
  CHECK(data->image_dims() == nn::Dims{3, 32, 32});
  CHECK(data->classes() == 10);
  // Batches of 2 over 3 records: 0 1 | 2 0 | 1 2 | 0 ...
  check_cifar_batches(*data, 2, {0, 1, 2, 0, 1, 2, 0, 1});
}

TEST_CASE("nn data: a CIFAR-10 directory means all its data_batch_*.bin files, in name order") {
  TempDir dir;
  dir.write("data_batch_2.bin", cifar_records(2, 1));
  dir.write("data_batch_1.bin", cifar_records(0, 2));
  dir.write("test_batch.bin", cifar_records(50, 4));  // the test set: not read
  dir.write("batches.meta.txt", {'a', 'b', '\n'});
  const auto data = nn::cifar10_dataset(dir.path());
  CHECK(data->size() == 3);
  check_cifar_batches(*data, 3, {0, 1, 2, 0, 1, 2});
}

TEST_CASE("nn data: MNIST IDX files read back scaled to [0, 1], wrapping around") {
  TempDir dir;
  const fs::path images = dir.write("train-images-idx3-ubyte", mnist_images(3));
  const fs::path labels = dir.write("train-labels-idx1-ubyte", mnist_labels({7, 0, 9}));
  const auto data = nn::mnist_dataset(images, labels);
  CHECK(data->size() == 3);
  CHECK(data->image_dims() == nn::Dims{1, 28, 28});
  CHECK(data->classes() == 10);
  std::vector<float> x(2 * 28 * 28);
  std::vector<float> y(2);
  const std::vector<std::uint32_t> order = {0, 1, 2, 0, 1, 2};
  const float expected_labels[] = {7, 0, 9};
  for (std::size_t start = 0; start < order.size(); start += 2) {
    data->next_batch(x, y);
    for (std::size_t b = 0; b < 2; ++b) {
      const std::uint32_t n = order[start + b];
      CAPTURE(n);
      CHECK(y[b] == expected_labels[n]);
      for (std::size_t i = 0; i < 28 * 28; ++i) {
        if (x[b * 784 + i] != static_cast<float>(mnist_pixel(n, i) / 255.0)) {
          FAIL_CHECK("pixel " << i << " is " << x[b * 784 + i]);
          break;
        }
      }
    }
  }
  // A batch larger than the dataset wraps within the batch.
  std::vector<float> x5(5 * 784);
  std::vector<float> y5(5);
  data->next_batch(x5, y5);
  CHECK(y5 == std::vector<float>{7, 0, 9, 7, 0});
  // Spans that do not fit each other.
  CHECK(invalid_argument_message([&] {
          data->next_batch(std::span(x5).first(100), y5);
        }).find("a batch of N images needs N labels") != std::string::npos);
}

TEST_CASE("nn data: synthetic data is deterministic per seed, N(0, 1), with labels in range") {
  const nn::Dims dims = {3, 32, 32};
  const std::size_t per_image = 3 * 32 * 32;
  const auto batch_of = [&](nn::Dataset& d, std::size_t n) {
    std::pair<std::vector<float>, std::vector<float>> b{std::vector<float>(n * per_image), std::vector<float>(n)};
    d.next_batch(b.first, b.second);
    return b;
  };
  auto a = nn::synthetic_dataset(dims, 10, 42);
  auto b = nn::synthetic_dataset(dims, 10, 42);
  auto c = nn::synthetic_dataset(dims, 10, 43);
  CHECK(a->image_dims() == dims);
  CHECK(a->classes() == 10);
  CHECK(a->size() == std::numeric_limits<std::int64_t>::max());

  const auto a1 = batch_of(*a, 4);
  CHECK(a1 == batch_of(*b, 4));
  CHECK(a1.first != batch_of(*c, 4).first);
  // The next batch continues the stream; how it is cut does not matter.
  const auto a2 = batch_of(*a, 4);
  CHECK(a2.first != a1.first);
  const auto b2 = batch_of(*b, 1);
  const auto b3 = batch_of(*b, 3);
  CHECK(std::equal(b2.first.begin(), b2.first.end(), a2.first.begin()));
  CHECK(std::equal(b3.first.begin(), b3.first.end(), a2.first.begin() + per_image));
  CHECK(b3.second[2] == a2.second[3]);

  const auto big = batch_of(*a, 64);  // 196,608 values
  double sum = 0;
  double squares = 0;
  for (float v : big.first) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  const auto n = static_cast<double>(big.first.size());
  const double mean = sum / n;
  const double stddev = std::sqrt(squares / n - mean * mean);
  CHECK(std::abs(mean) < 0.01);
  CHECK(std::abs(stddev - 1.0) < 0.01);
  std::vector<int> seen(10, 0);
  for (float l : big.second) {
    REQUIRE(l == std::floor(l));
    REQUIRE(l >= 0);
    REQUIRE(l < 10);
    ++seen[static_cast<std::size_t>(l)];
  }
  for (int s : seen) CHECK(s > 0);

  // Odd image sizes fill every value.
  auto odd = nn::synthetic_dataset({1, 3, 3}, 2, 7);
  std::vector<float> x(2 * 9, std::nanf(""));
  std::vector<float> y(2);
  odd->next_batch(x, y);
  for (float v : x) CHECK(std::isfinite(v));

  CHECK_THROWS_AS((void)nn::synthetic_dataset({3, 32}, 10, 1), ca::invalid_argument);
  CHECK_THROWS_AS((void)nn::synthetic_dataset({3, 0, 32}, 10, 1), ca::invalid_argument);
  CHECK_THROWS_AS((void)nn::synthetic_dataset(dims, 0, 1), ca::invalid_argument);
  std::vector<float> wrong(per_image + 1);
  std::vector<float> one(1);
  CHECK_THROWS_AS(a->next_batch(wrong, one), ca::invalid_argument);
}

namespace {

using test::Bytes, test::gzip;

// The same samples, value for value, with the same labels, shape and classes.
void check_same_samples(const nn::Dataset& a, const nn::Dataset& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.image_dims() == b.image_dims());
  CHECK(a.classes() == b.classes());
  std::vector<float> x(test::count(a.image_dims()));
  std::vector<float> y(x.size());
  for (std::int64_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    REQUIRE(a.sample(i, x) == b.sample(i, y));
    REQUIRE(x == y);
  }
}

constexpr const char* fashion_variable = "CACHEDARRAYS_FASHION_MNIST_DIR";
constexpr std::string_view fashion_remedy =
    "install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist) or set "
    "CACHEDARRAYS_FASHION_MNIST_DIR";

// Debian's real files (CI installs dataset-fashion-mnist), decoded once for
// the tests that read them.
const nn::Dataset& real_fashion_mnist(nn::Split split) {
  static const std::unique_ptr<nn::Dataset> train = nn::fashion_mnist_dataset(nn::Split::train);
  static const std::unique_ptr<nn::Dataset> test = nn::fashion_mnist_dataset(nn::Split::test);
  return split == nn::Split::train ? *train : *test;
}

// Writes MNIST's four files under their distributed names: `train` and
// `test` images, the training ones gzipped.
void write_idx_dir(const TempDir& dir, std::uint32_t train, std::uint32_t test) {
  Bytes train_labels;
  Bytes test_labels;
  for (std::uint32_t i = 0; i < train; ++i) train_labels.push_back(static_cast<std::uint8_t>(i % 10));
  for (std::uint32_t i = 0; i < test; ++i) test_labels.push_back(static_cast<std::uint8_t>((i + 5) % 10));
  dir.write("train-images-idx3-ubyte.gz", gzip(mnist_images(train)));
  dir.write("train-labels-idx1-ubyte.gz", gzip(mnist_labels(train_labels)));
  dir.write("t10k-images-idx3-ubyte", mnist_images(test));
  dir.write("t10k-labels-idx1-ubyte", mnist_labels(test_labels));
}

}  // namespace

TEST_CASE("nn data: sample(i) is random access to what next_batch hands out as its i-th sample") {
  TempDir dir;
  const auto cifar = nn::cifar10_dataset(dir.write("data_batch_1.bin", cifar_records(0, 3)));
  const auto mnist =
      nn::mnist_dataset(dir.write("images", mnist_images(3)), dir.write("labels", mnist_labels({7, 0, 9})));
  auto synthetic = nn::synthetic_dataset({2, 5, 7}, 4, 9);  // odd image size: the last Box-Muller pair is half used
  auto streamed = nn::synthetic_dataset({2, 5, 7}, 4, 9);
  for (nn::Dataset* data : {cifar.get(), mnist.get(), synthetic.get()}) {
    const std::size_t per_image = test::count(data->image_dims());
    std::vector<float> batch(5 * per_image);
    std::vector<float> labels(5);
    nn::Dataset& source = data == synthetic.get() ? *streamed : *data;
    source.next_batch(batch, labels);  // the first 5 samples (wrapping around for the files)
    std::vector<float> one(per_image);
    for (std::int64_t i = 0; i < 5; ++i) {
      CAPTURE(i);
      const std::int64_t index = i % std::min<std::int64_t>(data->size(), 5);
      CHECK(static_cast<float>(data->sample(index, one)) == labels[static_cast<std::size_t>(i)]);
      CHECK(std::equal(one.begin(), one.end(), batch.begin() + static_cast<std::ptrdiff_t>(i * per_image)));
    }
  }
  // A later synthetic sample, far past anything streamed.
  std::vector<float> far(70);
  std::vector<float> skipped(70 * 1000);
  std::vector<float> skipped_labels(1000);
  streamed->next_batch(skipped, skipped_labels);  // samples 5 to 1004
  CHECK(static_cast<float>(synthetic->sample(1004, far)) == skipped_labels.back());
  CHECK(std::equal(far.begin(), far.end(), skipped.end() - 70));

  std::vector<float> image(28 * 28);
  std::string m = invalid_argument_message([&] { (void)mnist->sample(3, image); });
  CHECK(m.find("has no sample 3; its samples are 0 to 2") != std::string::npos);
  CHECK(m.find(dir.path().string()) != std::string::npos);
  CHECK(invalid_argument_message([&] { (void)mnist->sample(-1, image); }).find("has no sample -1") !=
        std::string::npos);
  m = invalid_argument_message([&] { (void)mnist->sample(0, std::span(image).first(100)); });
  CHECK(m.find("got room for 100 floats; one [1, 28, 28] image is 784 floats") != std::string::npos);
  CHECK(invalid_argument_message([&] { (void)synthetic->sample(0, image); }).find("one [2, 5, 7] image is 70") !=
        std::string::npos);
}

TEST_CASE("nn data: gzipped IDX and CIFAR-10 files read back exactly like their uncompressed twins") {
  TempDir dir;
  const Bytes images = mnist_images(5);
  const Bytes labels = mnist_labels({3, 1, 4, 1, 5});
  const auto plain = nn::mnist_dataset(dir.write("images", images), dir.write("labels", labels));
  // Many stored blocks, and two gzip members one after the other (what
  // `cat a.gz b.gz` makes, which gunzip reads as one file).
  Bytes two_members = gzip(Bytes(images.begin(), images.begin() + 1000), 300);
  const Bytes second = gzip(Bytes(images.begin() + 1000, images.end()), 1024);
  two_members.insert(two_members.end(), second.begin(), second.end());
  const auto gzipped = nn::mnist_dataset(dir.write("images.gz", two_members), dir.write("labels.gz", gzip(labels)));
  check_same_samples(*plain, *gzipped);

  const auto cifar_plain = nn::cifar10_dataset(dir.write("plain.bin", cifar_records(0, 3)));
  const auto cifar_gzipped = nn::cifar10_dataset(dir.write("gzipped.bin", gzip(cifar_records(0, 3))));
  check_same_samples(*cifar_plain, *cifar_gzipped);
  // In a directory, data_batch_*.bin.gz count as batch files, in name order.
  TempDir batches;
  batches.write("data_batch_1.bin.gz", gzip(cifar_records(0, 1)));
  batches.write("data_batch_2.bin", cifar_records(1, 2));
  check_same_samples(*cifar_plain, *nn::cifar10_dataset(batches.path()));
}

TEST_CASE("nn data: a truncated or corrupt gzip file is rejected, naming the file and what is wrong") {
  TempDir dir;
  const fs::path labels = dir.write("labels", mnist_labels({1, 2}));
  const Bytes gz = gzip(mnist_images(2), 500);
  const auto check = [&](const std::string& name, const Bytes& bytes, const std::string& expected) {
    const fs::path file = dir.write(name, bytes);
    const std::string m = invalid_argument_message([&] { (void)nn::mnist_dataset(file, labels); });
    CAPTURE(m);
    CHECK(m.find("MNIST image file '" + file.string() + "'") != std::string::npos);
    CHECK(m.find(expected) != std::string::npos);
  };
  const std::string truncated = "is gzip-compressed but ends before its gzip stream does (truncated?)";
  check("half.gz", Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2)), truncated);
  check("no-trailer.gz", Bytes(gz.begin(), gz.end() - 8), truncated);
  check("header-only.gz", Bytes(gz.begin(), gz.begin() + 10), truncated);
  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x01;
  check("crc.gz", bad_crc, "is gzip-compressed but corrupt at byte");
  check("crc.gz", bad_crc, "incorrect data check");
  Bytes bad_method = gz;
  bad_method[2] = 7;
  check("method.gz", bad_method, "unknown compression method");
  Bytes trailing = gz;
  trailing.insert(trailing.end(), {1, 2, 3});
  check("trailing.gz", trailing, "has 3 bytes after its gzip stream that are not another gzip member");
  // Once inflated, the IDX checks still apply, naming the .gz file.
  Bytes short_idx = mnist_images(2);
  short_idx.pop_back();
  check("short-idx.gz", gzip(short_idx), "announces 2 images of 28x28 pixels (truncated)");

  const Bytes cifar = gzip(cifar_records(0, 2));
  const fs::path cut = dir.write("cut.bin", Bytes(cifar.begin(), cifar.end() - 100));
  const std::string m = invalid_argument_message([&] { (void)nn::cifar10_dataset(cut); });
  CHECK(m.find("CIFAR-10 file '" + cut.string() + "'") != std::string::npos);
  CHECK(m.find(truncated) != std::string::npos);
}

// A truncated download's last 4 bytes are not gzip's length field (ISIZE);
// trusted up to deflate's best ratio, they would make a cut-short
// Fashion-MNIST file allocate and zero gigabytes before it is found
// truncated (fuzz_nn_data_files's seed regression-gzip-trailer-claims-4gib).
TEST_CASE("nn data: a gzip file whose length field claims 4 GiB is refused without allocating for the claim") {
  TempDir dir;
  const fs::path labels = dir.write("labels", mnist_labels({1}));
  // 2 MiB of pixels in stored blocks: a bound of 1032 times the file
  // (deflate's best ratio) would still allow 2 GiB.
  Bytes gz = gzip(mnist_images(1, 1024, 2048));
  std::fill(gz.end() - 4, gz.end(), std::uint8_t{0xff});  // ISIZE: 4 GiB - 1
  const fs::path file = dir.write("claims-4gib.gz", gz);
  const long before = peak_rss_kib();
  const std::string m = invalid_argument_message([&] { (void)nn::mnist_dataset(file, labels); });
  CAPTURE(m);
  CHECK(m.find("MNIST image file '" + file.string() + "' is gzip-compressed but corrupt") != std::string::npos);
  CHECK(m.find("incorrect length check") != std::string::npos);
  CHECK(peak_rss_kib() - before < 256 * 1024);
}

TEST_CASE("nn data: a directory's splits: MNIST's train and t10k files, CIFAR-10's data_batch and test_batch") {
  TempDir dir;
  write_idx_dir(dir, 4, 3);
  const auto train = nn::mnist_dataset(dir.path(), nn::Split::train);
  const auto test = nn::mnist_dataset(dir.path(), nn::Split::test);
  CHECK(train->size() == 4);
  CHECK(test->size() == 3);
  std::vector<float> image(28 * 28);
  CHECK(train->sample(3, image) == 3);
  CHECK(image[10] == static_cast<float>(mnist_pixel(3, 10) / 255.0));
  CHECK(test->sample(2, image) == 7);
  // Both forms there: the .gz wins.
  dir.write("t10k-labels-idx1-ubyte.gz", gzip(mnist_labels({9, 9, 9})));
  CHECK(nn::mnist_dataset(dir.path(), nn::Split::test)->sample(2, image) == 9);

  TempDir train_only;
  train_only.write("train-images-idx3-ubyte", mnist_images(1));
  train_only.write("train-labels-idx1-ubyte", mnist_labels({0}));
  std::string m = invalid_argument_message([&] { (void)nn::mnist_dataset(train_only.path(), nn::Split::test); });
  CHECK(m.find(train_only.path().string()) != std::string::npos);
  CHECK(m.find("has no t10k-images-idx3-ubyte (nor t10k-images-idx3-ubyte.gz) for the test split") !=
        std::string::npos);
  m = invalid_argument_message([&] { (void)nn::mnist_dataset(train_only.path() / "nope", nn::Split::train); });
  CHECK(m.find("does not exist or is not a directory") != std::string::npos);

  TempDir cifar;
  cifar.write("data_batch_1.bin", cifar_records(0, 2));
  cifar.write("test_batch.bin", cifar_records(50, 3));
  CHECK(nn::cifar10_dataset(cifar.path(), nn::Split::train)->size() == 2);
  const auto cifar_test = nn::cifar10_dataset(cifar.path(), nn::Split::test);
  REQUIRE(cifar_test->size() == 3);
  std::vector<float> rgb(cifar_image);
  CHECK(cifar_test->sample(1, rgb) == (51 * 3) % 10);
  CHECK(rgb[5] == static_cast<float>(cifar_value(51, 5)));
  m = invalid_argument_message([&] { (void)nn::cifar10_dataset(train_only.path(), nn::Split::test); });
  CHECK(m.find("has no test_batch.bin") != std::string::npos);
}

TEST_CASE("nn data: Fashion-MNIST from Debian's dataset-fashion-mnist: 60,000 + 10,000 1x28x28 images, 10 classes") {
  const nn::Dataset& train = real_fashion_mnist(nn::Split::train);
  const nn::Dataset& test = real_fashion_mnist(nn::Split::test);
  CHECK(train.size() == 60'000);
  CHECK(test.size() == 10'000);
  for (const nn::Dataset* data : {&train, &test}) {
    CHECK(data->image_dims() == nn::Dims{1, 28, 28});
    CHECK(data->classes() == 10);
  }
  // Balanced: 6,000 of each class for training, 1,000 for testing.
  std::vector<float> image(28 * 28);
  for (const auto& [data, per_class] : {std::pair{&train, 6'000}, std::pair{&test, 1'000}}) {
    std::vector<int> histogram(10, 0);
    for (std::int64_t i = 0; i < data->size(); ++i) ++histogram.at(static_cast<std::size_t>(data->sample(i, image)));
    CHECK(histogram == std::vector<int>(10, per_class));
  }
  // The files' first labels (ankle boot; then the test set's ankle boot, pullover, trouser).
  CHECK(train.sample(0, image) == 9);
  CHECK(test.sample(0, image) == 9);
  CHECK(test.sample(1, image) == 2);
  CHECK(test.sample(2, image) == 1);
}

TEST_CASE("nn data: the Fashion-MNIST normalisation constants are its training set's mean and std (4 decimals)") {
  // Undo the normalisation, x = v * std + mean, to recover the pixels in
  // [0, 1] and measure them: if the constants or their use were wrong, the
  // recovered pixels would not be bytes / 255 (checked on the way) and
  // their mean and std would not round to the constants.
  const nn::Dataset& train = real_fashion_mnist(nn::Split::train);
  std::vector<float> image(28 * 28);
  double sum = 0;
  double squares = 0;
  double worst_off_grid = 0;  // how far a recovered pixel is from k / 255
  for (std::int64_t i = 0; i < train.size(); ++i) {
    (void)train.sample(i, image);
    for (float v : image) {
      const double x = v * nn::fashion_mnist_std + nn::fashion_mnist_mean;
      worst_off_grid = std::max(worst_off_grid, std::abs(x * 255 - std::round(x * 255)));
      sum += x;
      squares += x * x;
    }
  }
  const double n = 60'000.0 * 28 * 28;
  const double mean = sum / n;
  const double stddev = std::sqrt(squares / n - mean * mean);
  CHECK(worst_off_grid < 1e-3);
  CHECK(std::round(mean * 1e4) == 2860);    // 0.286040...
  CHECK(std::round(stddev * 1e4) == 3530);  // 0.353024...
}

TEST_CASE("nn data: missing Fashion-MNIST files are named, with how to install them or where to point") {
  {
    const test::ScopedEnv unset(fashion_variable, std::nullopt);
    CHECK(nn::default_fashion_mnist_dir() == fs::path("/usr/share/datasets/fashion-mnist"));
  }
  {
    const test::ScopedEnv empty_value(fashion_variable, "");
    CHECK(nn::default_fashion_mnist_dir() == fs::path("/usr/share/datasets/fashion-mnist"));
  }
  TempDir empty;
  const test::ScopedEnv pointed(fashion_variable, empty.path().string());
  CHECK(nn::default_fashion_mnist_dir() == empty.path());
  for (const auto& [split, file] : {std::pair{nn::Split::train, "train-images-idx3-ubyte.gz"},
                                    std::pair{nn::Split::test, "t10k-images-idx3-ubyte.gz"}}) {
    // Copied: Clang before 16 cannot capture a structured binding.
    const std::string m = invalid_argument_message([&, split = split] { (void)nn::fashion_mnist_dataset(split); });
    CAPTURE(m);
    CHECK(m.find("'" + (empty.path() / file).string() + "' does not exist") != std::string::npos);
    CHECK(m.find(fashion_remedy) != std::string::npos);
  }
  CHECK(invalid_argument_message([&] {
          (void)nn::open_data("fashion-mnist", {1, 28, 28}, 10, 1);
        }).find(fashion_remedy) != std::string::npos);
  // Images there, labels not: the labels are named.
  empty.write("train-images-idx3-ubyte.gz", gzip(mnist_images(1)));
  const std::string m = invalid_argument_message([&] { (void)nn::fashion_mnist_dataset(nn::Split::train); });
  CHECK(m.find("training labels are missing: '" + (empty.path() / "train-labels-idx1-ubyte.gz").string()) !=
        std::string::npos);
}

TEST_CASE("nn data: open_data gives both splits of every --data form, shaped by the files, not the model") {
  const nn::Dims model_dims = {3, 8, 8};  // what the model would take: file data sets ignore it
  std::vector<float> a(3 * 8 * 8);
  std::vector<float> b(a.size());

  SUBCASE("synthetic: the test split is other samples, the same for the same seed") {
    const nn::DataSplits splits = nn::open_data("synthetic", model_dims, 5, 42);
    REQUIRE(splits.test != nullptr);
    CHECK(splits.test->image_dims() == model_dims);
    CHECK(splits.test->classes() == 5);
    (void)splits.train->sample(0, a);
    (void)nn::synthetic_dataset(model_dims, 5, 42)->sample(0, b);
    CHECK(a == b);
    (void)splits.test->sample(0, b);
    CHECK(a != b);
    (void)nn::open_data("synthetic", model_dims, 5, 42).test->sample(0, a);
    CHECK(a == b);
    (void)nn::open_data("synthetic", model_dims, 5, 43).test->sample(0, a);
    CHECK(a != b);
  }
  SUBCASE("fashion-mnist:DIR and the default directory, normalised with Fashion-MNIST's constants") {
    TempDir dir;
    write_idx_dir(dir, 2, 3);
    const test::ScopedEnv pointed(fashion_variable, dir.path().string());
    for (const std::string& spec : {"fashion-mnist:" + dir.path().string(), std::string("fashion-mnist")}) {
      CAPTURE(spec);
      const nn::DataSplits splits = nn::open_data(spec, model_dims, 100, 1);
      REQUIRE(splits.test != nullptr);
      CHECK(splits.train->size() == 2);
      CHECK(splits.test->size() == 3);
      CHECK(splits.train->image_dims() == nn::Dims{1, 28, 28});
      CHECK(splits.train->classes() == 10);
      std::vector<float> image(28 * 28);
      (void)splits.train->sample(1, image);
      CHECK(image[7] == static_cast<float>((mnist_pixel(1, 7) / 255.0 - 0.2860) / 0.3530));
    }
  }
  SUBCASE("mnist:DIR, with or without its t10k files; mnist:IMAGES,LABELS without a test split") {
    TempDir dir;
    write_idx_dir(dir, 2, 3);
    nn::DataSplits splits = nn::open_data("mnist:" + dir.path().string(), model_dims, 2, 1);
    CHECK(splits.train->size() == 2);
    REQUIRE(splits.test != nullptr);
    CHECK(splits.test->size() == 3);
    fs::remove(dir.path() / "t10k-labels-idx1-ubyte");
    // Half a test split is a mistake: the missing file is named.
    CHECK(invalid_argument_message([&] {
            (void)nn::open_data("mnist:" + dir.path().string(), model_dims, 2, 1);
          }).find("has no t10k-labels-idx1-ubyte") != std::string::npos);
    fs::remove(dir.path() / "t10k-images-idx3-ubyte");
    CHECK(nn::open_data("mnist:" + dir.path().string(), model_dims, 2, 1).test == nullptr);
    const fs::path images = dir.write("images", mnist_images(2));
    const fs::path labels = dir.write("labels", mnist_labels({4, 5}));
    splits = nn::open_data("mnist:" + images.string() + "," + labels.string(), model_dims, 2, 1);
    CHECK(splits.train->size() == 2);
    CHECK(splits.test == nullptr);
    const std::string m =
        invalid_argument_message([&] { (void)nn::open_data("mnist:" + images.string(), model_dims, 2, 1); });
    CHECK(m.find("names neither a directory nor a pair of files; use mnist:DIR") != std::string::npos);
    CHECK(m.find("mnist:IMAGES,LABELS") != std::string::npos);
  }
  SUBCASE("cifar10:DIR with test_batch.bin if there; cifar10:FILE without a test split") {
    TempDir dir;
    const fs::path file = dir.write("data_batch_1.bin", cifar_records(0, 2));
    nn::DataSplits splits = nn::open_data("cifar10:" + dir.path().string(), model_dims, 2, 1);
    CHECK(splits.train->size() == 2);
    CHECK(splits.train->image_dims() == nn::Dims{3, 32, 32});
    CHECK(splits.test == nullptr);
    dir.write("test_batch.bin.gz", gzip(cifar_records(10, 4)));
    splits = nn::open_data("cifar10:" + dir.path().string(), model_dims, 2, 1);
    REQUIRE(splits.test != nullptr);
    CHECK(splits.test->size() == 4);
    splits = nn::open_data("cifar10:" + file.string(), model_dims, 2, 1);
    CHECK(splits.train->size() == 2);
    CHECK(splits.test == nullptr);
  }
  SUBCASE("an unknown spec lists every form") {
    const std::string m = invalid_argument_message([&] { (void)nn::open_data("imagenet", model_dims, 10, 1); });
    CHECK(m.find("unknown dataset \"imagenet\"") != std::string::npos);
    for (const char* form : {"\"synthetic\"", "\"fashion-mnist\"", "\"fashion-mnist:DIR\"", "\"mnist:DIR\"",
                             "\"mnist:IMAGES,LABELS\"", "\"cifar10:DIR\"", "\"cifar10:FILE\""}) {
      CHECK_MESSAGE(m.find(form) != std::string::npos, form);
    }
    CHECK(invalid_argument_message([&] {
            (void)nn::open_data("fashion-mnist:", model_dims, 10, 1);
          }).find("unknown dataset") != std::string::npos);
  }
}

TEST_CASE("nn data: open_dataset is open_data's training split; a file data set's shape is its own") {
  TempDir dir;
  const fs::path cifar = dir.write("data_batch_1.bin", cifar_records(0, 2));
  const fs::path images = dir.write("images", mnist_images(2, 5, 6));
  const fs::path labels = dir.write("labels", mnist_labels({4, 5}));

  auto synthetic = nn::open_dataset("synthetic", {3, 16, 16}, 5, 1);
  CHECK(synthetic->image_dims() == nn::Dims{3, 16, 16});
  CHECK(synthetic->classes() == 5);
  // No check against the model's dims and classes: the model is built
  // from the data set.
  const auto big_model = nn::open_dataset("cifar10:" + cifar.string(), {3, 224, 224}, 5, 1);
  CHECK(big_model->size() == 2);
  CHECK(big_model->image_dims() == nn::Dims{3, 32, 32});
  CHECK(big_model->classes() == 10);
  CHECK(nn::open_dataset("cifar10:" + dir.path().string(), {3, 32, 32}, 100, 1)->size() == 2);
  const auto mnist = nn::open_dataset("mnist:" + images.string() + "," + labels.string(), {1, 28, 28}, 2, 1);
  CHECK(mnist->image_dims() == nn::Dims{1, 5, 6});

  const std::string m = invalid_argument_message([&] { (void)nn::open_dataset("imagenet", {3, 32, 32}, 10, 1); });
  CHECK(m.find("unknown dataset \"imagenet\"") != std::string::npos);
  CHECK(m.find("cifar10:DIR") != std::string::npos);
  const fs::path missing = dir.path() / "x";
  CHECK(invalid_argument_message([&] {
          (void)nn::open_dataset("cifar10:" + missing.string(), {3, 32, 32}, 10, 1);
        }).find(missing.string()) != std::string::npos);
}
