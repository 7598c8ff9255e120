#include "cachedarrays/nn/fit.hpp"

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

FitResult fit(Trainer& trainer, const Dataset& train, const Dataset* test, const FitOptions& options) {
  const auto [batch, image] = checked_shape(trainer, train, "training");
  if (test != nullptr) (void)checked_shape(trainer, *test, "test");
  // Data parallel: every rank draws the same global batch and trains on
  // its shard; rank 0 alone tests and writes checkpoints.
  Communicator* comm = trainer.communicator();
  const int ranks = comm != nullptr ? comm->size() : 1;
  const int rank = comm != nullptr ? comm->rank() : 0;
  const std::int64_t global_batch = batch * ranks;
  if (options.train.batch != global_batch) {
    throw invalid_argument("cachedarrays::nn: fit: batches of " + std::to_string(options.train.batch) +
                           " samples for a model built for batches of " + std::to_string(batch) +
                           (ranks > 1 ? " on each of " + std::to_string(ranks) + " ranks (" +
                                            std::to_string(global_batch) + " in all)"
                                      : std::string()) +
                           "; set FitOptions::train.batch to the model's" + (ranks > 1 ? " times the ranks" : ""));
  }
  if (options.epochs < 1 || options.max_iterations < 0) {
    throw invalid_argument("cachedarrays::nn: fit: " + std::to_string(options.epochs) + " epochs and at most " +
                           std::to_string(options.max_iterations) +
                           " iterations; epochs must be at least 1 and the iteration cap at least 0 (0: none)");
  }
  const auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };

  FitResult result;
  BatchSamplerOptions sampling = options.train;
  std::int64_t start_epoch = 0;
  std::int64_t start_batch = 0;
  if (options.resume) {
    if (options.checkpoint.empty()) {
      throw invalid_argument("cachedarrays::nn: fit: resume asks for a checkpoint but none is named; set "
                             "FitOptions::checkpoint (train_cnn --checkpoint FILE)");
    }
    // Data parallel: rank 0 reads the checkpoint and hands its state and
    // position to the others (a rank that fails here ends the job).
    std::array<std::int64_t, 3> position{};  // epoch, batch, seed
    if (rank == 0) {
      const Checkpoint c = load_checkpoint(options.checkpoint, options.model);
      if (c.batch > 0 && metadata_value(c, "batch_size") != std::to_string(global_batch)) {
        throw invalid_argument("cachedarrays::nn: fit: checkpoint '" + options.checkpoint.string() +
                               "' stopped inside epoch " + std::to_string(c.epoch + 1) + " with batches of " +
                               metadata_value(c, "batch_size") + " samples; resume it with the same batch size, not " +
                               std::to_string(global_batch));
      }
      trainer.load_state(c.tensors);  // checks every tensor before it sets any
      position = {c.epoch, c.batch, static_cast<std::int64_t>(c.seed)};
    }
    if (comm != nullptr) {
      trainer.broadcast_state(0);
      comm->broadcast(std::as_writable_bytes(std::span<std::int64_t>(position)), 0, "the checkpoint's position");
    }
    const auto seed = static_cast<std::uint64_t>(position[2]);
    if (seed != sampling.seed) {
      log("the checkpoint's seed " + std::to_string(seed) + " orders the data (not " +
          std::to_string(sampling.seed) + "), as in the run that wrote it");
      sampling.seed = seed;
    }
    start_epoch = position[0];
    start_batch = position[1];
    result.resumed_epoch = start_epoch;
    result.resumed_batch = start_batch;
    log("resumed from " + options.checkpoint.string() + ": " + std::to_string(start_epoch) + " epochs done" +
        (start_batch > 0 ? " and " + std::to_string(start_batch) + " batches of epoch " + std::to_string(start_epoch + 1)
                         : std::string()));
  }
  BatchSampler sampler(train, sampling);
  const std::int64_t batches = sampler.batches_per_epoch();
  if (start_batch > batches) {
    throw invalid_argument("cachedarrays::nn: fit: checkpoint '" + options.checkpoint.string() + "' is " +
                           std::to_string(start_batch) + " batches into an epoch of " + std::to_string(batches) +
                           "; resume it with the training set (and limit) it was written with");
  }
  if (start_epoch >= options.epochs) {
    log("the checkpoint has all " + std::to_string(options.epochs) + " epochs done; ask for more to train on");
    return result;
  }

  // batch is copied in: Clang before 16 cannot capture a structured binding.
  const auto save = [&](std::int64_t epochs_done, std::int64_t batches_done) {
    if (options.checkpoint.empty() || rank != 0) return;
    Checkpoint c;
    c.model = options.model;
    c.epoch = epochs_done;
    c.batch = batches_done;
    c.seed = sampling.seed;
    c.metadata = {{"batch_size", std::to_string(global_batch)}, {"schedule", options.schedule.describe()}};
    c.tensors = trainer.state();
    save_checkpoint(options.checkpoint, c);
    log("checkpoint " + options.checkpoint.string() + ": " + std::to_string(epochs_done) + " epochs" +
        (batches_done > 0 ? " and " + std::to_string(batches_done) + " batches" : std::string()));
  };

  Runtime* rt = trainer.context().runtime();
  // The global batch; this rank trains on its shard of it.
  const auto shard_images = static_cast<std::size_t>(batch * element_count(image));
  std::vector<float> images(shard_images * static_cast<std::size_t>(ranks));
  std::vector<float> labels(static_cast<std::size_t>(global_batch));
  const std::span<const float> my_images =
      std::span<const float>(images).subspan(shard_images * static_cast<std::size_t>(rank), shard_images);
  const std::span<const float> my_labels = std::span<const float>(labels).subspan(
      static_cast<std::size_t>(batch) * static_cast<std::size_t>(rank), static_cast<std::size_t>(batch));
  const auto cap_reached = [&] { return options.max_iterations > 0 && result.iterations >= options.max_iterations; };
  for (std::int64_t epoch = start_epoch; epoch < options.epochs; ++epoch) {
    if (cap_reached()) {
      result.stopped_early = true;
      break;
    }
    if (epoch == start_epoch && start_batch > 0) {
      sampler.seek(epoch, start_batch);
    } else {
      sampler.start_epoch(epoch);
    }
    FitEpoch e;
    e.epoch = epoch;
    double loss_sum = 0;
    while (sampler.position() < batches && !cap_reached()) {
      FitStep s;
      s.epoch = epoch;
      s.batch = sampler.position();
      s.batches = batches;
      s.iteration = result.iterations + 1;
      s.learning_rate = options.schedule.at(epoch, s.batch, batches, options.epochs);
      (void)sampler.next(images, labels);
      trainer.set_learning_rate(s.learning_rate);
      if (options.before_step) options.before_step(s);
      const auto t0 = Clock::now();
      s.loss = trainer.step(my_images, my_labels);
      if (rt != nullptr) rt->collect();  // end of iteration: deferred frees happen here
      s.seconds = seconds_since(t0);
      ++result.iterations;
      ++e.batches;
      loss_sum += s.loss;
      e.seconds += s.seconds;
      if (options.after_step) options.after_step(s);
    }
    e.complete = sampler.position() == batches;
    e.train_loss = e.batches > 0 ? loss_sum / static_cast<double>(e.batches) : 0;
    e.images_per_second = e.seconds > 0 ? static_cast<double>(e.batches * global_batch) / e.seconds : 0;
    if (e.complete && test != nullptr) {
      const auto t0 = Clock::now();
      // Rank 0 tests (its parameters are every rank's); the others get its figures.
      std::array<double, 2> tested{};
      if (rank == 0) {
        const auto [loss, accuracy] = evaluate_dataset(trainer, *test, options.test_limit);
        tested = {loss, accuracy};
      }
      if (comm != nullptr) comm->broadcast(std::as_writable_bytes(std::span<double>(tested)), 0, "the test figures");
      e.test_seconds = seconds_since(t0);
      e.test_loss = tested[0];
      e.test_accuracy = tested[1];
    }
    if (e.batches > 0) save(e.complete ? epoch + 1 : epoch, e.complete ? 0 : sampler.position());
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
