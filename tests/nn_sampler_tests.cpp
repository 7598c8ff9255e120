// BatchSampler: epochs that visit every sample once in an order fixed by
// (seed, epoch), padded or dropped last batches, resuming with seek, and
// random crop and flip checked against a pad-crop-flip model written here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/batch_sampler.hpp"
#include "cachedarrays/nn/data.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using test::invalid_argument_message;

// Sample i has label i and pixels i * 1000 + p + 1 (p the pixel's place):
// all distinct, none zero, exact in float, so any batch says which samples
// it holds and where each of their pixels went.
class CountingDataset final : public nn::Dataset {
 public:
  CountingDataset(std::int64_t size, nn::Dims dims) : size_(size), dims_(std::move(dims)) {}
  [[nodiscard]] std::int64_t size() const override { return size_; }
  [[nodiscard]] nn::Dims image_dims() const override { return dims_; }
  [[nodiscard]] std::int64_t classes() const override { return size_; }
  // Called from the sampler's worker threads: throws rather than asserts
  // (the exception reaches the test through tbb::parallel_for).
  std::int64_t sample(std::int64_t index, std::span<float> image) const override {
    if (index < 0 || index >= size_ || image.size() != test::count(dims_)) {
      throw std::logic_error("the sampler asked for sample " + std::to_string(index) + " of " + std::to_string(size_) +
                             " with room for " + std::to_string(image.size()) + " floats");
    }
    for (std::size_t p = 0; p < image.size(); ++p)
      image[p] = static_cast<float>(index * 1000 + 1 + static_cast<std::int64_t>(p));
    return index;
  }
  void next_batch(std::span<float>, std::span<float>) override { FAIL("the sampler must not call next_batch"); }

 private:
  std::int64_t size_;
  nn::Dims dims_;
};

std::vector<float> sample_image(const nn::Dataset& data, std::int64_t index) {
  std::vector<float> image(test::count(data.image_dims()));
  (void)data.sample(index, image);
  return image;
}

struct Batch {
  std::vector<float> images;
  std::vector<float> labels;
  std::int64_t valid = 0;
  bool operator==(const Batch&) const = default;
};

// The rest of the sampler's current epoch, batch by batch.
std::vector<Batch> rest_of_epoch(nn::BatchSampler& sampler) {
  const std::int64_t batch = sampler.options().batch;
  std::vector<Batch> batches;
  Batch b{std::vector<float>(static_cast<std::size_t>(batch) * test::count(sampler.dataset().image_dims())),
          std::vector<float>(static_cast<std::size_t>(batch)), 0};
  while (sampler.next(b.images, b.labels, &b.valid)) batches.push_back(b);
  return batches;
}

// The samples one epoch visits, in order (real ones only), after checking
// that every image is its sample unchanged (no augmentation).
std::vector<std::int64_t> epoch_order(nn::BatchSampler& sampler, std::int64_t epoch) {
  sampler.start_epoch(epoch);
  const std::size_t per_image = test::count(sampler.dataset().image_dims());
  std::vector<std::int64_t> order;
  for (const Batch& b : rest_of_epoch(sampler)) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(b.valid); ++i) {
      const auto index = static_cast<std::int64_t>(b.labels[i]);
      const std::vector<float> expected = sample_image(sampler.dataset(), index);
      REQUIRE(
          std::equal(expected.begin(), expected.end(), b.images.begin() + static_cast<std::ptrdiff_t>(i * per_image)));
      order.push_back(index);
    }
  }
  return order;
}

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The model of augmentation: `original` padded with p zeros on each side,
// cut back to H x W at (top, left), then mirrored left-right if `flip`.
std::vector<float> pad_crop_flip(const std::vector<float>& original, const nn::Dims& chw, std::int64_t p,
                                 std::int64_t top, std::int64_t left, bool flip) {
  const std::int64_t c_n = chw[0], h = chw[1], w = chw[2];
  const std::int64_t ph = h + 2 * p, pw = w + 2 * p;
  std::vector<float> padded(static_cast<std::size_t>(c_n * ph * pw), 0.0f);
  for (std::int64_t c = 0; c < c_n; ++c)
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x)
        padded[static_cast<std::size_t>((c * ph + y + p) * pw + x + p)] =
            original[static_cast<std::size_t>((c * h + y) * w + x)];
  std::vector<float> out(original.size());
  for (std::int64_t c = 0; c < c_n; ++c)
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x)
        out[static_cast<std::size_t>((c * h + y) * w + x)] =
            padded[static_cast<std::size_t>((c * ph + y + top) * pw + left + (flip ? w - 1 - x : x))];
  return out;
}

struct Drawn {
  std::int64_t top;
  std::int64_t left;
  bool flip;
  auto operator<=>(const Drawn&) const = default;
};

// Every augmented image of one epoch, matched against the model: each must
// be exactly one (top, left, flip) of its sample. Returns what was drawn
// for each sample.
std::map<std::int64_t, Drawn> check_epoch_against_model(nn::BatchSampler& sampler, std::int64_t epoch) {
  const nn::Dataset& data = sampler.dataset();
  const std::int64_t p = sampler.options().crop_padding;
  const std::size_t per_image = test::count(data.image_dims());
  sampler.start_epoch(epoch);
  std::map<std::int64_t, Drawn> drawn;
  for (const Batch& b : rest_of_epoch(sampler)) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(b.valid); ++i) {
      const auto index = static_cast<std::int64_t>(b.labels[i]);
      CAPTURE(index);
      const std::vector<float> original = sample_image(data, index);
      const std::vector<float> got(b.images.begin() + static_cast<std::ptrdiff_t>(i * per_image),
                                   b.images.begin() + static_cast<std::ptrdiff_t>((i + 1) * per_image));
      std::vector<Drawn> matches;
      for (std::int64_t top = 0; top <= 2 * p; ++top)
        for (std::int64_t left = 0; left <= 2 * p; ++left)
          for (bool flip : {false, true}) {
            if (flip && !sampler.options().horizontal_flip) continue;
            if (got == pad_crop_flip(original, data.image_dims(), p, top, left, flip))
              matches.push_back({top, left, flip});
          }
      REQUIRE(matches.size() == 1);
      // Zeros exactly where the crop window leaves the image: the border.
      const std::int64_t h = data.image_dims()[1], w = data.image_dims()[2];
      const std::int64_t inside = (h - std::abs(matches[0].top - p)) * (w - std::abs(matches[0].left - p));
      CHECK(std::count(got.begin(), got.end(), 0.0f) == data.image_dims()[0] * (h * w - inside));
      drawn[index] = matches[0];
    }
  }
  return drawn;
}

}  // namespace

TEST_CASE("nn sampler: an epoch visits every sample exactly once, in an order fixed by (seed, epoch) alone") {
  const CountingDataset data(103, {1, 2, 3});
  nn::BatchSampler sampler(data, {.batch = 10, .drop_last = false, .seed = 7});
  CHECK(sampler.samples_per_epoch() == 103);
  CHECK(sampler.batches_per_epoch() == 11);
  const std::vector<std::int64_t> e0 = epoch_order(sampler, 0);
  const std::vector<std::int64_t> e1 = epoch_order(sampler, 1);
  CHECK(sorted(e0) == iota(103));
  CHECK(sorted(e1) == iota(103));
  CHECK(e0 != iota(103));
  CHECK(e0 != e1);
  // A fresh sampler, going straight to epoch 1: the same order, whatever came before.
  nn::BatchSampler again(data, {.batch = 10, .drop_last = false, .seed = 7});
  CHECK(epoch_order(again, 1) == e1);
  CHECK(epoch_order(again, 0) == e0);
  // The batch size cuts the same order differently; another seed changes it.
  nn::BatchSampler by_seven(data, {.batch = 7, .drop_last = false, .seed = 7});
  CHECK(epoch_order(by_seven, 1) == e1);
  nn::BatchSampler other_seed(data, {.batch = 10, .drop_last = false, .seed = 8});
  CHECK(epoch_order(other_seed, 1) != e1);
  // Pinned: resumed runs depend on these orders never changing. The values
  // come from a separate Python rendering of the rule: key = splitmix64
  // stream of mix64(seed ^ "sampler"), Fisher-Yates from the back with
  // j = stream_at(epoch's key, i) % (i + 1).
  CHECK(std::vector<std::int64_t>(e0.begin(), e0.begin() + 8) ==
        std::vector<std::int64_t>{89, 25, 45, 74, 97, 54, 35, 64});
  CHECK(std::vector<std::int64_t>(e1.begin(), e1.begin() + 8) ==
        std::vector<std::int64_t>{35, 15, 89, 61, 23, 72, 76, 49});

  nn::BatchSampler in_order(data, {.batch = 10, .shuffle = false, .drop_last = false});
  CHECK(epoch_order(in_order, 0) == iota(103));
  CHECK(epoch_order(in_order, 5) == iota(103));
}

TEST_CASE("nn sampler: the last batch is dropped, or padded with its own samples and its real count given") {
  const CountingDataset data(23, {1, 2, 2});
  nn::BatchSampler dropping(data, {.batch = 5, .seed = 3});
  CHECK(dropping.batches_per_epoch() == 4);
  std::set<std::int64_t> seen_over_epochs;
  for (std::int64_t epoch = 0; epoch < 6; ++epoch) {
    const std::vector<std::int64_t> order = epoch_order(dropping, epoch);
    CHECK(order.size() == 20);
    CHECK(std::set<std::int64_t>(order.begin(), order.end()).size() == 20);
    seen_over_epochs.insert(order.begin(), order.end());
  }
  CHECK(seen_over_epochs.size() == 23);  // a different remainder is left out each epoch

  nn::BatchSampler padding(data, {.batch = 5, .drop_last = false, .seed = 3});
  CHECK(padding.batches_per_epoch() == 5);
  const std::vector<Batch> batches = rest_of_epoch(padding);
  REQUIRE(batches.size() == 5);
  for (std::size_t b = 0; b < 4; ++b) CHECK(batches[b].valid == 5);
  const Batch& last = batches.back();
  CHECK(last.valid == 3);
  const std::size_t per_image = 4;
  for (std::size_t slot = 3; slot < 5; ++slot) {
    CAPTURE(slot);
    CHECK(last.labels[slot] == last.labels[slot % 3]);
    CHECK(std::equal(last.images.begin() + static_cast<std::ptrdiff_t>(slot * per_image),
                     last.images.begin() + static_cast<std::ptrdiff_t>((slot + 1) * per_image),
                     last.images.begin() + static_cast<std::ptrdiff_t>((slot % 3) * per_image)));
  }
  std::vector<float> x(5 * per_image);
  std::vector<float> y(5);
  std::int64_t valid = -1;
  CHECK_FALSE(padding.next(x, y, &valid));  // the epoch is over, nothing touched
  CHECK(valid == -1);
  CHECK(padding.position() == 5);

  // limit: only the first samples, all of them if the dataset is smaller.
  nn::BatchSampler limited(data, {.batch = 4, .drop_last = false, .limit = 10});
  CHECK(limited.batches_per_epoch() == 3);
  CHECK(sorted(epoch_order(limited, 0)) == iota(10));
  nn::BatchSampler beyond(data, {.batch = 4, .limit = 1000});
  CHECK(beyond.samples_per_epoch() == 23);
  // The endless synthetic set is usable with a limit.
  const auto synthetic = nn::synthetic_dataset({1, 4, 4}, 3, 1);
  nn::BatchSampler synthetic_epochs(*synthetic, {.batch = 8, .limit = 64});
  CHECK(synthetic_epochs.batches_per_epoch() == 8);
}

TEST_CASE("nn sampler: seek resumes mid-epoch with the batches of the uninterrupted run, augmentation included") {
  const CountingDataset data(50, {2, 4, 5});
  const nn::BatchSamplerOptions options{
      .batch = 6, .drop_last = false, .seed = 11, .crop_padding = 1, .horizontal_flip = true};
  nn::BatchSampler run(data, options);
  std::vector<std::vector<Batch>> epochs;
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    run.start_epoch(epoch);
    CHECK(run.epoch() == epoch);
    epochs.push_back(rest_of_epoch(run));
    CHECK(run.position() == run.batches_per_epoch());
  }
  REQUIRE(epochs[2].size() == 9);
  CHECK(epochs[1] != epochs[2]);

  nn::BatchSampler resumed(data, options);
  resumed.seek(2, 4);
  CHECK(resumed.epoch() == 2);
  CHECK(resumed.position() == 4);
  const std::vector<Batch> rest = rest_of_epoch(resumed);
  CHECK(rest == std::vector<Batch>(epochs[2].begin() + 4, epochs[2].end()));
  resumed.seek(1, 0);
  CHECK(rest_of_epoch(resumed) == epochs[1]);
  resumed.seek(0, resumed.batches_per_epoch());  // at the end: nothing left
  CHECK(rest_of_epoch(resumed).empty());
}

TEST_CASE("nn sampler: horizontal flip mirrors about half the images, each keeping its pixels") {
  const CountingDataset data(400, {2, 3, 4});
  nn::BatchSampler sampler(data, {.batch = 16, .seed = 5, .horizontal_flip = true});
  const std::map<std::int64_t, Drawn> drawn =
      check_epoch_against_model(sampler, 0);  // identity or mirror, nothing else
  REQUIRE(drawn.size() == 400);
  const auto flipped = std::count_if(drawn.begin(), drawn.end(), [](const auto& d) { return d.second.flip; });
  CHECK(flipped > 160);
  CHECK(flipped < 240);
  // The same multiset of pixels (a mirror moves, never changes, a value).
  std::vector<float> x(16 * 24);
  std::vector<float> y(16);
  sampler.start_epoch(1);
  REQUIRE(sampler.next(x, y));
  for (std::size_t i = 0; i < 16; ++i) {
    std::vector<float> got(x.begin() + static_cast<std::ptrdiff_t>(i * 24),
                           x.begin() + static_cast<std::ptrdiff_t>((i + 1) * 24));
    std::vector<float> original = sample_image(data, static_cast<std::int64_t>(y[i]));
    std::sort(got.begin(), got.end());
    std::sort(original.begin(), original.end());
    CHECK(got == original);
  }
  // Another epoch draws again: some samples flip the other way.
  const std::map<std::int64_t, Drawn> next_epoch = check_epoch_against_model(sampler, 1);
  CHECK(next_epoch != drawn);
  CHECK(check_epoch_against_model(sampler, 0) == drawn);
}

TEST_CASE("nn sampler: random crop shifts by up to crop_padding, zeros only in the padded border") {
  // Not square, so that rows and columns cannot be confused.
  const CountingDataset data(300, {2, 5, 7});
  nn::BatchSampler sampler(data, {.batch = 32, .seed = 9, .crop_padding = 1});
  const std::map<std::int64_t, Drawn> drawn = check_epoch_against_model(sampler, 0);
  std::set<std::pair<std::int64_t, std::int64_t>> offsets;
  for (const auto& [index, d] : drawn) {
    CHECK_FALSE(d.flip);
    offsets.insert({d.top, d.left});
  }
  CHECK(offsets.size() == 9);  // every (top, left) in [0, 2]^2 occurs
  CHECK(check_epoch_against_model(sampler, 0) == drawn);
  CHECK(check_epoch_against_model(sampler, 1) != drawn);

  // Crop and flip together, with a padding of 2.
  nn::BatchSampler both(data, {.batch = 32, .seed = 9, .crop_padding = 2, .horizontal_flip = true});
  const std::map<std::int64_t, Drawn> combined = check_epoch_against_model(both, 3);
  CHECK(
      std::any_of(combined.begin(), combined.end(), [](const auto& d) { return d.second.flip && d.second.top != 2; }));

  // Without augmentation (a test sampler) the images are the samples.
  nn::BatchSampler plain(data, {.batch = 32, .seed = 9});
  CHECK(sorted(epoch_order(plain, 0)).size() == 288);
}

TEST_CASE("nn sampler: bad options and spans are refused, saying what is allowed") {
  const CountingDataset data(10, {1, 4, 4});
  const auto message = [&](const nn::BatchSamplerOptions& o) {
    return invalid_argument_message([&] { nn::BatchSampler s(data, o); });
  };
  CHECK(message({.batch = 0}).find("batch is 0; it must be at least 1") != std::string::npos);
  CHECK(message({.batch = 2, .limit = -1}).find("limit is -1") != std::string::npos);
  CHECK(message({.batch = 2, .crop_padding = 5})
            .find("crop_padding is 5; for [1, 4, 4] images it must be 0 (no crop) to 4") != std::string::npos);
  CHECK(message({.batch = 2, .crop_padding = -1}).find("crop_padding is -1") != std::string::npos);
  CHECK(message({.batch = 11})
            .find("an epoch of 10 samples holds no whole batch of 11; use a smaller batch or "
                  "drop_last = false") != std::string::npos);
  CHECK(message({.batch = 4, .limit = 3}).find("an epoch of 3 samples") != std::string::npos);
  const auto synthetic = nn::synthetic_dataset({1, 4, 4}, 3, 1);
  CHECK(invalid_argument_message([&] {
          nn::BatchSampler s(*synthetic, {.batch = 2});
        }).find("the dataset is endless (synthetic); set limit") != std::string::npos);

  nn::BatchSampler sampler(data, {.batch = 2});
  std::vector<float> x(2 * 16);
  std::vector<float> y(2);
  CHECK(invalid_argument_message([&] {
          (void)sampler.next(std::span(x).first(16), y);
        }).find("a batch of 2 [1, 4, 4] images needs 32 image floats and 2 labels") != std::string::npos);
  CHECK(invalid_argument_message([&] { (void)sampler.next(x, std::span(y).first(1)); }).find("1 labels") !=
        std::string::npos);
  CHECK(invalid_argument_message([&] {
          sampler.seek(0, 6);
        }).find("cannot seek to batch 6; an epoch has batches 0 to 4") != std::string::npos);
  CHECK(invalid_argument_message([&] { sampler.start_epoch(-1); }).find("epoch -1 is negative") != std::string::npos);
  CHECK_THROWS_AS(sampler.seek(-1, 0), ca::invalid_argument);
}
