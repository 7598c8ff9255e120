// Training over epochs: shuffled batches of a training set (BatchSampler),
// a learning-rate schedule, a test pass at the end of every epoch
// (Trainer::evaluate over the whole test set, its last batch padded), and
// crash-safe checkpoints a later run resumes from exactly where this one
// was — the same parameters, momentum, running statistics, data order and
// learning rate as an uninterrupted run, bit for bit.
//
// The training loop of train_cnn, in the library so that any program (and
// the tests) runs the same one. What to print is the caller's: the hooks
// see every step and every epoch.
//
// Data parallel (a trainer made with TrainerOptions::data_parallel over K
// ranks): every rank calls fit() with the same options and data; each
// draws the same global batch of train.batch samples and trains on its
// K-th of it (rank r: samples r*b .. r*b+b-1). Rank 0 alone runs the test
// pass and writes checkpoints (removing first, once, the temporary files
// of saves whose process died); resuming, rank 0 reads the checkpoint and
// the others receive its state. The losses and test figures the hooks see
// are the same on every rank. An exception on one rank leaves the others
// waiting in their next collective: catch it and call
// Communicator::abort, as train_cnn does, so that the job ends at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/nn/batch_sampler.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/lr_schedule.hpp"
#include "cachedarrays/nn/trainer.hpp"

namespace cachedarrays::nn {

/// One training step, as the hooks (FitOptions::before_step, after_step)
/// see it.
struct FitStep {
  std::int64_t epoch = 0;      ///< 0-based
  std::int64_t batch = 0;      ///< 0-based, within the epoch
  std::int64_t batches = 0;    ///< batches per epoch
  std::int64_t iteration = 0;  ///< steps run by this fit() call so far, this one included
  float loss = 0;              ///< the step's mean loss (data parallel: over the global batch); 0 before it
  float learning_rate = 0;     ///< the rate the step trains with (the schedule's)
  double seconds = 0;          ///< of this step (trainer.step and the runtime's collect); 0 before it
};

/// One epoch's figures, as FitOptions::after_epoch sees them and FitResult
/// keeps them.
struct FitEpoch {
  std::int64_t epoch = 0;           ///< 0-based
  std::int64_t batches = 0;         ///< trained in this call (fewer than an epoch when resumed or stopped early)
  bool complete = false;            ///< the epoch ran to its end (and was tested)
  double train_loss = 0;            ///< mean over its batches
  double seconds = 0;               ///< its training steps
  double images_per_second = 0;     ///< its training steps (data parallel: all ranks' images)
  std::optional<double> test_loss;  ///< mean cross-entropy over the test set (complete epochs with a test set)
  /// The fraction of the test set classified right, in [0, 1] (complete
  /// epochs with a test set).
  std::optional<double> test_accuracy;
  double test_seconds = 0;  ///< the test pass (0 without one)
  /// What FitOptions::stop_requested answered when it ended this epoch
  /// early (0: it did not; the epoch ran to its end or max_iterations cut it).
  int stop_reason = 0;
};

/// What fit() runs: how long, on which batches, at which learning rate, with
/// which checkpoint, and the hooks that see its progress.
struct FitOptions {
  std::int64_t epochs = 1;  ///< epochs of the whole run, counting those a resumed checkpoint has done
  /// Stop after this many training steps in this call (0: run the epochs).
  /// An epoch cut short is neither tested nor counted as complete.
  std::int64_t max_iterations = 0;
  /// Batch size, seed, shuffling, augmentation and limit of the training
  /// batches; batch must equal the graph's batch size (data parallel: times
  /// the ranks, the global batch).
  BatchSamplerOptions train;
  /// Test samples per pass (0: the whole test set; required for an endless one).
  std::int64_t test_limit = 0;
  /// The learning rate of every step, set on the trainer before it.
  LearningRateSchedule schedule = LearningRateSchedule::parse("constant", 0.01f);
  /// Checkpoint file (empty: none): written at the end of every epoch and
  /// when the run stops early; with `resume`, read first (it must exist).
  std::filesystem::path checkpoint;
  /// Continue from `checkpoint` where the run that wrote it stopped.
  bool resume = false;
  /// The model's identity in checkpoints: resuming another model's is refused.
  std::string model;

  /// Asked before every step: 0 lets the run go on; any other value ends it
  /// at this step boundary, as max_iterations does (the checkpoint, if
  /// named, is written where it stopped, so that `resume` continues bit for
  /// bit), and is returned as FitResult::stop_reason. For example
  /// `[&] { return source.stop_requested() ? 1 : 0; }` with a
  /// std::stop_source, or the number of a signal received (train_cnn).
  /// Data parallel: set it on every rank or on none; the ranks exchange
  /// their answers before every step and all stop at the same step, with
  /// the largest answer of any rank. Must not throw.
  std::function<int()> stop_requested;

  std::function<void(const FitStep&)> before_step;   ///< e.g. start a trace for the last step
  std::function<void(const FitStep&)> after_step;    ///< progress bars
  std::function<void(const FitEpoch&)> after_epoch;  ///< after each epoch's training and test pass
  std::function<void(const std::string&)> log;       ///< resume and checkpoint notes
};

/// What a fit() call did.
struct FitResult {
  std::vector<FitEpoch> epochs;     ///< those this call trained in
  std::int64_t iterations = 0;      ///< steps run by this call
  std::int64_t resumed_epoch = -1;  ///< where a resumed run started (-1: not resumed)
  std::int64_t resumed_batch = 0;   ///< the batch of resumed_epoch it started at
  bool stopped_early = false;       ///< max_iterations or a stop request ended it before the last epoch's end
  /// What FitOptions::stop_requested answered when it ended the run (0: it
  /// did not; data parallel: the largest answer of any rank).
  int stop_reason = 0;
  std::int64_t epochs_done = 0;   ///< where the run ended: epochs complete (resumed ones included) ...
  std::int64_t batches_done = 0;  ///< ... and batches done of the next one: what its checkpoint holds
};

/// Trains `trainer` on `train`, tests on `test` (may be null) after each
/// epoch. The runtime (if any) collects after every step, as a training loop
/// must. Throws invalid_argument for options that do not fit the graph or
/// the data (naming what to change), and whatever load_checkpoint throws for
/// a checkpoint that cannot be resumed; nothing is trained then.
FitResult fit(Trainer& trainer, const Dataset& train, const Dataset* test, const FitOptions& options);

/// The test pass alone: the whole of `test` (or its first `limit` samples)
/// in order, the last batch padded; returns {mean loss, accuracy}.
[[nodiscard]] std::pair<double, double> evaluate_dataset(Trainer& trainer, const Dataset& test, std::int64_t limit = 0);

}  // namespace cachedarrays::nn
