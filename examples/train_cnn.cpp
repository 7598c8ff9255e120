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
#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/data_parallel.hpp>
#include <cachedarrays/nn/fit.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/planned_footprint.hpp>
#include <cachedarrays/nn/profiler.hpp>
#include <cachedarrays/nn/stop_signals.hpp>
#include <cachedarrays/nn/trainer.hpp>
#ifdef CACHEDARRAYS_HAS_MPI
#include <cachedarrays/nn/mpi_communicator.hpp>
#endif

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

// When the process started: a user's wait for each epoch includes the setup.
const std::chrono::steady_clock::time_point process_start = std::chrono::steady_clock::now();

struct Options {
  nn::ModelConfig model{.family = "resnet", .depth = 18, .batch = 128, .image_size = 32, .classes = 10, .width = 0.25};
  int epochs = 3;
  int iterations = 0;             // 0: the epochs' batches
  std::int64_t train_limit = 0;   // 0: the whole training set
  std::int64_t test_limit = 0;    // 0: the whole test set
  std::string lr_schedule = "cosine";
  int crop_padding = 0;
  bool flip = false;
  bool update_after_backward = false;
  bool plain_parameters = false;
  std::string checkpoint;
  bool resume = false;
  std::string policy = "auto";
  std::uint64_t fast_bytes = 0;  // 0: fast_fraction of the footprint
  double fast_fraction = 0.5;
  std::string slow_path;
  std::uint64_t seed = 1;
  std::string data = "fashion-mnist";
  int threads = 0;
  unsigned mover_threads = ca::MoverOptions{}.threads;
  float learning_rate = 0;  // 0: the optimizer's default (SGD 0.1, AdamW 1e-3)
  std::string optimizer = "sgd";
  float weight_decay = -1;  // below 0: the optimizer's default (SGD 1e-4, AdamW 0.05)
  std::string vit_size;     // a named ViT (B16, L16, ...) instead of --patch/--dim/--depth/--heads/--mlp-ratio
  std::string slow_emulation = "none";
  std::string trace_path;
  std::string json_path;  // empty: no JSON summary
  bool memory_mode = false;
  std::string profile_cache;  // empty: the A modes keep their fixed lookahead
  std::string planner = "online";
  double bucket_mib = 4;  // data parallel: gradient bucket size
  // The CACHEDARRAYS_* variables (ca::read_environment): the defaults of the
  // flags above, and the NUMA nodes, which have no flag.
  ca::EnvironmentSettings env;
};

// The environment's settings as the flags' defaults: a flag given on the
// command line still wins.
void apply_environment(Options& o) {
  o.env = ca::read_environment();
  if (o.env.policy) o.policy = *o.env.policy;
  if (o.env.fast_bytes) o.fast_bytes = *o.env.fast_bytes;
  if (o.env.fast_fraction) o.fast_fraction = *o.env.fast_fraction;
  if (o.env.slow_path) o.slow_path = o.env.slow_path->string();
  if (o.env.emulation) o.slow_emulation = *o.env.emulation;
  if (o.env.trace) o.trace_path = o.env.trace->string();
}

// A policy that plans ahead (autotm-*, autoswap:*, redl) from the model's kernel profiles, measured
// once per machine into the cache file; the profiling and the solve print
// their progress. A planner that weighs candidate plans (ReDL's period
// sizes) has each judged by a replay of a dry run on the tiers `specs`
// (sim/replay_judge.hpp), modeled with the profiles and the tiers' bandwidths.
std::unique_ptr<ca::policy::Policy> autotm_policy(const Options& o, const ca::policy::PolicyDescriptor& policy,
                                                  const std::function<nn::Graph()>& build,
                                                  const nn::TrainerOptions& trainer,
                                                  const std::vector<ca::DeviceSpec>& specs) {
  const std::string slow = o.slow_emulation == "none" ? "optane" : o.slow_emulation;
  const std::string cache = o.profile_cache.empty() ? nn::default_profile_cache() : o.profile_cache;
  fmt::print("{}: kernel profiles from {} (measured there once per machine: every kernel all in the fast tier, "
             "then all on the emulated {} tier)...\n",
             policy.name(), cache, slow);
  std::fflush(stdout);
  nn::ProfilerOptions profiler;
  profiler.compute_threads = static_cast<unsigned>(omp_get_max_threads());  // the profiles' key
  profiler.slow_tier = slow;
  profiler.trainer = trainer;  // its optimizer's update kernels are profiled too
  bool measured = false;
  const auto t0 = std::chrono::steady_clock::now();
  ca::policy::AutotmPolicyOptions options = nn::autotm_policy_options(policy, build, cache, profiler, &measured);
  fmt::print("{}: kernel profiles {} in {:.1f} s\n", policy.name(), measured ? "measured and cached" : "loaded",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  options.log = [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  if (options.planner && specs.size() == 2) {
    const auto trace = std::make_shared<const ca::Trace>(nn::dry_run_trace(build, trainer, nn::steady_trace_iterations));
    const auto program =
        std::make_shared<const ca::plan::Program>(ca::plan::Program::from_trace(*trace, nn::steady_trace_iteration));
    // The judge replays the run's machine, its mover included.
    options.judge = ca::replay_judge(
        trace, program,
        ca::ReplayJudgeMachine::as_planned(specs[0].capacity, specs[1].capacity, options, o.mover_threads), options);
  }
  return std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
}

void add_options(CLI::App& app, Options& o) {
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
  app.add_option("--batch", model.batch, "images per iteration (under mpirun: in all, split evenly over the ranks)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--image-size", model.image_size, "square image side (synthetic data; a data set has its own)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--classes", model.classes, "output classes (synthetic data; a data set has its own)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--width", model.width, "channel multiplier (1 = the published network)")->capture_default_str();
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
  app.add_option("--checkpoint", o.checkpoint,
                 "save parameters, the optimizer's state, running statistics and the data position to FILE after every epoch "
                 "(crash-safely: a new file, flushed, then renamed; libpmem flushes on a DAX mount)");
  app.add_flag("--resume", o.resume, "continue from --checkpoint FILE where the run that wrote it was");
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
  app.add_option("--seed", o.seed, "seed of the parameters, the data order and augmentation, and the synthetic data")->capture_default_str();
  app.add_option("--data", o.data,
                 "fashion-mnist[:DIR] (Debian's dataset-fashion-mnist) | mnist:DIR | mnist:IMAGES,LABELS | "
                 "cifar10:DIR | cifar10:FILE | synthetic (random images and labels, as the paper)")->capture_default_str();
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
  app.add_option("--lr", o.learning_rate,
                 "learning rate at the start of the schedule (default: SGD 0.1, AdamW 1e-3)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slow-emulation", o.slow_emulation, "make the slow tier as slow as: optane, optane-1dimm, cxl, none")
      ->capture_default_str();
  app.add_option("--profile-cache", o.profile_cache,
                 "profile the model's kernels into FILE (once per machine): the autotm-* policies plan from the "
                 "profiles (default FILE: kernel_profiles.json in $XDG_CACHE_HOME/cachedarrays or ~/.cache/cachedarrays); with ca-lma / ca-lmpa the policy "
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

// The tiers: a fast one of fast_bytes and a slow one that holds everything
// the fast one does not, with room for fragmentation and for the copies a
// policy keeps; or, in memory mode, the slow one alone.
std::vector<ca::DeviceSpec> devices(const Options& o, std::uint64_t footprint, std::uint64_t fast_bytes) {
  if (!o.memory_mode) {
    // The sizes are settled (flags over environment); the places come from
    // the flags and the environment (CACHEDARRAYS_FAST_NODE, _SLOW_NODE).
    ca::RuntimeDefaults defaults;
    defaults.fast_bytes = fast_bytes;
    defaults.footprint = footprint;
    defaults.emulation = o.slow_emulation;
    ca::EnvironmentSettings places;
    places.fast_node = o.env.fast_node;
    places.slow_bytes = o.env.slow_bytes;
    if (!o.slow_path.empty()) {
      places.slow_path = o.slow_path;
    } else {
      places.slow_node = o.env.slow_node;
    }
    return ca::devices_from_environment(defaults, places);
  }
  ca::DeviceSpec slow = ca::dax_file(o.slow_path, footprint + footprint / 2 + (64ull << 20), "slow");
  {
    // 2LM: one device, no software placement; the cache model charges
    // each access its misses (emulation.hpp).
    const auto profile = ca::emulation::profile(o.slow_emulation == "none" ? "optane" : o.slow_emulation);
    slow.emulation = ca::emulation::memory_mode(*profile, ca::emulation::memory_mode_cache_within(fast_bytes));
    return {slow};
  }
}

// The policy --policy names (first-touch in memory mode: the one device
// holds everything) and the options the flags add to it: --planner's offset
// plan, for a policy that takes one.
struct ChosenPolicy {
  ca::policy::PolicyDescriptor descriptor;
  ca::policy::PolicyOptions options;
};

ChosenPolicy chosen_policy(const Options& o) {
  ChosenPolicy chosen{ca::policy::Registry::builtin().describe(o.memory_mode ? "first-touch" : o.policy), {}};
  if (chosen.descriptor.memory_mode()) {
    throw ca::invalid_argument("--policy " + o.policy + " is the hardware's memory mode, not a policy; emulate it "
                               "with --memory-mode");
  }
  if (o.planner == "online" || o.memory_mode) return chosen;
  if (!chosen.descriptor.takes_offset_planner()) {
    throw ca::invalid_argument("--planner " + o.planner + " places objects for a ca-l*m* policy (ca-lm, ca-lma, "
                               "ca-lmp, ca-lmpa, planned); --policy " + o.policy + " does not take an offset plan");
  }
  chosen.options.offsets = ca::plan::parse_offset_planner(o.planner);
  return chosen;
}

// Thousands grouped with commas: 60,000.
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n);
  for (auto at = static_cast<std::ptrdiff_t>(digits.size()) - 3; at > 0; at -= 3) {
    digits.insert(static_cast<std::size_t>(at), ",");
  }
  return digits;
}

// The data set a run trains on, named as a person knows it, with its sizes.
std::string describe_data(const std::string& spec, const nn::DataSplits& data) {
  const std::string source = spec.rfind("fashion-mnist", 0) == 0
                                 ? "Fashion-MNIST (Debian's dataset-fashion-mnist)"
                             : spec == "synthetic" ? "synthetic (random images and labels)"
                                                   : spec;
  const nn::Dims dims = data.train->image_dims();
  const std::string sizes =
      spec == "synthetic" ? std::string("generated per batch")
                          : fmt::format("{} training and {} test images", grouped(data.train->size()),
                                        data.test ? grouped(data.test->size()) : std::string("no"));
  return fmt::format("{}: {}, {}x{}x{}, {} classes", source, sizes, dims.at(0), dims.at(1), dims.at(2),
                     data.train->classes());
}

// A progress bar on a terminal, redrawn in place; nothing otherwise (a log
// file gets the epoch lines only).
class ProgressBar {
 public:
  ProgressBar() : enabled_(::isatty(STDOUT_FILENO) != 0) {}

  void update(const nn::FitStep& s, int epochs, std::int64_t batch) {
    if (!enabled_) return;
    if (s.batch == 0 || epoch_ != s.epoch) {
      epoch_ = s.epoch;
      seconds_ = 0;
      images_ = 0;
      loss_ = 0;
      steps_ = 0;
    }
    seconds_ += s.seconds;
    images_ += batch;
    loss_ += s.loss;
    ++steps_;
    const std::int64_t done = s.batch + 1;
    const double rate = static_cast<double>(images_) / seconds_;
    const double eta = static_cast<double>((s.batches - done) * batch) / rate;
    constexpr int width = 24;
    const int filled = static_cast<int>(width * done / s.batches);
    fmt::print("\repoch {}/{} [{}{}] {}/{}  loss {:.4f}  {:.0f} img/s  lr {:.4g}  ETA {}:{:02d} ", s.epoch + 1, epochs,
               std::string(static_cast<std::size_t>(filled), '#'), std::string(static_cast<std::size_t>(width - filled), '.'),
               done, s.batches, loss_ / static_cast<double>(steps_), rate, s.learning_rate, static_cast<int>(eta) / 60,
               static_cast<int>(eta) % 60);
    std::fflush(stdout);
  }
  // Clears the bar before a line is printed.
  void clear() {
    if (enabled_) fmt::print("\r{:<110}\r", "");
  }

 private:
  bool enabled_;
  std::int64_t epoch_ = -1;
  double seconds_ = 0;
  std::int64_t images_ = 0;
  double loss_ = 0;
  std::int64_t steps_ = 0;
};

// The model's identity in checkpoints: a checkpoint of another model (or of
// this one built for other images) is refused on --resume.
std::string model_identity(const nn::ModelConfig& m) {
  const std::string mlp = m.family == "vit" ? fmt::format(" mlp x{:g}", m.vit.mlp_ratio) : std::string();
  return fmt::format("{}{} width {} {}x{}x{} {} classes", nn::model_name(m), mlp, m.width, m.channels, m.image_size,
                     m.image_size, m.classes);
}

// What a training run ended with.
struct Trained {
  double step_seconds = 0;  // of the training steps
  int stop_reason = 0;      // the signal that stopped it (0: it ran to its end)
};

// Where a stopped run ended, as the summary says it.
std::string stopped_text(const nn::FitResult& result, int epochs) {
  return fmt::format("stopped by {} after {} of {} epochs, at batch {}", nn::StopSignals::name(result.stop_reason),
                     result.epochs_done, epochs, result.batches_done);
}

// Trains for the epochs (or o.iterations), printing a progress bar on a
// terminal and a line per epoch with the test loss and accuracy, the speed
// and the traffic between the tiers, then a summary table; the last
// iteration is traced when --trace asks for it. `stop` ends it early at a
// step boundary.
Trained train(ca::Runtime& rt, nn::Trainer& trainer, const nn::DataSplits& data, const Options& o,
              const nn::StopSignals& stop) {
  const nn::ModelConfig& model = o.model;
  const bool synthetic = o.data == "synthetic";
  nn::FitOptions fit;
  fit.epochs = o.epochs;
  fit.max_iterations = o.iterations;
  fit.train.batch = model.batch;
  fit.train.seed = o.seed;
  fit.train.crop_padding = o.crop_padding;
  fit.train.horizontal_flip = o.flip;
  fit.train.limit = o.train_limit > 0 || !synthetic ? o.train_limit : 5 * model.batch;
  fit.test_limit = o.test_limit > 0 || !synthetic ? o.test_limit : 4 * model.batch;
  fit.schedule = nn::LearningRateSchedule::parse(o.lr_schedule, o.learning_rate);
  fit.checkpoint = o.checkpoint;
  fit.resume = o.resume;
  fit.model = model_identity(model);
  fit.stop_requested = stop.stop_requested();
  if (o.resume && o.checkpoint.empty()) throw ca::invalid_argument("--resume needs --checkpoint FILE to resume from");

  ProgressBar bar;
  fit.log = [&](const std::string& line) {
    bar.clear();
    fmt::print("{}\n", line);
  };
  std::vector<double> seconds;
  std::vector<float> losses;  // of the current epoch's steps
  const ca::Stats start = rt.stats();
  ca::Stats epoch_start = start;
  fit.before_step = [&](const nn::FitStep& s) {
    const bool last = o.iterations > 0 ? s.iteration == o.iterations
                                       : s.epoch + 1 == o.epochs && s.batch + 1 == s.batches;
    if (!o.trace_path.empty() && last) rt.start_trace();
  };
  fit.after_step = [&](const nn::FitStep& s) {
    seconds.push_back(s.seconds);
    losses.push_back(s.loss);
    // Once signalled, the checkpoint comes first: mpirun, signalled, stops
    // reading the ranks' output, and a redrawn bar would wait for it.
    if (stop.received() == 0) bar.update(s, o.epochs, model.batch);
  };
  struct Row {
    nn::FitEpoch epoch;
    ca::Stats traffic;
    double wall_seconds;  // since the process started, setup included
    std::vector<float> losses;  // of its steps
  };
  std::vector<Row> rows;
  fit.after_epoch = [&](const nn::FitEpoch& e) {
    const ca::Stats delta = rt.stats().since(epoch_start);
    epoch_start = rt.stats();
    rows.push_back({e, delta, std::chrono::duration<double>(std::chrono::steady_clock::now() - process_start).count(),
                    std::move(losses)});
    losses.clear();
    bar.clear();
    const std::string test =
        e.test_accuracy  ? fmt::format("test loss {:.4f}  test accuracy {:.4f}", *e.test_loss, *e.test_accuracy)
        : e.complete     ? std::string("no test set")
        : e.stop_reason  ? fmt::format("stopped by {}, not tested", nn::StopSignals::name(e.stop_reason))
                         : std::string("cut short by --iterations, not tested");
    fmt::print("epoch {:>2}/{}  {} batches  train loss {:.4f}  {}  {:7.1f} img/s  {:.1f} s  fast->slow {:>10}  "
               "slow->fast {:>10}\n",
               e.epoch + 1, o.epochs, e.batches, e.train_loss, test, e.images_per_second, e.seconds + e.test_seconds,
               ca::format_bytes(delta.bytes_copied[0][1]), ca::format_bytes(delta.bytes_copied[1][0]));
    std::fflush(stdout);
  };
  fmt::print("training: {} epochs over {} of {} training images{}, batches of {}, learning rate {}, seed {}{}\n",
             o.epochs, fit.train.limit > 0 ? std::to_string(fit.train.limit) : std::string("all"),
             synthetic ? std::string("endless synthetic") : std::to_string(data.train->size()),
             o.crop_padding > 0 || o.flip ? fmt::format(" (augmented: crop padding {}, flip {})", o.crop_padding, o.flip)
                                          : std::string(),
             model.batch, fit.schedule.describe(), o.seed,
             data.test ? fmt::format("; tested on {} images after each epoch",
                                     fit.test_limit > 0 ? std::min(fit.test_limit, data.test->size()) : data.test->size())
                       : std::string("; no test set"));
  std::fflush(stdout);
  const nn::FitResult result = nn::fit(trainer, *data.train, data.test.get(), fit);
  bar.clear();
  if (!o.trace_path.empty() && rt.trace() != nullptr) {
    rt.stop_trace();
    rt.trace()->save(o.trace_path, rt.device_names());
    fmt::print("trace of the last iteration: {} ({} events)\n", o.trace_path, rt.trace()->events().size());
  }
  const double step_seconds = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  if (rows.empty()) {
    if (result.stop_reason != 0) {
      fmt::print("\nsummary: {} before the first step: nothing trained{}\n", stopped_text(result, o.epochs),
                 result.resumed_epoch >= 0 ? ", the checkpoint is as it was" : "");
    }
    return {step_seconds, result.stop_reason};
  }
  fmt::print("\n{:>5}  {:>8}  {:>10}  {:>9}  {:>8}  {:>9}  {:>8}  {:>10}  {:>10}\n", "epoch", "batches", "train loss",
             "test loss", "test acc", "img/s", "seconds", "fast->slow", "slow->fast");
  for (const Row& r : rows) {
    const nn::FitEpoch& e = r.epoch;
    fmt::print("{:>5}  {:>8}  {:>10.4f}  {:>9}  {:>8}  {:>9.1f}  {:>8.1f}  {:>10}  {:>10}\n", e.epoch + 1, e.batches,
               e.train_loss, e.test_loss ? fmt::format("{:.4f}", *e.test_loss) : std::string("-"),
               e.test_accuracy ? fmt::format("{:.4f}", *e.test_accuracy) : std::string("-"), e.images_per_second,
               e.seconds + e.test_seconds, ca::format_bytes(r.traffic.bytes_copied[0][1]),
               ca::format_bytes(r.traffic.bytes_copied[1][0]));
  }
  const ca::Stats total = rt.stats().since(start);
  // The first iteration creates oneDNN primitives: report the rest.
  const std::size_t skip = seconds.size() > 1 ? 1 : 0;
  const double steady = std::accumulate(seconds.begin() + static_cast<long>(skip), seconds.end(), 0.0) /
                        static_cast<double>(seconds.size() - skip);
  fmt::print("\nsummary: {} iterations, {:.3f} s per iteration, {:.1f} images/s (after the first){}\n",
             result.iterations, steady, static_cast<double>(model.batch) / steady,
             result.stop_reason != 0  ? " — " + stopped_text(result, o.epochs) +
                                            (o.checkpoint.empty() ? "" : ", checkpoint " + o.checkpoint)
             : result.stopped_early ? std::string(" — stopped early by --iterations")
                                    : std::string());
  fmt::print("{}\n", total);
  // Where the updates found the optimizer's state: the moments (AdamW) or
  // momentum (SGD) a policy may leave on the slow tier.
  const nn::Trainer::OptimizerStateTraffic& state = trainer.optimizer_state_traffic();
  const std::vector<std::string> device_names = rt.device_names();
  nlohmann::json state_per_step = nlohmann::json::object();
  if (state.steps > 0) {
    std::string line;
    for (std::size_t d = 0; d < state.bytes_by_device.size() && d < device_names.size(); ++d) {
      const std::uint64_t per_step = state.bytes_by_device[d] / state.steps;
      state_per_step[device_names[d]] = per_step;
      line += fmt::format("{}{} on {}", line.empty() ? "" : ", ", ca::format_bytes(per_step), device_names[d]);
    }
    fmt::print("optimizer state ({}) read by the updates, per step: {}\n",
               o.optimizer == "adamw" ? "AdamW's two moments" : "SGD's momentum", line);
  }
  // Rank 0 writes it, as it prints: every rank's losses are the same.
  const bool rank0 = trainer.communicator() == nullptr || trainer.communicator()->rank() == 0;
  if (!o.json_path.empty() && rank0) {
    nlohmann::json epochs = nlohmann::json::array();
    for (const Row& r : rows) {
      const nn::FitEpoch& e = r.epoch;
      epochs.push_back({{"epoch", e.epoch + 1},
                        {"batches", e.batches},
                        {"train_loss", e.train_loss},
                        {"test_loss", e.test_loss ? nlohmann::json(*e.test_loss) : nlohmann::json()},
                        {"test_accuracy", e.test_accuracy ? nlohmann::json(*e.test_accuracy) : nlohmann::json()},
                        {"images_per_second", e.images_per_second},
                        {"seconds", e.seconds + e.test_seconds},
                        {"fast_to_slow_bytes", r.traffic.bytes_copied[0][1]},
                        {"slow_to_fast_bytes", r.traffic.bytes_copied[1][0]},
                        {"wall_seconds_since_start", r.wall_seconds},
                        {"losses", r.losses}});
    }
    const nlohmann::json summary = {
        {"model", model_identity(model)},
        {"batch", model.batch},
        {"data", o.data},
        {"policy", rt.policy_name()},
        {"fast_fraction", o.fast_fraction},
        {"threads", omp_get_max_threads()},
        {"iterations", result.iterations},
        {"seconds_per_iteration", steady},
        {"stopped_by", result.stop_reason != 0 ? nlohmann::json(nn::StopSignals::name(result.stop_reason))
                                               : nlohmann::json()},
        {"epochs_done", result.epochs_done},
        {"optimizer", o.optimizer},
        {"optimizer_state_bytes_per_step", state_per_step},
        {"batches_done", result.batches_done},
        {"epochs", epochs}};
    std::ofstream out(o.json_path);
    out << summary.dump(1) << "\n";
    if (!out) {
      throw ca::invalid_argument("--json " + o.json_path + ": cannot write it; allowed: a file in a writable directory");
    }
  }
  return {step_seconds, result.stop_reason};
}

// The ranks of a data-parallel run (one process: no communicator).
struct World {
  nn::Communicator* communicator = nullptr;
  int local_ranks = 1;  // on this machine
  [[nodiscard]] int ranks() const { return communicator != nullptr ? communicator->size() : 1; }
  [[nodiscard]] int rank() const { return communicator != nullptr ? communicator->rank() : 0; }
};

// What the run needs settled before it starts: a --json file it can write
// (refused now, not after the training it would record), oneDNN's threads,
// and one slow-tier file per rank.
void prepare(Options& o, const World& world) {
  if (!o.json_path.empty()) {
    const std::filesystem::path dir = std::filesystem::absolute(o.json_path).parent_path();
    if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0) {
      throw ca::invalid_argument("--json " + o.json_path + ": its directory " + dir.string() +
                                 " does not exist or is not writable; allowed: a file in a writable directory");
    }
  }
  if (o.threads > 0) {
    omp_set_num_threads(o.threads);
  } else if (world.local_ranks > 1) {
    // Ranks on one machine share its cores rather than each taking all.
    omp_set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / world.local_ranks));
  }
  // Each rank has its own tiers: a slow tier named by file gets one file per rank.
  if (world.ranks() > 1 && !o.slow_path.empty() && !std::filesystem::is_directory(o.slow_path)) {
    o.slow_path += fmt::format(".rank{}", world.rank());
  }
}

// The data set --data names; it dictates the model's image shape and class count.
nn::DataSplits open_data(Options& o) {
  nn::ModelConfig& model = o.model;
  nn::DataSplits data = nn::open_data(o.data, {model.channels, model.image_size, model.image_size}, model.classes,
                                      o.seed);
  const nn::Dims image = data.train->image_dims();
  if (image.at(1) != image.at(2)) {
    throw ca::invalid_argument(fmt::format("--data {} has {}x{} images; the models take square ones", o.data,
                                           image.at(1), image.at(2)));
  }
  model.channels = image.at(0);
  model.image_size = image.at(1);
  model.classes = data.train->classes();
  fmt::print("data: {}\n", describe_data(o.data, data));
  return data;
}

nn::TrainerOptions trainer_options(const Options& o, const World& world) {
  nn::TrainerOptions options;
  options.seed = o.seed;
  options.optimizer = nn::parse_optimizer(o.optimizer);
  options.sgd.learning_rate = o.learning_rate;
  options.adamw.learning_rate = o.learning_rate;
  if (o.weight_decay >= 0) {
    options.sgd.weight_decay = o.weight_decay;
    options.adamw.weight_decay = o.weight_decay;
  }
  options.data_parallel.communicator = world.communicator;
  options.data_parallel.bucket_bytes = static_cast<std::uint64_t>(std::llround(o.bucket_mib * 1024 * 1024));
  options.update_in_backward = !o.update_after_backward;
  options.parameters_in_primitive_layout = !o.plain_parameters;
  return options;
}

// The footprint of one iteration: the online allocator's, and with
// --planner the planned one, which --fast-fraction is then a share of.
struct Footprints {
  std::uint64_t online = 0;
  std::uint64_t sized = 0;  // what --fast-fraction is a share of
};

Footprints measure_footprints(const Options& o, const std::function<nn::Graph()>& build,
                              const nn::TrainerOptions& options, const ca::plan::Program& program) {
  Footprints f;
  f.online = nn::measure_footprint(build, options);
  f.sized = f.online;
  if (o.planner != "online") {
    const nn::PlannedFootprint planned =
        nn::measure_planned_footprint(build, program, ca::plan::parse_offset_planner(o.planner), options);
    f.sized = planned.footprint;
    fmt::print("offset plan ({}): footprint {} ({:.4f}x its lower bound {}), online allocator {}\n", o.planner,
               ca::format_bytes(planned.footprint),
               static_cast<double>(planned.footprint) / static_cast<double>(planned.lower_bound),
               ca::format_bytes(planned.lower_bound), ca::format_bytes(f.online));
  }
  return f;
}

// How far a policy that looks ahead looks: chosen from the kernel profiles
// of --profile-cache, which time every kernel all-fast and on the emulated
// slow tier.
ca::policy::Lookahead lookahead_from_profiles(const Options& o, const std::function<nn::Graph()>& build,
                                              const nn::TrainerOptions& trainer,
                                              const ca::plan::Program& program) {
  const std::string slow = o.slow_emulation == "none" ? "optane" : o.slow_emulation;
  nn::ProfilerOptions profiler;
  profiler.compute_threads = static_cast<unsigned>(omp_get_max_threads());  // the profiles' key
  profiler.slow_tier = slow;
  profiler.trainer = trainer;
  const ca::plan::KernelProfiles profiles = nn::profile_model(build, o.profile_cache, profiler);
  const ca::EmulationProfile tier = *ca::emulation::profile(slow);
  ca::plan::LookaheadChoice choice;
  const ca::policy::Lookahead lookahead =
      ca::policy::profiled_lookahead(program, profiles, {tier.dram_read_gbps, tier.dram_write_gbps},
                                     {tier.read_gbps, tier.write_gbps}, &choice);
  fmt::print("lookahead from the kernel profiles ({}): {} kernels ({} kernels' copies longer than any window)\n",
             o.profile_cache, lookahead.kernels, choice.uncovered);
  return lookahead;
}

// The policy the run trains under: a policy that plans ahead planned from
// the kernel profiles, one that looks ahead looking as far as they say
// (with --profile-cache), any other as --policy and --planner make it.
std::unique_ptr<ca::policy::Policy> make_policy(const Options& o, const ChosenPolicy& chosen,
                                                const std::function<nn::Graph()>& build,
                                                const nn::TrainerOptions& trainer, const ca::plan::Program& program,
                                                const std::vector<ca::DeviceSpec>& specs) {
  if (chosen.descriptor.plans_ahead()) return autotm_policy(o, chosen.descriptor, build, trainer, specs);
  ca::policy::PolicyOptions options = chosen.options;
  if (!o.profile_cache.empty() && chosen.descriptor.takes_lookahead()) {
    options.lookahead = lookahead_from_profiles(o, build, trainer, program);
  }
  return chosen.descriptor.make(options);
}

void print_counters(const ca::policy::Policy& policy) {
  if (const auto* autotm = dynamic_cast<const ca::policy::AutotmPolicy*>(&policy)) {
    const ca::policy::AutotmPolicy::Counters& c = autotm->counters();
    fmt::print("{}: {} iterations on the plan, {} departed from it, {} test-pass iterations placed by CA:LM; {} "
               "planned moves in and {} out made ({} moves in put off while a write-back held their DRAM or no hole fitted them); {} "
               "objects the plan put in fast memory found no hole there\n",
               autotm->name(), c.iterations_followed, c.departures, c.unplanned_iterations, c.moves_in, c.moves_out,
               c.deferred_in, c.unplanned);
  }
  const auto* planned_policy = dynamic_cast<const ca::policy::CachedArraysPolicy*>(&policy);
  if (const ca::policy::PlannedPlacement* placement =
          planned_policy != nullptr ? planned_policy->planned_placement() : nullptr) {
    const ca::policy::PlannedPlacement::Counters& c = placement->counters();
    fmt::print("offset plan ({}): {} objects at planned offsets, {} unplanned (no plan yet, or "
               "unknown to it), {} slots taken, {} placed above the plan, {} slots beyond the fast tier; {} plans made\n",
               ca::plan::to_string(placement->planner()), c.planned, c.unplanned, c.collisions, c.above, c.beyond, c.plans);
  }
}

void print_data_parallel(const nn::Trainer& trainer, double step_seconds) {
  const nn::GradientBuckets* buckets = trainer.gradient_buckets();
  if (buckets == nullptr) return;
  const nn::GradientBuckets::Counters& c = buckets->counters();
  fmt::print("data parallel: {} steps, {} bucket sums ({} per rank); rank 0 waited {:.2f} s of its {:.2f} s "
             "of training steps for the other ranks ({:.1f}%: communication not hidden behind the backward "
             "pass, and load imbalance)\n",
             c.steps, c.buckets, ca::format_bytes(c.bytes), trainer.seconds_waiting(), step_seconds,
             step_seconds > 0 ? 100.0 * trainer.seconds_waiting() / step_seconds : 0.0);
}

// Returns the number of the signal that stopped the training (0: none).
int run(Options o, const World& world, const nn::StopSignals& stop) {
  prepare(o, world);
  const int ranks = world.ranks();
  const nn::DataSplits data = open_data(o);
  const nn::ModelConfig& model = o.model;
  // Data parallel: --batch is the global batch; each rank's graph takes its shard.
  nn::ModelConfig shard = model;
  shard.batch = nn::shard_batch(model.batch, ranks);
  const auto build = [&] { return nn::build_model(shard); };
  const nn::TrainerOptions options = trainer_options(o, world);
  // The program of an iteration, for the policies that plan ahead (ca-lma,
  // ca-lmpa, offset plans); the others ignore it.
  const ca::plan::Program program = nn::dry_run_program(build, options);
  const ChosenPolicy chosen = chosen_policy(o);
  const Footprints footprints = measure_footprints(o, build, options, program);
  const std::uint64_t footprint = footprints.sized;
  std::uint64_t fast_bytes = o.fast_bytes;
  if (fast_bytes == 0) {
    fast_bytes = static_cast<std::uint64_t>(std::llround(o.fast_fraction * static_cast<double>(footprint)));
  }
  fast_bytes = std::max<std::uint64_t>(fast_bytes, 4096);
  std::vector<ca::DeviceSpec> specs = devices(o, std::max(footprint, footprints.online), fast_bytes);
  std::unique_ptr<ca::policy::Policy> policy = make_policy(o, chosen, build, options, program, specs);
  ca::MoverOptions mover;
  mover.threads = o.mover_threads;
  ca::Runtime rt(std::move(specs), std::move(policy), mover);
  rt.set_program(program);
  nn::Graph graph = build();
  fmt::print("model {} (width {}), batch {}{}, {}x{}x{} images, {} classes: {} parameters\n", nn::model_name(model),
             model.width, model.batch,
             ranks > 1 ? fmt::format(" ({} per rank on {} ranks)", shard.batch, ranks) : std::string(),
             model.channels, model.image_size, model.image_size, model.classes, graph.parameter_count());
  fmt::print("footprint of one iteration{} {} | fast tier {} ({:.0f}%) | policy {} | oneDNN threads {} | {} {} | "
             "weights {}\n",
             ranks > 1 ? " (per rank)" : "", ca::format_bytes(footprint), ca::format_bytes(fast_bytes),
             100.0 * static_cast<double>(fast_bytes) / static_cast<double>(footprint),
             o.memory_mode ? "none (2LM memory mode: the fast tier is a hardware-like cache)" : rt.policy_name(),
             omp_get_max_threads(), options.optimizer == nn::Optimizer::adamw ? "AdamW" : "SGD",
             options.update_in_backward && ranks == 1 ? "in the backward pass" : "after the backward pass",
             options.parameters_in_primitive_layout ? "in their primitives' layout" : "plain");
  for (ca::DeviceId d = 0; d < rt.manager().device_count(); ++d) fmt::print("  {}\n", rt.manager().describe(d));

  nn::Trainer trainer(&rt, std::move(graph), options);  // data parallel: rank 0's parameters on every rank
  if (const nn::GradientBuckets* buckets = trainer.gradient_buckets()) {
    const std::size_t n = buckets->bucket_count();
    fmt::print("data parallel over MPI: {} ranks, each with its own tiers as above; gradients averaged in {} "
               "bucket{} of up to {:.4g} MiB, {} while the backward pass goes on; rank 0 tests and writes "
               "checkpoints\n",
               ranks, n, n == 1 ? "" : "s", o.bucket_mib, n == 1 ? "summed" : "each summed");
  }
  const Trained trained = train(rt, trainer, data, o, stop);
  print_data_parallel(trainer, trained.step_seconds);
  print_counters(rt.policy());
  return trained.stop_reason;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN or ViT whose tensors live on a fast and a slow memory tier"};
  Options options;
  try {
    apply_environment(options);
  } catch (const ca::invalid_argument& e) {
    fmt::print(stderr, "train_cnn: {}\n", e.what());
    return 2;
  }
  add_options(app, options);
  std::string footer = "Environment (what a flag above also sets is its default; the flag wins):";
  for (const ca::EnvironmentVariable& v : ca::environment_variables()) {
    footer += fmt::format("\n  {:<27} {} ({})", v.name, v.meaning, v.allowed);
  }
  app.footer(footer);
  CLI11_PARSE(app, argc, argv);
  options.model = nn::canonical_model(options.model);  // --model inception-v4
  try {
    if (!options.vit_size.empty()) {
      const int depth = options.model.depth;
      options.model = nn::vit_size(options.model, options.vit_size);
      if (app.count("--depth") > 0) options.model.depth = depth;  // fewer or more blocks of that size
    } else if (options.model.family == "vit" && app.count("--depth") == 0) {
      options.model.depth = 6;
    }
    if (options.model.family == "vit" && app.count("--width") == 0) options.model.width = 1;
  } catch (const ca::invalid_argument& e) {
    fmt::print(stderr, "train_cnn: {}\n", e.what());
    return 2;
  }
  if (options.learning_rate == 0) options.learning_rate = options.optimizer == "adamw" ? 1e-3f : 0.1f;
  // --fast-fraction on the command line wins over CACHEDARRAYS_FAST_BYTES.
  if (app.count("--fast-fraction") > 0 && app.count("--fast-bytes") == 0) options.fast_bytes = 0;
  World world;
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
    world.communicator = mpi.get();
    world.local_ranks = mpi->local_size();
    if (mpi->rank() > 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  }
#endif
  // A rank that fails ends the whole job: the others would wait for it.
  const auto fail = [&](const std::string& message) {
    if (world.communicator != nullptr) world.communicator->abort("train_cnn: " + message);
    fmt::print(stderr, "train_cnn: {}\n", message);
    return 1;
  };
  try {
    // After MPI's start, which may install handlers of its own.
    const nn::StopSignals stop("train_cnn", world.communicator != nullptr ? nn::StopSignals::Output::dropped
                                                                          : nn::StopSignals::Output::kept);
    const int signal = run(options, world, stop);
    std::fflush(stdout);
    return signal != 0 ? 128 + signal : 0;
  } catch (const ca::error& e) {
    return fail(e.what());
  } catch (const dnnl::error& e) {
    return fail(fmt::format("oneDNN error: {} (status {})", e.what(), static_cast<int>(e.status)));
  }
}
