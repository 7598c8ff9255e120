#include "cachedarrays/nn/training_run.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/data_parallel.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/stop_signals.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/planned_placement.hpp"
#include "cachedarrays/runtime/environment.hpp"
#include "cachedarrays/runtime/runtime.hpp"
#include "nn/progress_bar.hpp"
#include "nn/training_setup.hpp"

namespace cachedarrays::nn {

namespace {

// When the process started, near enough (the library's static
// initialisation): a user's wait for each epoch includes the setup.
const std::chrono::steady_clock::time_point training_process_start = std::chrono::steady_clock::now();

// The threads OpenMP starts with when the program sets none: OMP_NUM_THREADS
// (its first number), or else the machine's hardware threads.
int openmp_default_threads() {
  if (const std::optional<int> threads = openmp_threads_from_environment()) return *threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// fit()'s options for the run, its hooks aside.
FitOptions training_fit_options(const TrainingOptions& o, const TrainingProcess& process) {
  if (o.resume && o.checkpoint.empty()) throw invalid_argument("--resume needs --checkpoint FILE to resume from");
  const bool synthetic = o.data == "synthetic";
  FitOptions fit;
  fit.epochs = o.epochs;
  fit.max_iterations = o.iterations;
  fit.train.batch = o.model.batch;
  fit.train.seed = o.seed;
  fit.train.crop_padding = o.crop_padding;
  fit.train.horizontal_flip = o.flip;
  fit.train.limit = o.train_limit > 0 || !synthetic ? o.train_limit : 5 * o.model.batch;
  fit.test_limit = o.test_limit > 0 || !synthetic ? o.test_limit : 4 * o.model.batch;
  fit.schedule = LearningRateSchedule::parse(o.lr_schedule, o.learning_rate);
  fit.checkpoint = o.checkpoint;
  fit.resume = o.resume;
  fit.model = model_identity(o.model);
  fit.stop_requested = process.stop_requested;
  return fit;
}

// The run's setup in a line each: the model, the footprint, tiers and
// policy, and each device.
void print_training_setup(const TrainingOptions& o, const ModelConfig& shard, std::int64_t parameters,
                          std::uint64_t footprint, std::uint64_t fast_bytes, Runtime& rt, const TrainerOptions& options,
                          const TrainingProcess& process) {
  const ModelConfig& model = o.model;
  const int ranks = process.communicator != nullptr ? process.communicator->size() : 1;
  fmt::print("model {} (width {}), batch {}{}, {}x{}x{} images, {} classes: {} parameters\n", model_name(model),
             model.width, model.batch,
             ranks > 1 ? fmt::format(" ({} per rank on {} ranks)", shard.batch, ranks) : std::string(), model.channels,
             model.image_size, model.image_size, model.classes, parameters);
  fmt::print(
      "footprint of one iteration{} {} | fast tier {} ({:.0f}%) | policy {} | oneDNN threads {} | {} {} | "
      "weights {}\n",
      ranks > 1 ? " (per rank)" : "", format_bytes(footprint), format_bytes(fast_bytes),
      100.0 * static_cast<double>(fast_bytes) / static_cast<double>(footprint),
      o.memory_mode ? "none (2LM memory mode: the fast tier is a hardware-like cache)" : rt.policy_name(),
      process.compute_threads, options.optimizer == Optimizer::adamw ? "AdamW" : "SGD",
      options.update_in_backward && ranks == 1 ? "in the backward pass" : "after the backward pass",
      options.parameters_in_primitive_layout ? "in their primitives' layout" : "plain");
  for (DeviceId d = 0; d < rt.manager().device_count(); ++d) fmt::print("  {}\n", rt.manager().describe(d));
}

// The data-parallel trainer's buckets (nothing for one process).
void print_data_parallel_setup(const TrainingOptions& o, const Trainer& trainer, int ranks) {
  if (const GradientBuckets* buckets = trainer.gradient_buckets()) {
    const std::size_t n = buckets->bucket_count();
    fmt::print(
        "data parallel over MPI: {} ranks, each with its own tiers as above; gradients averaged in {} "
        "bucket{} of up to {:.4g} MiB, {} while the backward pass goes on; rank 0 tests and writes "
        "checkpoints\n",
        ranks, n, n == 1 ? "" : "s", o.bucket_mib, n == 1 ? "summed" : "each summed");
  }
}

// What the run is about to do, in one line.
void print_training_plan(const TrainingOptions& o, const FitOptions& fit, const DataSplits& data) {
  fmt::print(
      "training: {} epochs over {} of {} training images{}, batches of {}, learning rate {}, seed {}{}\n", o.epochs,
      fit.train.limit > 0 ? std::to_string(fit.train.limit) : std::string("all"),
      o.data == "synthetic" ? std::string("endless synthetic") : std::to_string(data.train->size()),
      o.crop_padding > 0 || o.flip ? fmt::format(" (augmented: crop padding {}, flip {})", o.crop_padding, o.flip)
                                   : std::string(),
      o.model.batch, fit.schedule.describe(), o.seed,
      data.test ? fmt::format("; tested on {} images after each epoch",
                              fit.test_limit > 0 ? std::min(fit.test_limit, data.test->size()) : data.test->size())
                : std::string("; no test set"));
  std::fflush(stdout);
}

// An epoch's line: its losses, its test, its speed and its traffic.
void print_epoch_line(const TrainingOptions& o, const TrainedEpoch& r) {
  const FitEpoch& e = r.epoch;
  const std::string test = e.test_accuracy
                               ? fmt::format("test loss {:.4f}  test accuracy {:.4f}", *e.test_loss, *e.test_accuracy)
                           : e.complete    ? std::string("no test set")
                           : e.stop_reason ? fmt::format("stopped by {}, not tested", StopSignals::name(e.stop_reason))
                                           : std::string("cut short by --iterations, not tested");
  fmt::print(
      "epoch {:>2}/{}  {} batches  train loss {:.4f}  {}  {:7.1f} img/s  {:.1f} s  fast->slow {:>10}  "
      "slow->fast {:>10}\n",
      e.epoch + 1, o.epochs, e.batches, e.train_loss, test, e.images_per_second, e.seconds + e.test_seconds,
      format_bytes(r.fast_to_slow_bytes), format_bytes(r.slow_to_fast_bytes));
  std::fflush(stdout);
}

// Trains for the epochs (or o.iterations), with a progress bar on a
// terminal and a line per epoch; the last iteration is traced when
// o.trace_path asks for it. The report's run figures are filled in.
void train_epochs(Runtime& rt, Trainer& trainer, const DataSplits& data, const TrainingOptions& o,
                  const TrainingProcess& process, TrainingReport& report) {
  FitOptions fit = training_fit_options(o, process);
  detail::ProgressBar bar;
  fit.log = [&](const std::string& line) {
    bar.clear();
    fmt::print("{}\n", line);
  };
  std::vector<double> seconds;
  std::vector<float> losses;  // of the current epoch's steps
  const Stats start = rt.stats();
  Stats epoch_start = start;
  fit.before_step = [&](const FitStep& s) {
    const bool last =
        o.iterations > 0 ? s.iteration == o.iterations : s.epoch + 1 == o.epochs && s.batch + 1 == s.batches;
    if (!o.trace_path.empty() && last) rt.start_trace();
  };
  fit.after_step = [&](const FitStep& s) {
    seconds.push_back(s.seconds);
    losses.push_back(s.loss);
    // Once a stop is asked for, the checkpoint comes first: mpirun,
    // signalled, stops reading the ranks' output, and a redrawn bar would
    // wait for it.
    if (!process.stop_requested || process.stop_requested() == 0) bar.update(s, o.epochs, o.model.batch);
  };
  fit.after_epoch = [&](const FitEpoch& e) {
    const Stats delta = rt.stats().since(epoch_start);
    epoch_start = rt.stats();
    report.epochs.push_back(
        {e, delta.bytes_copied[0][1], delta.bytes_copied[1][0],
         std::chrono::duration<double>(std::chrono::steady_clock::now() - training_process_start).count(),
         std::move(losses)});
    losses.clear();
    bar.clear();
    print_epoch_line(o, report.epochs.back());
  };
  print_training_plan(o, fit, data);
  report.fit = nn::fit(trainer, *data.train, data.test.get(), fit);
  bar.clear();
  report.traffic = rt.stats().since(start);
  report.step_seconds = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  // The first iteration creates oneDNN primitives: the speed is the rest's.
  const std::size_t skip = seconds.size() > 1 ? 1 : 0;
  report.seconds_per_iteration = std::accumulate(seconds.begin() + static_cast<long>(skip), seconds.end(), 0.0) /
                                 static_cast<double>(seconds.size() - skip);
}

// Where the updates found the optimizer's state: the moments (AdamW) or
// momentum (SGD) a policy may leave on the slow tier, per step and device.
std::vector<std::pair<std::string, std::uint64_t>> optimizer_state_per_step(const Trainer& trainer, const Runtime& rt) {
  const Trainer::OptimizerStateTraffic& state = trainer.optimizer_state_traffic();
  const std::vector<std::string> device_names = rt.device_names();
  std::vector<std::pair<std::string, std::uint64_t>> per_step;
  if (state.steps == 0) return per_step;
  for (std::size_t d = 0; d < state.bytes_by_device.size() && d < device_names.size(); ++d) {
    per_step.emplace_back(device_names[d], state.bytes_by_device[d] / state.steps);
  }
  return per_step;
}

// What the data-parallel trainer and the policy counted, a line each.
std::vector<std::string> training_counters(const Trainer& trainer, const policy::Policy& policy, double step_seconds) {
  std::vector<std::string> lines;
  if (const GradientBuckets* buckets = trainer.gradient_buckets()) {
    const GradientBuckets::Counters& c = buckets->counters();
    lines.push_back(
        fmt::format("data parallel: {} steps, {} bucket sums ({} per rank); rank 0 waited {:.2f} s of its {:.2f} s "
                    "of training steps for the other ranks ({:.1f}%: communication not hidden behind the backward "
                    "pass, and load imbalance)",
                    c.steps, c.buckets, format_bytes(c.bytes), trainer.seconds_waiting(), step_seconds,
                    step_seconds > 0 ? 100.0 * trainer.seconds_waiting() / step_seconds : 0.0));
  }
  if (const auto* autotm = dynamic_cast<const policy::AutotmPolicy*>(&policy)) {
    const policy::AutotmPolicy::Counters& c = autotm->counters();
    lines.push_back(fmt::format(
        "{}: {} iterations on the plan, {} departed from it, {} test-pass iterations placed by CA:LM; {} "
        "planned moves in and {} out made ({} moves in put off while a write-back held their DRAM or no hole "
        "fitted them); {} objects the plan put in fast memory found no hole there",
        autotm->name(), c.iterations_followed, c.departures, c.unplanned_iterations, c.moves_in, c.moves_out,
        c.deferred_in, c.unplanned));
  }
  const auto* planned_policy = dynamic_cast<const policy::CachedArraysPolicy*>(&policy);
  if (const policy::PlannedPlacement* placement =
          planned_policy != nullptr ? planned_policy->planned_placement() : nullptr) {
    const policy::PlannedPlacement::Counters& c = placement->counters();
    lines.push_back(fmt::format(
        "offset plan ({}): {} objects at planned offsets, {} unplanned (no plan yet, or unknown to it), {} slots "
        "taken, {} placed above the plan, {} slots beyond the fast tier; {} plans made",
        plan::to_string(placement->planner()), c.planned, c.unplanned, c.collisions, c.above, c.beyond, c.plans));
  }
  return lines;
}

// The report's fields that the options and the process settle.
TrainingReport report_of(const TrainingOptions& o, const TrainingProcess& process) {
  TrainingReport report;
  report.model = model_identity(o.model);
  report.batch = o.model.batch;
  report.data = o.data;
  report.fast_fraction = o.fast_fraction;
  report.threads = process.compute_threads;
  report.optimizer = o.optimizer;
  report.epochs_asked = o.epochs;
  report.checkpoint = o.checkpoint;
  report.rank0 = process.communicator == nullptr || process.communicator->rank() == 0;
  return report;
}

}  // namespace

TrainingReport run_training(TrainingOptions o, const TrainingProcess& caller) {
  TrainingProcess process = caller;
  if (process.compute_threads <= 0) process.compute_threads = openmp_default_threads();
  detail::prepare_training(o, process);
  const int ranks = process.communicator != nullptr ? process.communicator->size() : 1;
  const DataSplits data = detail::open_training_data(o);
  // Data parallel: the batch is the global batch; each rank's graph takes its shard.
  ModelConfig shard = o.model;
  shard.batch = shard_batch(o.model.batch, ranks);
  const auto build = [&] { return build_model(shard); };
  const TrainerOptions options = detail::training_trainer_options(o, process.communicator);
  // The program of an iteration, for the policies that plan ahead (ca-lma,
  // ca-lmpa, offset plans); the others ignore it.
  const plan::Program program = dry_run_program(build, options);
  const detail::TrainingPolicyChoice chosen = detail::choose_training_policy(o);
  const detail::TrainingFootprints footprints = detail::measure_training_footprints(o, build, options, program);
  const std::uint64_t fast_bytes = detail::training_fast_bytes(o, footprints.sized);
  std::vector<DeviceSpec> specs =
      detail::training_devices(o, std::max(footprints.sized, footprints.online), fast_bytes);
  std::unique_ptr<policy::Policy> policy =
      detail::make_training_policy(o, chosen, build, options, program, specs, process);
  MoverOptions mover;
  mover.threads = o.mover_threads;
  Runtime rt(std::move(specs), std::move(policy), mover);
  rt.set_program(program);
  Graph graph = build();
  print_training_setup(o, shard, graph.parameter_count(), footprints.sized, fast_bytes, rt, options, process);
  Trainer trainer(&rt, std::move(graph), options);  // data parallel: rank 0's parameters on every rank
  print_data_parallel_setup(o, trainer, ranks);

  TrainingReport report = report_of(o, process);
  train_epochs(rt, trainer, data, o, process, report);
  if (!o.trace_path.empty() && rt.trace() != nullptr) {
    rt.stop_trace();
    rt.trace()->save(o.trace_path, rt.device_names());
    fmt::print("trace of the last iteration: {} ({} events)\n", o.trace_path, rt.trace()->events().size());
  }
  report.policy = rt.policy_name();
  report.optimizer_state_per_step = optimizer_state_per_step(trainer, rt);
  report.counters = training_counters(trainer, rt.policy(), report.step_seconds);
  return report;
}

}  // namespace cachedarrays::nn
