// nn data: CIFAR-10 and MNIST files written here and read back (values,
// labels, order, wrap-around), the synthetic dataset's determinism and
// distribution, open_dataset. Malformed files are in nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
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
using test::cifar_image, test::cifar_pixel, test::cifar_records, test::invalid_argument_message,
    test::mnist_images, test::mnist_labels, test::mnist_pixel, test::TempDir;

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
      for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{1024}, std::size_t{2500},
                            cifar_image - 1}) {
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
  CHECK(invalid_argument_message([&] { data->next_batch(std::span(x5).first(100), y5); })
            .find("a batch of N images needs N labels") != std::string::npos);
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

TEST_CASE("nn data: open_dataset parses the --data flag and checks the model's image dims and classes") {
  TempDir dir;
  const fs::path cifar = dir.write("data_batch_1.bin", cifar_records(0, 2));
  const fs::path images = dir.write("images", mnist_images(2));
  const fs::path labels = dir.write("labels", mnist_labels({4, 5}));

  auto synthetic = nn::open_dataset("synthetic", {3, 16, 16}, 5, 1);
  CHECK(synthetic->image_dims() == nn::Dims{3, 16, 16});
  CHECK(synthetic->classes() == 5);
  CHECK(nn::open_dataset("cifar10:" + cifar.string(), {3, 32, 32}, 10, 1)->size() == 2);
  CHECK(nn::open_dataset("cifar10:" + dir.path().string(), {3, 32, 32}, 100, 1)->size() == 2);
  CHECK(nn::open_dataset("mnist:" + images.string() + "," + labels.string(), {1, 28, 28}, 10, 1)->size() == 2);

  std::string m = invalid_argument_message([&] { (void)nn::open_dataset("imagenet", {3, 32, 32}, 10, 1); });
  CHECK(m.find("unknown dataset \"imagenet\"") != std::string::npos);
  CHECK(m.find("cifar10:PATH") != std::string::npos);
  m = invalid_argument_message([&] { (void)nn::open_dataset("mnist:" + images.string(), {1, 28, 28}, 10, 1); });
  CHECK(m.find("mnist:IMAGES,LABELS") != std::string::npos);
  m = invalid_argument_message([&] { (void)nn::open_dataset("cifar10:" + cifar.string(), {3, 224, 224}, 1000, 1); });
  CHECK(m.find("has 3x32x32 images but the model takes 3x224x224") != std::string::npos);
  m = invalid_argument_message([&] { (void)nn::open_dataset("cifar10:" + cifar.string(), {3, 32, 32}, 5, 1); });
  CHECK(m.find("has 10 classes but the model only 5") != std::string::npos);
  const fs::path missing = dir.path() / "x";
  m = invalid_argument_message([&] { (void)nn::open_dataset("cifar10:" + missing.string(), {3, 32, 32}, 10, 1); });
  CHECK(m.find(missing.string()) != std::string::npos);
}
