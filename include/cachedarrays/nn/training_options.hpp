// What a training run is asked to do, as one struct: the model, the data,
// the schedule, the checkpoint, the tiers and the policy, each with the
// default a first run should have. train_cnn's command line sets these
// fields one flag each; a program of its own sets them directly and hands
// them to run_training() (nn/training_run.hpp).
//
// The CACHEDARRAYS_* environment (runtime/environment.hpp) gives the tiers'
// and the policy's defaults, which an explicit setting then overrides:
// start from training_options_from_environment(), set what the user asked
// for, and settle_training_options() resolves what depends on what was set.
#pragma once

#include <cstdint>
#include <string>

#include "cachedarrays/manager/mover.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/runtime/environment.hpp"

namespace cachedarrays::nn {

/// Everything a training run (run_training) is asked to do, with the
/// defaults of a first run: a quarter-width ResNet-18 on Fashion-MNIST, 3
/// epochs in batches of 128, a fast tier of half the measured footprint
/// under the auto policy.
struct TrainingOptions {
  /// The model: family, depth, batch (under MPI the global batch), image
  /// side, classes, width. A data set replaces the image shape and classes
  /// with its own.
  ModelConfig model{.family = "resnet", .depth = 18, .batch = 128, .image_size = 32, .classes = 10, .width = 0.25};
  /// A named ViT size (B16, L16, ...; vit_sizes()) instead of the shape in
  /// `model`; empty: none.
  std::string vit_size;
  int epochs = 3;                ///< passes over the training set, each followed by a test pass
  int iterations = 0;            ///< stop after this many training steps (0: run the epochs)
  std::int64_t train_limit = 0;  ///< train on the first N images (0: all; synthetic data: 5 batches)
  std::int64_t test_limit = 0;   ///< test on the first N images (0: all; synthetic data: 4 batches)
  /// The learning-rate schedule (LearningRateSchedule::parse): constant,
  /// cosine, warmup-cosine:EPOCHS or step:EPOCHS:GAMMA.
  std::string lr_schedule = "cosine";
  float learning_rate = 0;              ///< at the schedule's start (0: the optimizer's default, SGD 0.1, AdamW 1e-3)
  std::string optimizer = "sgd";        ///< "sgd" or "adamw" (parse_optimizer)
  float weight_decay = -1;              ///< below 0: the optimizer's default (SGD 1e-4, AdamW 0.05)
  int crop_padding = 0;                 ///< augmentation: pad by N pixels and crop back at a random offset
  bool flip = false;                    ///< augmentation: mirror training images left-right with probability 1/2
  bool update_after_backward = false;   ///< every update after the backward pass, not inside it
  bool plain_parameters = false;        ///< weights plain, not in their primitives' layout
  std::string checkpoint;               ///< written after every epoch and on a stop (empty: none)
  bool resume = false;                  ///< continue from `checkpoint` where the run that wrote it was
  std::string policy = "auto";          ///< the placement policy's name (policy::Registry)
  std::uint64_t fast_bytes = 0;         ///< the fast tier's size (0: fast_fraction of the footprint)
  double fast_fraction = 0.5;           ///< the fast tier's size as a share of the footprint
  std::string slow_path;                ///< DAX file or directory of the slow tier (empty: a file under /dev/shm)
  std::string slow_emulation = "none";  ///< make the slow tier as slow as: optane, optane-1dimm, cxl, none
  bool memory_mode = false;             ///< emulate 2LM: the slow tier alone, fronted by a modeled DRAM cache
  /// Where the placement of an iteration's objects in the fast tier is
  /// decided: "online", or planned by "best-fit", "smartpool" or "mip".
  std::string planner = "online";
  /// The kernel-profile cache the planning and lookahead policies read
  /// (empty: default_profile_cache() for the planners, a fixed lookahead
  /// for the others).
  std::string profile_cache;
  std::uint64_t seed = 1;  ///< of the parameters, the data order and augmentation, and synthetic data
  /// The data set (open_data): fashion-mnist[:DIR], mnist:..., cifar10:...
  /// or synthetic.
  std::string data = "fashion-mnist";
  /// oneDNN's threads (0: all cores, shared among the ranks of a machine).
  /// The program applies it (omp_set_num_threads), as train_cnn does:
  /// OpenMP is the program's, and this library does not link it.
  int threads = 0;
  unsigned mover_threads = MoverOptions{}.threads;  ///< threads of the asynchronous mover
  double bucket_mib = 4;                            ///< data parallel: the gradient buckets' size in MiB
  std::string trace_path;  ///< record the last iteration to this .json or .csv file (empty: none)
  std::string json_path;   ///< write the report as JSON to this file (empty: none)
  /// The CACHEDARRAYS_* variables read: the defaults of the fields above,
  /// and the NUMA nodes and slow-tier size, which have no field.
  EnvironmentSettings env;
};

/// Which TrainingOptions fields the user set explicitly (a flag given),
/// where the default depends on it.
struct ExplicitTrainingOptions {
  bool depth = false;          ///< `model.depth`: kept over a ViT's default depth
  bool width = false;          ///< `model.width`: kept over a ViT's width of 1
  bool fast_fraction = false;  ///< `fast_fraction`: wins over CACHEDARRAYS_FAST_BYTES
  bool fast_bytes = false;     ///< `fast_bytes`
};

/// The defaults with the CACHEDARRAYS_* environment applied (policy, fast
/// tier, slow path, emulation, trace). Throws invalid_argument naming a
/// variable whose value is not allowed.
[[nodiscard]] TrainingOptions training_options_from_environment();

/// Resolves what depends on what was set: the model's canonical name, a
/// named ViT size (with an explicit depth kept), a ViT's default depth and
/// width, the optimizer's default learning rate, and an explicit fast
/// fraction over the environment's fast bytes. Throws invalid_argument for
/// an unknown ViT size.
void settle_training_options(TrainingOptions& options, const ExplicitTrainingOptions& given);

/// The model's identity in checkpoints and reports ("resnet-18 width 0.25
/// 1x28x28 10 classes"): a checkpoint of another model, or of this one
/// built for other images, is refused on resume.
[[nodiscard]] std::string model_identity(const ModelConfig& model);

}  // namespace cachedarrays::nn
