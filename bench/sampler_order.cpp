// sampler_order: the training order of nn::BatchSampler, for
// bench/pytorch_reference.py --check-order BINARY, which must reproduce it
// (its ViT trains on the same batches as train_cnn). Prints, for each epoch,
// the indices of the samples of its whole batches (drop_last, as fit()
// trains) in the order they are trained on:
//
//   sampler_order --seed 1 --samples 60000 --batch 64 --epochs 2
//   epoch 0: 42446 45045 ...
//
// The order depends on the seed, the number of samples and the epoch only
// (the batch size cuts it into batches), so a stand-in dataset whose sample
// i is the number i gives it without reading any data.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/batch_sampler.hpp"
#include "cachedarrays/nn/data.hpp"

namespace {

namespace nn = cachedarrays::nn;

// Sample i: one pixel holding i (exact in float below 2^24), label 0.
class IndexDataset final : public nn::Dataset {
 public:
  explicit IndexDataset(std::int64_t size) : size_(size) {}
  [[nodiscard]] std::int64_t size() const override { return size_; }
  [[nodiscard]] nn::Dims image_dims() const override { return {1, 1, 1}; }
  [[nodiscard]] std::int64_t classes() const override { return 1; }
  std::int64_t sample(std::int64_t index, std::span<float> image) const override {
    image[0] = static_cast<float>(index);
    return 0;
  }
  void next_batch(std::span<float>, std::span<float>) override {
    throw cachedarrays::invalid_argument("sampler_order: next_batch is not used");
  }

 private:
  std::int64_t size_;
};

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  std::int64_t samples = 60000;
  std::int64_t batch = 64;
  std::int64_t epochs = 1;
  CLI::App app{"nn::BatchSampler's training order: the sample indices of each epoch's whole batches"};
  app.add_option("--seed", seed, "the sampler's seed (train_cnn --seed)")->capture_default_str();
  app.add_option("--samples", samples, "samples in an epoch (the training set, or --train-limit)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  app.add_option("--batch", batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs to print, from epoch 0")->capture_default_str()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const IndexDataset data(samples);
    nn::BatchSampler sampler(data, {.batch = batch, .seed = seed});
    std::vector<float> images(static_cast<std::size_t>(batch));
    std::vector<float> labels(static_cast<std::size_t>(batch));
    for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
      sampler.start_epoch(epoch);
      fmt::print("epoch {}:", epoch);
      while (sampler.next(images, labels)) {
        for (const float index : images) fmt::print(" {}", static_cast<std::int64_t>(index));
      }
      fmt::print("\n");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "sampler_order: {}\n", e.what());
    return 1;
  }
  return 0;
}
