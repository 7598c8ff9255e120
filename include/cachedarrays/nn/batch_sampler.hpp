// Epochs over a finite Dataset: each epoch visits every sample once, in an
// order drawn from (seed, epoch) alone, in batches, with optional random
// crop and horizontal flip for training.
//
// Everything random is counter-based (splitmix64 of seed, epoch, sample),
// so a run resumed with seek(epoch, batch) sees exactly the batches the
// uninterrupted run would have seen, on every standard library.
//
//   BatchSampler train(*splits.train, {.batch = 64, .seed = seed, .crop_padding = 2, .horizontal_flip = true});
//   for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
//     train.start_epoch(epoch);
//     while (train.next(images, labels)) trainer.step(...);
//   }
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cachedarrays/nn/data.hpp"

namespace cachedarrays::nn {

/// What a BatchSampler draws and how: batch size, order, the last batch,
/// augmentation and how much of the dataset an epoch covers.
struct BatchSamplerOptions {
  std::int64_t batch = 0;  ///< samples per batch, at least 1
  bool shuffle = true;     ///< false: samples in index order every epoch
  /// true: an epoch is the whole batches only (the remainder is left out,
  /// a different remainder each epoch when shuffling). false: the last batch
  /// is completed by repeating its own samples; next() says how many are real.
  bool drop_last = true;
  /// The root of every random draw (order, crops, flips): the same seed
  /// gives the same batches.
  std::uint64_t seed = 1;
  /// Random crop: pad each side with `crop_padding` zeros (after
  /// normalisation, i.e. the training set's mean), then cut the original
  /// size back out at a random offset. 0: no crop.
  int crop_padding = 0;
  bool horizontal_flip = false;  ///< mirror left-right with probability 1/2
  /// 0: the whole dataset; else only its first `limit` samples (all of them
  /// if it has fewer), for quick runs. Required for the endless synthetic set.
  std::int64_t limit = 0;
};

/// Epochs over a finite Dataset (see the file comment): each epoch visits
/// every sample once, in an order drawn from (seed, epoch) alone, in batches,
/// with optional random crop and flip; seek() resumes exactly.
class BatchSampler {
 public:
  /// A sampler over `data`, which must outlive it. Starts at epoch 0, batch
  /// 0. Throws invalid_argument on options that are out of range or an epoch
  /// that would hold no batch.
  BatchSampler(const Dataset& data, const BatchSamplerOptions& options);

  /// The options it was made with.
  [[nodiscard]] const BatchSamplerOptions& options() const { return options_; }
  /// The dataset it draws from.
  [[nodiscard]] const Dataset& dataset() const { return *data_; }
  /// The samples one epoch draws from: size(), or `limit` if smaller.
  [[nodiscard]] std::int64_t samples_per_epoch() const { return samples_; }
  /// Batches in an epoch: whole batches only with drop_last, else rounded up.
  [[nodiscard]] std::int64_t batches_per_epoch() const { return batches_; }
  /// The current epoch (0-based).
  [[nodiscard]] std::int64_t epoch() const { return epoch_; }
  /// Batches handed out in this epoch so far.
  [[nodiscard]] std::int64_t position() const { return position_; }

  /// Begins epoch `epoch` (>= 0) at its first batch; its order depends on
  /// (seed, epoch) only, not on the epochs before. Throws invalid_argument
  /// for a negative epoch.
  void start_epoch(std::int64_t epoch);
  /// Resumes at batch `batch` (0 to batches_per_epoch()) of `epoch`: the
  /// next next() gives what it gave there in an uninterrupted run. Throws
  /// invalid_argument for a batch or epoch out of range.
  void seek(std::int64_t epoch, std::int64_t batch);

  /// Fills `images` (`batch * C * H * W` floats) and `labels` (`batch` floats)
  /// with the next batch of this epoch and returns true, or returns false,
  /// touching nothing, when the epoch is over. `*valid` (when given) is the
  /// number of real samples: the batch size but for a padded last batch.
  /// Throws invalid_argument when the spans do not fit the batch size.
  bool next(std::span<float> images, std::span<float> labels, std::int64_t* valid = nullptr);

 private:
  const Dataset* data_;
  BatchSamplerOptions options_;
  Dims dims_;
  std::int64_t per_image_ = 0;
  std::int64_t samples_ = 0;
  std::int64_t batches_ = 0;
  std::int64_t epoch_ = 0;
  std::int64_t position_ = 0;
  std::uint64_t order_key_ = 0;      // of the per-epoch permutations
  std::uint64_t augment_key_ = 0;    // of the per-(epoch, sample) crops and flips
  std::vector<std::int64_t> order_;  // this epoch's sample indices
};

}  // namespace cachedarrays::nn
