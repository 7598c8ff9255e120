#include "cachedarrays/nn/fit.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <span>
#include <string>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/checkpoint.hpp"

namespace cachedarrays::nn {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string dims_string(const Dims& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i == 0 ? "" : "x") + std::to_string(dims[i]);
  return s;
}

// The graph's batch size and image dims, after checking the data fits them.
std::pair<std::int64_t, Dims> checked_shape(const Trainer& trainer, const Dataset& data, const char* which) {
  const Graph& g = trainer.graph();
  const Dims& input = g.value(g.values_with_role(ValueRole::input).front()).dims;
  const Dims image(input.begin() + 1, input.end());
  if (data.image_dims() != image) {
    throw invalid_argument("cachedarrays::nn: fit: the " + std::string(which) + " set has " +
                           dims_string(data.image_dims()) + " images but the model takes " + dims_string(image) +
                           "; build the model from the data set's image_dims()");
  }
  const Node& loss = g.nodes().at(static_cast<std::size_t>(g.value(g.loss()).producer));
  const std::int64_t classes = g.value(loss.inputs.at(0)).dims.at(1);
  if (data.classes() > classes) {
    throw invalid_argument("cachedarrays::nn: fit: the " + std::string(which) + " set has " +
                           std::to_string(data.classes()) + " classes but the model only " + std::to_string(classes) +
                           "; build the model from the data set's classes()");
  }
  return {input.at(0), image};
}

std::string metadata_value(const Checkpoint& c, const std::string& key) {
  for (const auto& [k, v] : c.metadata) {
    if (k == key) return v;
  }
  return {};
}

// Whether this call has run the steps FitOptions::max_iterations allows.
bool fit_cap_reached(const FitOptions& options, const FitResult& result) {
  return options.max_iterations > 0 && result.iterations >= options.max_iterations;
}

}  // namespace

std::pair<double, double> evaluate_dataset(Trainer& trainer, const Dataset& test, std::int64_t limit) {
  const auto [batch, image] = checked_shape(trainer, test, "test");
  BatchSamplerOptions options;
  options.batch = batch;
  options.shuffle = false;
  options.drop_last = false;
  options.limit = limit;
  BatchSampler sampler(test, options);
  sampler.start_epoch(0);
  std::vector<float> images(static_cast<std::size_t>(batch * element_count(image)));
  std::vector<float> labels(static_cast<std::size_t>(batch));
  Runtime* rt = trainer.context().runtime();
  double loss = 0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
  std::int64_t valid = 0;
  while (sampler.next(images, labels, &valid)) {
    const Trainer::Evaluation e = trainer.evaluate(images, labels, valid);
    if (rt != nullptr) rt->collect();
    loss += e.loss_sum;
    correct += e.correct;
    samples += e.samples;
  }
  return {loss / static_cast<double>(samples), static_cast<double>(correct) / static_cast<double>(samples)};
}

namespace {

// What every step of a fit reads: the trainer, the options, and this rank's
// place among the ranks. Data parallel: every rank draws the same global
// batch and trains on its shard; rank 0 alone tests and writes checkpoints.
struct FitRun {
  Trainer& trainer;
  const FitOptions& options;
  Communicator* comm;
  int ranks;
  int rank;
  std::int64_t batch;  // this rank's shard of a global batch: the model's batch size
  std::int64_t global_batch;

  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }
};

// The run of a model built for batches of `batch`, once the options are
// checked against it.
FitRun fit_run(Trainer& trainer, const FitOptions& options, std::int64_t batch) {
  Communicator* comm = trainer.communicator();
  const int ranks = comm != nullptr ? comm->size() : 1;
  const int rank = comm != nullptr ? comm->rank() : 0;
  const std::int64_t global_batch = batch * ranks;
  if (options.train.batch != global_batch) {
    throw invalid_argument(
        "cachedarrays::nn: fit: batches of " + std::to_string(options.train.batch) +
        " samples for a model built for batches of " + std::to_string(batch) +
        (ranks > 1 ? " on each of " + std::to_string(ranks) + " ranks (" + std::to_string(global_batch) + " in all)"
                   : std::string()) +
        "; set FitOptions::train.batch to the model's" + (ranks > 1 ? " times the ranks" : ""));
  }
  if (options.epochs < 1 || options.max_iterations < 0) {
    throw invalid_argument("cachedarrays::nn: fit: " + std::to_string(options.epochs) + " epochs and at most " +
                           std::to_string(options.max_iterations) +
                           " iterations; epochs must be at least 1 and the iteration cap at least 0 (0: none)");
  }
  return {trainer, options, comm, ranks, rank, batch, global_batch};
}

// Where a run starts: epochs done, and batches done of the next epoch.
struct FitStart {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
};

// Resumes from the checkpoint: the trainer's state, and the data order's
// seed into `sampling`. Data parallel: rank 0 reads the checkpoint and hands
// its state and position to the others (a rank that fails here ends the job).
FitStart resume_from_checkpoint(const FitRun& run, BatchSamplerOptions& sampling) {
  const FitOptions& options = run.options;
  if (options.checkpoint.empty()) {
    throw invalid_argument(
        "cachedarrays::nn: fit: resume asks for a checkpoint but none is named; set "
        "FitOptions::checkpoint (train_cnn --checkpoint FILE)");
  }
  std::array<std::int64_t, 3> position{};  // epoch, batch, seed
  if (run.rank == 0) {
    const Checkpoint c = load_checkpoint(options.checkpoint, options.model);
    if (c.batch > 0 && metadata_value(c, "batch_size") != std::to_string(run.global_batch)) {
      throw invalid_argument("cachedarrays::nn: fit: checkpoint '" + options.checkpoint.string() +
                             "' stopped inside epoch " + std::to_string(c.epoch + 1) + " with batches of " +
                             metadata_value(c, "batch_size") + " samples; resume it with the same batch size, not " +
                             std::to_string(run.global_batch));
    }
    run.trainer.load_state(c.tensors);  // checks every tensor before it sets any
    position = {c.epoch, c.batch, static_cast<std::int64_t>(c.seed)};
  }
  if (run.comm != nullptr) {
    run.trainer.broadcast_state(0);
    run.comm->broadcast(std::as_writable_bytes(std::span<std::int64_t>(position)), 0, "the checkpoint's position");
  }
  const auto seed = static_cast<std::uint64_t>(position[2]);
  if (seed != sampling.seed) {
    run.log("the checkpoint's seed " + std::to_string(seed) + " orders the data (not " + std::to_string(sampling.seed) +
            "), as in the run that wrote it");
    sampling.seed = seed;
  }
  const FitStart start{position[0], position[1]};
  run.log("resumed from " + options.checkpoint.string() + ": " + std::to_string(start.epoch) + " epochs done" +
          (start.batch > 0
               ? " and " + std::to_string(start.batch) + " batches of epoch " + std::to_string(start.epoch + 1)
               : std::string()));
  return start;
}

// Data parallel: no rank goes on, or ends its process, before rank 0's
// checkpoint is durable. Ranks that stop together exit together, and a
// launcher that ends the job when one rank exits (mpirun) would otherwise
// kill rank 0 in the middle of its save.
void wait_for_checkpoint(const FitRun& run) {
  if (run.comm == nullptr || run.ranks == 1) return;
  std::array<std::byte, 1> saved{};
  run.comm->broadcast(saved, 0, "the checkpoint's save");
}

// Writes the checkpoint (if one is named; rank 0 only) after `epochs_done`
// epochs and `batches_done` batches of the next.
void save_fit_checkpoint(const FitRun& run, std::uint64_t seed, std::int64_t epochs_done, std::int64_t batches_done) {
  const FitOptions& options = run.options;
  if (options.checkpoint.empty()) return;
  if (run.rank != 0) {
    wait_for_checkpoint(run);
    return;
  }
  Checkpoint c;
  c.model = options.model;
  c.epoch = epochs_done;
  c.batch = batches_done;
  c.seed = seed;
  c.metadata = {{"batch_size", std::to_string(run.global_batch)}, {"schedule", options.schedule.describe()}};
  c.tensors = run.trainer.state();
  save_checkpoint(options.checkpoint, c);
  wait_for_checkpoint(run);  // before the log line, whose output may block
  run.log("checkpoint " + options.checkpoint.string() + ": " + std::to_string(epochs_done) + " epochs" +
          (batches_done > 0 ? " and " + std::to_string(batches_done) + " batches" : std::string()));
}

// Asks FitOptions::stop_requested. Data parallel: every rank's answer goes
// to every rank (each puts its own at its place in a vector the ranks
// sum), so that all of them stop at the same step, with the largest.
int stop_request(const FitRun& run) {
  if (!run.options.stop_requested) return 0;
  const int mine = run.options.stop_requested();
  if (run.comm == nullptr || run.ranks == 1) return mine;
  std::vector<double> answers(static_cast<std::size_t>(run.ranks), 0.0);
  answers[static_cast<std::size_t>(run.rank)] = mine;
  run.comm->wait(run.comm->start_sum(std::span<double>(answers), "the ranks' stop requests"));
  return static_cast<int>(*std::max_element(answers.begin(), answers.end()));
}

// Removes what saves of dead processes left beside the checkpoint (rank 0,
// which alone writes it), saying so.
void remove_stale_temporaries(const FitRun& run) {
  if (run.options.checkpoint.empty() || run.rank != 0) return;
  const std::vector<std::filesystem::path> removed = remove_stale_checkpoint_temporaries(run.options.checkpoint);
  if (removed.empty()) return;
  std::string names;
  for (const auto& path : removed) names += (names.empty() ? "" : ", ") + path.filename().string();
  run.log("removed " + std::to_string(removed.size()) + " temporary file" + (removed.size() == 1 ? "" : "s") +
          " of checkpoint saves whose process no longer runs: " + names);
}

// The global batch the sampler fills, and this rank's shard of it.
class GlobalBatch {
 public:
  GlobalBatch(const FitRun& run, const Dims& image)
      : shard_images_(static_cast<std::size_t>(run.batch * element_count(image))),
        images_(shard_images_ * static_cast<std::size_t>(run.ranks)),
        labels_(static_cast<std::size_t>(run.global_batch)),
        rank_(static_cast<std::size_t>(run.rank)),
        shard_labels_(static_cast<std::size_t>(run.batch)) {}

  std::vector<float>& images() { return images_; }
  std::vector<float>& labels() { return labels_; }
  [[nodiscard]] std::span<const float> my_images() const {
    return std::span<const float>(images_).subspan(shard_images_ * rank_, shard_images_);
  }
  [[nodiscard]] std::span<const float> my_labels() const {
    return std::span<const float>(labels_).subspan(shard_labels_ * rank_, shard_labels_);
  }

 private:
  std::size_t shard_images_;
  std::vector<float> images_;
  std::vector<float> labels_;
  std::size_t rank_;
  std::size_t shard_labels_;
};

// Trains the batches of `epoch` from the sampler's position until the
// epoch's end or the iteration cap, counting into `result`; the epoch's
// training figures.
FitEpoch train_epoch(const FitRun& run, BatchSampler& sampler, GlobalBatch& data, std::int64_t epoch,
                     FitResult& result) {
  const FitOptions& options = run.options;
  const std::int64_t batches = sampler.batches_per_epoch();
  Runtime* rt = run.trainer.context().runtime();
  FitEpoch e;
  e.epoch = epoch;
  double loss_sum = 0;
  while (sampler.position() < batches && !fit_cap_reached(options, result)) {
    result.stop_reason = stop_request(run);
    if (result.stop_reason != 0) break;
    FitStep s;
    s.epoch = epoch;
    s.batch = sampler.position();
    s.batches = batches;
    s.iteration = result.iterations + 1;
    s.learning_rate = options.schedule.at(epoch, s.batch, batches, options.epochs);
    (void)sampler.next(data.images(), data.labels());
    run.trainer.set_learning_rate(s.learning_rate);
    if (options.before_step) options.before_step(s);
    const auto t0 = Clock::now();
    s.loss = run.trainer.step(data.my_images(), data.my_labels());
    if (rt != nullptr) rt->collect();  // end of iteration: deferred frees happen here
    s.seconds = seconds_since(t0);
    ++result.iterations;
    ++e.batches;
    loss_sum += s.loss;
    e.seconds += s.seconds;
    if (options.after_step) options.after_step(s);
  }
  e.complete = sampler.position() == batches;
  e.stop_reason = e.complete ? 0 : result.stop_reason;
  e.train_loss = e.batches > 0 ? loss_sum / static_cast<double>(e.batches) : 0;
  e.images_per_second = e.seconds > 0 ? static_cast<double>(e.batches * run.global_batch) / e.seconds : 0;
  return e;
}

// The test pass after a complete epoch, into `e`. Rank 0 tests (its
// parameters are every rank's); the others get its figures.
void test_epoch(const FitRun& run, const Dataset& test, FitEpoch& e) {
  const auto t0 = Clock::now();
  std::array<double, 2> tested{};
  if (run.rank == 0) {
    const auto [loss, accuracy] = evaluate_dataset(run.trainer, test, run.options.test_limit);
    tested = {loss, accuracy};
  }
  if (run.comm != nullptr)
    run.comm->broadcast(std::as_writable_bytes(std::span<double>(tested)), 0, "the test figures");
  e.test_seconds = seconds_since(t0);
  e.test_loss = tested[0];
  e.test_accuracy = tested[1];
}

}  // namespace

FitResult fit(Trainer& trainer, const Dataset& train, const Dataset* test, const FitOptions& options) {
  const auto [batch, image] = checked_shape(trainer, train, "training");
  if (test != nullptr) (void)checked_shape(trainer, *test, "test");
  const FitRun run = fit_run(trainer, options, batch);

  FitResult result;
  BatchSamplerOptions sampling = options.train;
  remove_stale_temporaries(run);
  FitStart start;
  if (options.resume) {
    start = resume_from_checkpoint(run, sampling);
    result.resumed_epoch = start.epoch;
    result.resumed_batch = start.batch;
  }
  BatchSampler sampler(train, sampling);
  const std::int64_t batches = sampler.batches_per_epoch();
  if (start.batch > batches) {
    throw invalid_argument("cachedarrays::nn: fit: checkpoint '" + options.checkpoint.string() + "' is " +
                           std::to_string(start.batch) + " batches into an epoch of " + std::to_string(batches) +
                           "; resume it with the training set (and limit) it was written with");
  }
  result.epochs_done = start.epoch;
  result.batches_done = start.batch;
  if (start.epoch >= options.epochs) {
    run.log("the checkpoint has all " + std::to_string(options.epochs) + " epochs done; ask for more to train on");
    return result;
  }

  GlobalBatch data(run, image);
  for (std::int64_t epoch = start.epoch; epoch < options.epochs; ++epoch) {
    if (fit_cap_reached(options, result)) {
      result.stopped_early = true;
      break;
    }
    if (epoch == start.epoch && start.batch > 0) {
      sampler.seek(epoch, start.batch);
    } else {
      sampler.start_epoch(epoch);
    }
    FitEpoch e = train_epoch(run, sampler, data, epoch, result);
    if (e.batches == 0 && result.stop_reason != 0) {  // asked to stop before its first step: nothing to record
      result.stopped_early = true;
      break;
    }
    if (e.complete && test != nullptr) test_epoch(run, *test, e);
    result.epochs_done = e.complete ? epoch + 1 : epoch;
    result.batches_done = e.complete ? 0 : sampler.position();
    if (e.batches > 0) save_fit_checkpoint(run, sampling.seed, result.epochs_done, result.batches_done);
    result.epochs.push_back(e);
    if (options.after_epoch) options.after_epoch(e);
    if (!e.complete) {
      result.stopped_early = true;
      break;
    }
  }
  return result;
}

}  // namespace cachedarrays::nn
