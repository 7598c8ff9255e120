// sampler_order: the training order and augmentation of nn::BatchSampler,
// for bench/pytorch_reference.py --check-order BINARY, which must reproduce
// both (its ViT trains on the same batches as train_cnn). Prints, for each
// epoch, the indices of the samples of its whole batches (drop_last, as fit()
// trains) in the order they are trained on:
//
//   sampler_order --seed 1 --samples 60000 --batch 64 --epochs 2
//   epoch 0: 42446 45045 ...
//
// The order depends on the seed, the number of samples and the epoch only
// (the batch size cuts it into batches), so a stand-in dataset whose sample
// i has the label i gives it without reading any data.
//
// With --crop-padding P and/or --flip, a second line per epoch holds the
// pixels of every trained sample after augmentation, sample after sample,
// row by row. Every stand-in image is 1 x S x S (--image-size) with pixel
// (y, x) = y S + x + 1, so a 0 is padding and any other value says which
// source pixel landed there:
//
//   sampler_order --samples 2000 --batch 128 --crop-padding 2 --flip --image-size 28
//   epoch 0: 1302 ...
//   epoch 0 pixels: 0 0 28 27 ...
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/batch_sampler.hpp"
#include "cachedarrays/nn/data.hpp"

namespace {

namespace nn = cachedarrays::nn;

// Sample i: label i, and the 1 x side x side picture of its pixel positions.
class IndexDataset final : public nn::Dataset {
 public:
  IndexDataset(std::int64_t size, std::int64_t side) : size_(size), side_(side) {}
  [[nodiscard]] std::int64_t size() const override { return size_; }
  [[nodiscard]] nn::Dims image_dims() const override { return {1, side_, side_}; }
  [[nodiscard]] std::int64_t classes() const override { return size_; }
  std::int64_t sample(std::int64_t index, std::span<float> image) const override {
    for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i + 1);
    return index;
  }
  void next_batch(std::span<float>, std::span<float>) override {
    throw cachedarrays::invalid_argument("sampler_order: next_batch is not used");
  }

 private:
  std::int64_t size_;
  std::int64_t side_;
};

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  std::int64_t samples = 60000;
  std::int64_t batch = 64;
  std::int64_t epochs = 1;
  int crop_padding = 0;
  bool flip = false;
  std::int64_t side = 1;
  CLI::App app{
      "nn::BatchSampler's training order (the sample indices of each epoch's whole batches) and "
      "augmentation"};
  app.add_option("--seed", seed, "the sampler's seed (train_cnn --seed)")->capture_default_str();
  app.add_option("--samples", samples, "samples in an epoch (the training set, or --train-limit)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  app.add_option("--batch", batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs to print, from epoch 0")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--crop-padding", crop_padding, "augmentation, as train_cnn's: random crop after padding by N")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--flip", flip, "augmentation, as train_cnn's: mirror left-right with probability 1/2");
  app.add_option("--image-size", side,
                 "side of the stand-in images (the pixels line needs it at least as large "
                 "as --crop-padding)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
  CLI11_PARSE(app, argc, argv);
  try {
    const bool augmenting = crop_padding > 0 || flip;
    const IndexDataset data(samples, side);
    nn::BatchSampler sampler(data,
                             {.batch = batch, .seed = seed, .crop_padding = crop_padding, .horizontal_flip = flip});
    std::vector<float> images(static_cast<std::size_t>(batch * side * side));
    std::vector<float> labels(static_cast<std::size_t>(batch));
    std::vector<float> pixels;
    for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
      sampler.start_epoch(epoch);
      pixels.clear();
      fmt::print("epoch {}:", epoch);
      while (sampler.next(images, labels)) {
        for (const float index : labels) fmt::print(" {}", static_cast<std::int64_t>(index));
        if (augmenting) pixels.insert(pixels.end(), images.begin(), images.end());
      }
      fmt::print("\n");
      if (augmenting) {
        fmt::print("epoch {} pixels:", epoch);
        for (const float p : pixels) fmt::print(" {}", static_cast<std::int64_t>(p));
        fmt::print("\n");
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "sampler_order: {}\n", e.what());
    return 1;
  }
  return 0;
}
