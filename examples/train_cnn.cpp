// Trains a CNN or a Vision Transformer whose tensors are CachedArrays, on a
// fast tier smaller than the model's footprint, with no hand-written hints:
// the trainer emits them. SGD or AdamW (--optimizer); with AdamW it also
// reports where the optimizer's moments were when the updates read them.
// With no arguments: a ResNet-18 of quarter width on Fashion-MNIST (Debian's
// dataset-fashion-mnist), 3 epochs over the 60,000 training images in
// batches of 128, tested on the 10,000 test images after each, with a fast
// tier of half the measured footprint under the auto policy. The defaults
// are chosen so that a user's first run is short and clearly learns.
//
// Under mpirun (built with CACHEDARRAYS_WITH_MPI) it trains data-parallel:
// --batch is the global batch, each rank trains on its share with its own
// tiers, gradients are averaged over the ranks (nn/data_parallel.hpp), and
// rank 0 prints, tests and writes checkpoints.
//
// SIGTERM or SIGINT (Ctrl-C) stops it cleanly at the next step boundary
// (nn/stop_signals.hpp): the checkpoint, the epoch line, the table and the
// summary, then exit status 128 + the signal's number. Under mpirun every
// rank stops at the same step.
//
// The work is the library's (nn/training_run.hpp): this program is its
// command line, the process around the run (oneDNN's threads, MPI, the
// signals) and the report.
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/stop_signals.hpp>
#include <cachedarrays/nn/training_options.hpp>
#include <cachedarrays/nn/training_report.hpp>
#include <cachedarrays/nn/training_run.hpp>
#ifdef CACHEDARRAYS_HAS_MPI
#include <cachedarrays/nn/mpi_communicator.hpp>
#endif

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

// The model and its optimizer.
void add_model_options(CLI::App& app, nn::TrainingOptions& o) {
  nn::ModelConfig& model = o.model;
  app.add_option("--model", model.family,
                 "vgg, resnet, densenet, inception (inception-v4: inception --depth 4) or vit (a Vision Transformer)")
      ->capture_default_str();
  app.add_option("--depth", model.depth,
                 "network depth (resnet 18..200, vgg 11..416, densenet 121..264, inception 4; vit: blocks, default 6)")
      ->capture_default_str();
  app.add_option("--patch", model.vit.patch, "vit: side of the square patches (a divisor of the image side)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--dim", model.vit.dim, "vit: features per token")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--heads", model.vit.heads, "vit: attention heads (they divide --dim)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--mlp-ratio", model.vit.mlp_ratio, "vit: the MLP's hidden features per token feature")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--size", o.vit_size,
                 "vit: a size of the ViT paper instead of --patch/--dim/--depth/--heads/--mlp-ratio: " +
                     fmt::format("{}", fmt::join(nn::vit_sizes(), ", ")));
  app.add_option("--optimizer", o.optimizer,
                 "sgd (momentum 0.9) or adamw (betas 0.9, 0.999; its two moments are archived after each update)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adamw"}));
  app.add_option("--weight-decay", o.weight_decay,
                 "SGD's L2 penalty (default 1e-4) or AdamW's decoupled weight decay of the weights (default 0.05)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", model.batch, "images per iteration (under mpirun: in all, split evenly over the ranks)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--image-size", model.image_size, "square image side (synthetic data; a data set has its own)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--classes", model.classes, "output classes (synthetic data; a data set has its own)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--width", model.width, "channel multiplier (1 = the published network)")->capture_default_str();
}

// How long it trains, on what, and the checkpoint.
void add_training_options(CLI::App& app, nn::TrainingOptions& o) {
  app.add_option("--epochs", o.epochs, "passes over the training set (each followed by a test pass)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--iterations", o.iterations,
                 "stop after this many training iterations (0: run the epochs); an epoch cut short is not tested")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--train-limit", o.train_limit,
                 "train on the first N images of the training set, shuffled each epoch (0: all; synthetic data: "
                 "N images make an epoch)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--test-limit", o.test_limit, "test on the first N test images (0: all; synthetic data: 4 batches)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr-schedule", o.lr_schedule,
                 "constant, cosine (to 0 over the run), warmup-cosine:EPOCHS (rising linearly over EPOCHS epochs, then "
                 "cosine) or step:EPOCHS:GAMMA (times GAMMA every EPOCHS epochs)")
      ->capture_default_str();
  app.add_option("--crop-padding", o.crop_padding, "augmentation: pad by N pixels and crop back at a random offset")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--flip", o.flip, "augmentation: mirror training images left-right with probability 1/2");
  app.add_flag("--update-after-backward", o.update_after_backward,
               "run every parameter's SGD step after the backward pass instead of right after the backward step "
               "that finishes its gradient (the same losses; gradients then live to the iteration's end)");
  app.add_flag("--plain-parameters", o.plain_parameters,
               "keep weights plain instead of in the layout most of their oneDNN primitives use (the same losses; "
               "each primitive then reorders its weights, or its gradient, every iteration)");
  app.add_option(
      "--checkpoint", o.checkpoint,
      "save parameters, the optimizer's state, running statistics and the data position to FILE after every epoch "
      "(crash-safely: a new file, flushed, then renamed; libpmem flushes on a DAX mount)");
  app.add_flag("--resume", o.resume, "continue from --checkpoint FILE where the run that wrote it was");
}

// The tiers, the policy, the data, the threads and what the run records.
void add_run_options(CLI::App& app, nn::TrainingOptions& o) {
  const auto registry = ca::policy::Registry::builtin();
  app.add_option("--policy", o.policy, "placement policy: " + fmt::format("{}", fmt::join(registry.names(), ", ")))
      ->capture_default_str();
  auto* fast_bytes_opt = app.add_option("--fast-bytes", o.fast_bytes, "fast tier size in bytes");
  app.add_option("--fast-fraction", o.fast_fraction, "fast tier size as a fraction of the measured footprint")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 64.0))
      ->excludes(fast_bytes_opt);
  app.add_option("--slow-path", o.slow_path, "DAX file or directory for the slow tier (default: a file under /dev/shm)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the parameters, the data order and augmentation, and the synthetic data")
      ->capture_default_str();
  app.add_option("--data", o.data,
                 "fashion-mnist[:DIR] (Debian's dataset-fashion-mnist) | mnist:DIR | mnist:IMAGES,LABELS | "
                 "cifar10:DIR | cifar10:FILE | synthetic (random images and labels, as the paper)")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "oneDNN threads (0: all cores, shared evenly among the ranks on a machine)")
      ->capture_default_str();
  app.add_option("--mover-threads", o.mover_threads,
                 "threads of the asynchronous mover, which make the prefetches and write-backs beside the kernels")
      ->capture_default_str()
      ->check(CLI::Range(1U, 64U));
  app.add_option("--bucket-mib", o.bucket_mib,
                 "under mpirun: gradients are averaged over the ranks in buckets of about this many MiB, each "
                 "summed while the backward pass goes on")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", o.learning_rate, "learning rate at the start of the schedule (default: SGD 0.1, AdamW 1e-3)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slow-emulation", o.slow_emulation, "make the slow tier as slow as: optane, optane-1dimm, cxl, none")
      ->capture_default_str();
  app.add_option("--profile-cache", o.profile_cache,
                 "profile the model's kernels into FILE (once per machine): the autotm-* policies plan from the "
                 "profiles (default FILE: kernel_profiles.json in $XDG_CACHE_HOME/cachedarrays or "
                 "~/.cache/cachedarrays); with ca-lma / ca-lmpa the policy "
                 "chooses how far it looks ahead from them (ca::policy::profiled_lookahead) instead of a fixed "
                 "32 kernels");
  app.add_option("--planner", o.planner,
                 "where the objects of an iteration go in the fast tier: online (the allocator decides when each "
                 "is created), or planned ahead by best-fit (offset lines), smartpool or mip; a planner makes the "
                 "ca-l*m* policies place by its plan and --fast-fraction a fraction of the planned footprint")
      ->capture_default_str()
      ->check(CLI::IsMember({"online", "best-fit", "smartpool", "mip"}));
  app.add_option("--trace", o.trace_path, "record the last iteration to FILE.json (Chrome trace) or FILE.csv");
  app.add_option("--json", o.json_path,
                 "also write the run's epochs (losses, accuracy, speed, traffic between the tiers) and its wall time "
                 "to FILE as JSON");
  app.add_flag("--memory-mode", o.memory_mode,
               "emulate Intel's 2LM memory mode instead of two tiers: everything lives on the slow tier "
               "(--slow-emulation, default optane), fronted by a hardware-like DRAM cache of the fast-tier size; "
               "--policy is not used");
}

// The help's footer: the environment variables, which set the flags' defaults.
std::string environment_footer() {
  std::string footer = "Environment (what a flag above also sets is its default; the flag wins):";
  for (const ca::EnvironmentVariable& v : ca::environment_variables()) {
    footer += fmt::format("\n  {:<27} {} ({})", v.name, v.meaning, v.allowed);
  }
  return footer;
}

// oneDNN's threads (OpenMP is this program's; the library does not link
// it): --threads, or the machine's cores shared evenly among the ranks on it
// rather than each rank taking all.
void set_threads(int threads, int local_ranks) {
  if (threads > 0) {
    omp_set_num_threads(threads);
  } else if (local_ranks > 1) {
    omp_set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local_ranks));
  }
}

// A planner that weighs candidate plans (ReDL's period sizes) has each
// judged by a replay of a dry run on the run's tiers (sim/replay_judge.hpp),
// modeled with the profiles and the tiers' bandwidths; the judge replays the
// run's machine, its mover included.
ca::policy::PlanJudge replay_judge(const nn::PlanJudgeInputs& in, const ca::policy::AutotmPolicyOptions& options) {
  return ca::replay_judge(in.trace, in.program,
                          ca::ReplayJudgeMachine::as_planned(in.fast_bytes, in.slow_bytes, options, in.mover_threads),
                          options);
}

// Trains, prints the report and writes its JSON; returns the exit status:
// 128 + the number of the signal that stopped it, or 0.
int train(const nn::TrainingOptions& options, nn::TrainingProcess process) {
  set_threads(options.threads, process.local_ranks);
  process.compute_threads = omp_get_max_threads();
  process.judge = replay_judge;
  // After MPI's start, which may install handlers of its own.
  const nn::StopSignals stop(
      "train_cnn", process.communicator != nullptr ? nn::StopSignals::Output::dropped : nn::StopSignals::Output::kept);
  process.stop_requested = stop.stop_requested();
  const nn::TrainingReport report = nn::run_training(options, process);
  nn::print_training_report(report);
  nn::write_training_json(report, options.json_path);
  std::fflush(stdout);
  return report.fit.stop_reason != 0 ? 128 + report.fit.stop_reason : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN or ViT whose tensors live on a fast and a slow memory tier"};
  nn::TrainingOptions options;
  try {
    options = nn::training_options_from_environment();
  } catch (const ca::invalid_argument& e) {
    fmt::print(stderr, "train_cnn: {}\n", e.what());
    return 2;
  }
  add_model_options(app, options);
  add_training_options(app, options);
  add_run_options(app, options);
  app.footer(environment_footer());
  CLI11_PARSE(app, argc, argv);
  try {
    nn::settle_training_options(options, {.depth = app.count("--depth") > 0,
                                          .width = app.count("--width") > 0,
                                          .fast_fraction = app.count("--fast-fraction") > 0,
                                          .fast_bytes = app.count("--fast-bytes") > 0});
  } catch (const ca::invalid_argument& e) {
    fmt::print(stderr, "train_cnn: {}\n", e.what());
    return 2;
  }
  nn::TrainingProcess process;
#ifdef CACHEDARRAYS_HAS_MPI
  // Under mpirun: data parallel, one rank per process. Rank 0 prints; the
  // others' output would repeat it.
  std::unique_ptr<nn::MpiCommunicator> mpi;
  if (nn::MpiCommunicator::launched_by_mpi()) {
    try {
      mpi = std::make_unique<nn::MpiCommunicator>();
    } catch (const ca::error& e) {
      fmt::print(stderr, "train_cnn: {}\n", e.what());
      return 1;
    }
    process.communicator = mpi.get();
    process.local_ranks = mpi->local_size();
    if (mpi->rank() > 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  }
#endif
  // A rank that fails ends the whole job: the others would wait for it.
  const auto fail = [&](const std::string& message) {
    if (process.communicator != nullptr) process.communicator->abort("train_cnn: " + message);
    fmt::print(stderr, "train_cnn: {}\n", message);
    return 1;
  };
  try {
    return train(options, process);
  } catch (const ca::error& e) {
    return fail(e.what());
  } catch (const dnnl::error& e) {
    return fail(fmt::format("oneDNN error: {} (status {})", e.what(), static_cast<int>(e.status)));
  }
}
