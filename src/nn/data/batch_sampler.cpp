// Epochs over a dataset: a permutation per (seed, epoch), batches cut from
// it and filled in parallel, a padded last batch when asked for.
#include "cachedarrays/nn/batch_sampler.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "cachedarrays/error.hpp"
#include "nn/data/augmentation.hpp"
#include "nn/data/counter_random.hpp"
#include "nn/data/dataset_support.hpp"

namespace cachedarrays::nn {

namespace {

// Keeps the sampler's streams apart from a synthetic dataset's of the same
// seed ("sampler" in ASCII).
constexpr std::uint64_t sampler_tag = 0x0073'616d'706c'6572ULL;

std::string prefix() { return "cachedarrays::nn: BatchSampler: "; }

}  // namespace

BatchSampler::BatchSampler(const Dataset& data, const BatchSamplerOptions& options)
    : data_(&data), options_(options), dims_(data.image_dims()), per_image_(element_count(dims_)) {
  if (options.batch < 1) {
    throw invalid_argument(prefix() + "batch is " + std::to_string(options.batch) + "; it must be at least 1");
  }
  if (options.limit < 0) {
    throw invalid_argument(prefix() + "limit is " + std::to_string(options.limit) +
                           "; use 0 for the whole dataset or a positive number of samples");
  }
  const std::int64_t side = std::min(dims_[1], dims_[2]);
  if (options.crop_padding < 0 || options.crop_padding > side) {
    throw invalid_argument(prefix() + "crop_padding is " + std::to_string(options.crop_padding) + "; for " +
                           to_string(dims_) + " images it must be 0 (no crop) to " + std::to_string(side));
  }
  if (options.limit == 0 && data.size() == std::numeric_limits<std::int64_t>::max()) {
    throw invalid_argument(prefix() +
                           "the dataset is endless (synthetic); set limit to the number of samples an "
                           "epoch should have");
  }
  samples_ = options.limit == 0 ? data.size() : std::min(options.limit, data.size());
  batches_ = options.drop_last ? samples_ / options.batch : (samples_ + options.batch - 1) / options.batch;
  if (batches_ == 0) {
    throw invalid_argument(prefix() + "an epoch of " + std::to_string(samples_) + " samples holds no whole batch of " +
                           std::to_string(options.batch) + "; use a smaller batch or drop_last = false");
  }
  const std::uint64_t root = detail::mix64(options.seed ^ sampler_tag);
  order_key_ = detail::stream_at(root, 0);
  augment_key_ = detail::stream_at(root, 1);
  start_epoch(0);
}

void BatchSampler::start_epoch(std::int64_t epoch) {
  if (epoch < 0) throw invalid_argument(prefix() + "epoch " + std::to_string(epoch) + " is negative");
  order_.resize(static_cast<std::size_t>(samples_));
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
  if (options_.shuffle) {
    // Fisher-Yates with one counter per step.
    const std::uint64_t stream = detail::stream_at(order_key_, static_cast<std::uint64_t>(epoch));
    for (std::size_t i = order_.size() - 1; i > 0; --i) {
      const std::uint64_t j = detail::uniform_below(detail::stream_at(stream, i), i + 1);
      std::swap(order_[i], order_[j]);
    }
  }
  epoch_ = epoch;
  position_ = 0;
}

void BatchSampler::seek(std::int64_t epoch, std::int64_t batch) {
  if (batch < 0 || batch > batches_) {
    throw invalid_argument(prefix() + "cannot seek to batch " + std::to_string(batch) + "; an epoch has batches 0 to " +
                           std::to_string(batches_ - 1) + " (" + std::to_string(batches_) + ": its end)");
  }
  start_epoch(epoch);
  position_ = batch;
}

bool BatchSampler::next(std::span<float> images, std::span<float> labels, std::int64_t* valid) {
  const std::int64_t batch = options_.batch;
  if (static_cast<std::int64_t>(labels.size()) != batch ||
      static_cast<std::int64_t>(images.size()) != batch * per_image_) {
    throw invalid_argument(prefix() + "next got room for " + std::to_string(images.size()) + " image floats and " +
                           std::to_string(labels.size()) + " labels; a batch of " + std::to_string(batch) + " " +
                           to_string(dims_) + " images needs " + std::to_string(batch * per_image_) +
                           " image floats and " + std::to_string(batch) + " labels");
  }
  if (position_ == batches_) return false;
  const std::int64_t first = position_ * batch;
  const std::int64_t real = std::min(batch, samples_ - first);
  const bool augmenting = options_.crop_padding > 0 || options_.horizontal_flip;
  const auto per_image = static_cast<std::size_t>(per_image_);
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, real), [&](const tbb::blocked_range<std::int64_t>& r) {
    std::vector<float> original(augmenting ? per_image : 0);
    for (std::int64_t i = r.begin(); i != r.end(); ++i) {
      const std::int64_t index = order_[static_cast<std::size_t>(first + i)];
      const std::span<float> dst = images.subspan(static_cast<std::size_t>(i) * per_image, per_image);
      std::int64_t label = 0;
      if (augmenting) {
        label = data_->sample(index, original);
        detail::augment(
            detail::draw_augmentation(augment_key_, epoch_, index, options_.crop_padding, options_.horizontal_flip),
            original, dst, dims_);
      } else {
        label = data_->sample(index, dst);
      }
      labels[static_cast<std::size_t>(i)] = static_cast<float>(label);
    }
  });
  // A short last batch (drop_last = false) repeats its own samples.
  for (std::int64_t i = real; i < batch; ++i) {
    const auto from = static_cast<std::size_t>(i % real);
    const auto to = static_cast<std::size_t>(i);
    std::copy_n(images.begin() + static_cast<std::ptrdiff_t>(from * per_image), per_image,
                images.begin() + static_cast<std::ptrdiff_t>(to * per_image));
    labels[to] = labels[from];
  }
  if (valid != nullptr) *valid = real;
  ++position_;
  return true;
}

}  // namespace cachedarrays::nn
