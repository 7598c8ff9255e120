// Testing a model and carrying training on: batch norm's running
// statistics, Trainer::evaluate, the trainer's state (what a checkpoint
// holds) and learning-rate schedules.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/checkpoint.hpp"
#include "cachedarrays/nn/fit.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/lr_schedule.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "nn_test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

constexpr std::int64_t images_per_batch = 8;
constexpr std::int64_t image_channels = 2;
constexpr std::int64_t side = 4;
constexpr std::int64_t pixels = side * side;

// images -> batch norm -> global average pool -> linear -> loss. With
// recompute_bn, the batch norm's output is recomputed in the backward pass.
nn::Graph tiny_graph(bool recompute_bn = false) {
  nn::Graph g;
  const auto x = g.input("images", {images_per_batch, image_channels, side, side});
  const auto y = g.label("labels", {images_per_batch});
  auto h = nn::batch_norm(g, "bn", x);
  if (recompute_bn) g.recompute_in_backward(h);
  h = nn::global_avg_pool(g, "pool", h);
  h = nn::linear(g, "fc", h, 2);
  g.set_loss(nn::softmax_cross_entropy(g, "loss", h, y));
  return g;
}

ca::Runtime make_evaluation_runtime() {
  return ca::Runtime({ca::dram(8 << 20, "fast"), ca::dax_file({}, 32 << 20, "slow")},
                     ca::policy::Registry::builtin().make("ca-lm"));
}

// Channel c of sample i is centred on its class (c == label) plus noise.
void make_evaluation_batch(std::uint64_t seed, std::vector<float>& images, std::vector<float>& labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  images.assign(static_cast<std::size_t>(images_per_batch * image_channels * pixels), 0.0f);
  labels.assign(static_cast<std::size_t>(images_per_batch), 0.0f);
  for (std::int64_t i = 0; i < images_per_batch; ++i) {
    const auto label = static_cast<int>(rng() % 2);
    labels[static_cast<std::size_t>(i)] = static_cast<float>(label);
    for (std::int64_t c = 0; c < image_channels; ++c) {
      for (std::int64_t p = 0; p < pixels; ++p) {
        images[static_cast<std::size_t>((i * image_channels + c) * pixels + p)] =
            noise(rng) + (c == label ? 2.0f : -1.0f) + 3.0f * static_cast<float>(c);
      }
    }
  }
}

const nn::CheckpointTensor& find(const std::vector<nn::CheckpointTensor>& state, const std::string& name) {
  for (const auto& t : state) {
    if (t.name == name) return t;
  }
  FAIL("no tensor " << name);
  throw std::logic_error("unreachable");
}

// Per channel: the batch's mean and biased variance over N, H and W.
void batch_statistics(const std::vector<float>& images, std::vector<double>& mean, std::vector<double>& variance) {
  mean.assign(image_channels, 0.0);
  variance.assign(image_channels, 0.0);
  const double m = static_cast<double>(images_per_batch * pixels);
  for (std::int64_t c = 0; c < image_channels; ++c) {
    for (std::int64_t i = 0; i < images_per_batch; ++i)
      for (std::int64_t p = 0; p < pixels; ++p)
        mean[c] += images[static_cast<std::size_t>((i * image_channels + c) * pixels + p)];
    mean[c] /= m;
    for (std::int64_t i = 0; i < images_per_batch; ++i) {
      for (std::int64_t p = 0; p < pixels; ++p) {
        const double d = images[static_cast<std::size_t>((i * image_channels + c) * pixels + p)] - mean[c];
        variance[c] += d * d;
      }
    }
    variance[c] /= m;
  }
}

}  // namespace

TEST_CASE("nn evaluation: a training step moves batch norm's running statistics 10% toward the batch's") {
  auto rt = make_evaluation_runtime();
  nn::Trainer trainer(&rt, tiny_graph());
  std::vector<float> images, labels;
  make_evaluation_batch(1, images, labels);
  const auto before = trainer.state();
  CHECK(find(before, "bn.running_mean").values == std::vector<float>(image_channels, 0.0f));
  CHECK(find(before, "bn.running_var").values == std::vector<float>(image_channels, 1.0f));
  (void)trainer.step(images, labels);
  std::vector<double> mean, variance;
  batch_statistics(images, mean, variance);
  const double m = static_cast<double>(images_per_batch * pixels);
  const auto after = trainer.state();
  for (std::size_t c = 0; c < image_channels; ++c) {
    CHECK(find(after, "bn.running_mean").values[c] == doctest::Approx(0.1 * mean[c]).epsilon(1e-4));
    CHECK(find(after, "bn.running_var").values[c] ==
          doctest::Approx(0.9 + 0.1 * variance[c] * m / (m - 1)).epsilon(1e-4));
  }
}

TEST_CASE("nn evaluation: a recomputed batch norm updates its running statistics once per step, not twice") {
  std::vector<float> images, labels;
  make_evaluation_batch(2, images, labels);
  std::vector<std::vector<float>> means;
  for (bool recompute : {false, true}) {
    auto rt = make_evaluation_runtime();
    nn::Trainer trainer(&rt, tiny_graph(recompute));
    for (int i = 0; i < 3; ++i) (void)trainer.step(images, labels);
    means.push_back(find(trainer.state(), "bn.running_mean").values);
  }
  CHECK(means[0] == means[1]);
}

TEST_CASE("nn evaluation: evaluate normalises with the running statistics and changes nothing") {
  std::vector<float> images, labels;
  make_evaluation_batch(3, images, labels);
  // Trainer A: the training-mode loss of the batch (step returns the loss
  // before its update).
  auto rt_a = make_evaluation_runtime();
  nn::Trainer a(&rt_a, tiny_graph());
  const float train_loss = a.step(images, labels);
  // Trainer B (same initial parameters): running statistics set to the
  // batch's own (biased) ones, so inference computes what training did.
  auto rt_b = make_evaluation_runtime();
  nn::Trainer b(&rt_b, tiny_graph());
  std::vector<double> mean, variance;
  batch_statistics(images, mean, variance);
  auto state = b.state();
  for (auto& t : state) {
    for (std::size_t c = 0; c < t.values.size(); ++c) {
      if (t.name == "bn.running_mean") t.values[c] = static_cast<float>(mean[c]);
      if (t.name == "bn.running_var") t.values[c] = static_cast<float>(variance[c]);
    }
  }
  b.load_state(state);
  const auto e = b.evaluate(images, labels);
  CHECK(e.samples == images_per_batch);
  CHECK(e.loss_sum / images_per_batch == doctest::Approx(train_loss).epsilon(1e-4));
  // Nothing changed: parameters, momentum, running statistics.
  const auto after = b.state();
  REQUIRE(after.size() == state.size());
  for (std::size_t i = 0; i < state.size(); ++i) CHECK(after[i].values == state[i].values);
  // With the default running statistics (mean 0, variance 1) the result differs.
  auto rt_c = make_evaluation_runtime();
  nn::Trainer c(&rt_c, tiny_graph());
  CHECK(c.evaluate(images, labels).loss_sum / images_per_batch != doctest::Approx(train_loss).epsilon(1e-3));
}

TEST_CASE("nn evaluation: accuracy counts only the valid samples, and a trained model gets the easy task right") {
  auto rt = make_evaluation_runtime();
  nn::TrainerOptions options;
  options.sgd.learning_rate = 0.2f;
  nn::Trainer trainer(&rt, tiny_graph(), options);
  std::vector<float> images, labels;
  for (int step = 0; step < 40; ++step) {
    make_evaluation_batch(100 + static_cast<std::uint64_t>(step), images, labels);
    (void)trainer.step(images, labels);
    rt.collect();
  }
  make_evaluation_batch(7, images, labels);
  const auto all = trainer.evaluate(images, labels);
  CHECK(all.samples == images_per_batch);
  CHECK(all.correct == images_per_batch);
  CHECK(all.loss_sum / images_per_batch < 0.3);
  // Padding: only the first 3 count, whatever the rest holds.
  for (std::size_t i = 3; i < labels.size(); ++i) labels[i] = 1 - labels[i];  // all wrong now
  const auto some = trainer.evaluate(images, labels, 3);
  CHECK(some.samples == 3);
  CHECK(some.correct == 3);
  const auto wrong = trainer.evaluate(images, labels);
  CHECK(wrong.correct == 3);
  CHECK(test::invalid_argument_message([&] {
          (void)trainer.evaluate(images, labels, images_per_batch + 1);
        }).find("at most the batch size") != std::string::npos);
  // Training goes on after an evaluation.
  CHECK(std::isfinite(trainer.step(images, labels)));
}

TEST_CASE("nn evaluation: a state loaded into a fresh trainer continues training bit for bit") {
  std::vector<float> images, labels;
  auto rt_a = make_evaluation_runtime();
  nn::Trainer a(&rt_a, tiny_graph());
  for (int i = 0; i < 3; ++i) {
    make_evaluation_batch(10 + static_cast<std::uint64_t>(i), images, labels);
    (void)a.step(images, labels);
  }
  const auto saved = a.state();
  CHECK(saved.size() == 4 * 2 + 2);  // bn weight, bias; fc weight, bias: each with momentum; 2 buffers
  auto rt_b = make_evaluation_runtime();
  nn::TrainerOptions other_seed;
  other_seed.seed = 99;
  nn::Trainer b(&rt_b, tiny_graph(), other_seed);
  b.load_state(saved);
  make_evaluation_batch(20, images, labels);
  CHECK(a.step(images, labels) == b.step(images, labels));
  const auto sa = a.state();
  const auto sb = b.state();
  REQUIRE(sa.size() == sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    CHECK(sa[i].name == sb[i].name);
    CHECK(sa[i].values == sb[i].values);
  }
}

TEST_CASE("nn evaluation: a state that does not fit the model is refused and changes nothing") {
  auto rt = make_evaluation_runtime();
  nn::Trainer trainer(&rt, tiny_graph());
  const auto original = trainer.state();
  auto changed = original;
  for (auto& t : changed)
    for (float& v : t.values) v += 1.0f;

  auto wrong_shape = changed;
  wrong_shape.back().dims = {3};
  wrong_shape.back().values.push_back(0.0f);
  CHECK(test::invalid_argument_message([&] { trainer.load_state(wrong_shape); }).find("'bn.running_var' has shape") !=
        std::string::npos);
  auto missing = changed;
  missing.erase(missing.begin() + 1);
  CHECK(test::invalid_argument_message([&] { trainer.load_state(missing); }).find("no tensor 'bn.weight.momentum'") !=
        std::string::npos);
  auto unknown = changed;
  unknown.push_back({"conv9.weight", {1}, {0.0f}});
  CHECK(test::invalid_argument_message([&] { trainer.load_state(unknown); }).find("'conv9.weight'") !=
        std::string::npos);
  const auto after = trainer.state();
  for (std::size_t i = 0; i < original.size(); ++i) CHECK(after[i].values == original[i].values);
}

TEST_CASE("nn evaluation: a learning rate of 0 leaves the parameters where they are") {
  auto rt = make_evaluation_runtime();
  nn::Trainer trainer(&rt, tiny_graph());
  trainer.set_learning_rate(0.0f);
  const auto before = trainer.parameter("fc.weight");
  std::vector<float> images, labels;
  make_evaluation_batch(4, images, labels);
  (void)trainer.step(images, labels);
  CHECK(trainer.parameter("fc.weight") == before);
  trainer.set_learning_rate(0.5f);
  (void)trainer.step(images, labels);
  CHECK(trainer.parameter("fc.weight") != before);
  CHECK(test::invalid_argument_message([&] { trainer.set_learning_rate(-1.0f); }).find("at least 0") !=
        std::string::npos);
}

TEST_CASE("nn evaluation: learning-rate schedules") {
  const auto constant = nn::LearningRateSchedule::parse("constant", 0.1f);
  CHECK(constant.at(0, 0, 10, 5) == 0.1f);
  CHECK(constant.at(4, 9, 10, 5) == 0.1f);

  const auto step = nn::LearningRateSchedule::parse("step:2:0.1", 0.5f);
  CHECK(step.at(0, 5, 10, 6) == doctest::Approx(0.5));
  CHECK(step.at(1, 9, 10, 6) == doctest::Approx(0.5));
  CHECK(step.at(2, 0, 10, 6) == doctest::Approx(0.05));
  CHECK(step.at(5, 0, 10, 6) == doctest::Approx(0.005));

  const auto cosine = nn::LearningRateSchedule::parse("cosine", 0.2f);
  CHECK(cosine.at(0, 0, 10, 2) == doctest::Approx(0.2));
  CHECK(cosine.at(1, 0, 10, 2) == doctest::Approx(0.1));  // half way
  CHECK(cosine.at(0, 5, 10, 2) == doctest::Approx(0.1 * (1 + std::cos(M_PI / 4))));
  CHECK(cosine.at(1, 9, 10, 2) > 0.0f);
  CHECK(cosine.at(1, 9, 10, 2) < 0.01f);

  for (const char* bad : {"linear", "step", "step:0:0.1", "step:2", "step:2:x", "step:2:-1"}) {
    CAPTURE(bad);
    const std::string message =
        test::invalid_argument_message([&] { (void)nn::LearningRateSchedule::parse(bad, 0.1f); });
    CHECK(message.find("step:EPOCHS:GAMMA") != std::string::npos);
  }
  CHECK(test::invalid_argument_message([] { (void)nn::LearningRateSchedule::parse("cosine", 0.0f); }).find("above 0") !=
        std::string::npos);
}

namespace {

// Two epochs of 4 batches over the synthetic set, shuffled and augmented.
nn::FitOptions fit_options(const std::filesystem::path& checkpoint = {}) {
  nn::FitOptions o;
  o.epochs = 2;
  o.train.batch = images_per_batch;
  o.train.seed = 7;
  o.train.limit = 4 * images_per_batch;
  o.train.crop_padding = 1;
  o.train.horizontal_flip = true;
  o.test_limit = 2 * images_per_batch + 3;  // a padded last batch
  o.schedule = nn::LearningRateSchedule::parse("cosine", 0.1f);
  o.checkpoint = checkpoint;
  o.model = "tiny";
  return o;
}

}  // namespace

TEST_CASE("nn fit: a run stopped and resumed from its checkpoint ends bit for bit where an unbroken run does") {
  const test::ScratchPath dir("nn-fit");
  std::filesystem::create_directories(dir.path);
  const auto data = nn::open_data("synthetic", {image_channels, side, side}, 2, 3);
  std::vector<float> unbroken_losses;
  std::vector<nn::CheckpointTensor> unbroken;
  nn::FitResult whole;
  {
    auto rt = make_evaluation_runtime();
    nn::Trainer trainer(&rt, tiny_graph());
    auto o = fit_options();
    o.after_step = [&](const nn::FitStep& s) { unbroken_losses.push_back(s.loss); };
    whole = nn::fit(trainer, *data.train, data.test.get(), o);
    unbroken = trainer.state();
  }
  REQUIRE(unbroken_losses.size() == 8);
  REQUIRE(whole.epochs.size() == 2);
  CHECK(whole.epochs[1].complete);
  CHECK(whole.epochs[1].test_accuracy.has_value());
  CHECK(!whole.stopped_early);

  const auto file = dir.path / "run.ckpt";
  std::vector<float> losses;
  {
    auto rt = make_evaluation_runtime();
    nn::Trainer trainer(&rt, tiny_graph());
    auto o = fit_options(file);
    o.max_iterations = 3;  // inside the first epoch
    o.after_step = [&](const nn::FitStep& s) { losses.push_back(s.loss); };
    const auto cut = nn::fit(trainer, *data.train, data.test.get(), o);
    CHECK(cut.stopped_early);
    REQUIRE(cut.epochs.size() == 1);
    CHECK(!cut.epochs[0].complete);
    CHECK(!cut.epochs[0].test_loss.has_value());
  }
  const nn::Checkpoint written = nn::load_checkpoint(file, "tiny");
  CHECK(written.epoch == 0);
  CHECK(written.batch == 3);
  {
    auto rt = make_evaluation_runtime();
    nn::TrainerOptions other;
    other.seed = 1234;  // the checkpoint, not the initialisation, decides
    nn::Trainer trainer(&rt, tiny_graph(), other);
    auto o = fit_options(file);
    o.resume = true;
    o.after_step = [&](const nn::FitStep& s) { losses.push_back(s.loss); };
    const auto rest = nn::fit(trainer, *data.train, data.test.get(), o);
    CHECK(rest.resumed_epoch == 0);
    CHECK(rest.resumed_batch == 3);
    CHECK(rest.iterations == 5);
    REQUIRE(rest.epochs.size() == 2);
    CHECK(*rest.epochs[1].test_loss == *whole.epochs[1].test_loss);
    const auto resumed = trainer.state();
    REQUIRE(resumed.size() == unbroken.size());
    for (std::size_t i = 0; i < resumed.size(); ++i) {
      CAPTURE(resumed[i].name);
      CHECK(resumed[i].values == unbroken[i].values);
    }
  }
  CHECK(losses == unbroken_losses);
  const nn::Checkpoint last = nn::load_checkpoint(file, "tiny");
  CHECK(last.epoch == 2);
  CHECK(last.batch == 0);
}

TEST_CASE(
    "nn fit: a stop request ends the run at the next step boundary, where its checkpoint lets a resume go on "
    "bit for bit") {
  const test::ScratchPath dir("nn-fit-stop");
  std::filesystem::create_directories(dir.path);
  const auto data = nn::open_data("synthetic", {image_channels, side, side}, 2, 3);
  std::vector<float> unbroken_losses;
  {
    auto rt = make_evaluation_runtime();
    nn::Trainer trainer(&rt, tiny_graph());
    auto o = fit_options();
    o.after_step = [&](const nn::FitStep& s) { unbroken_losses.push_back(s.loss); };
    (void)nn::fit(trainer, *data.train, data.test.get(), o);
  }
  REQUIRE(unbroken_losses.size() == 8);

  // Stopped in the second epoch (after 6 steps), at its first step (after
  // 4: the first epoch is tested and saved), and before any step.
  for (const int stop_after : {6, 4, 0}) {
    CAPTURE(stop_after);
    const auto file = dir.path / ("run" + std::to_string(stop_after) + ".ckpt");
    std::vector<float> losses;
    int asked = 0;
    {
      auto rt = make_evaluation_runtime();
      nn::Trainer trainer(&rt, tiny_graph());
      auto o = fit_options(file);
      o.stop_requested = [&] { return asked++ >= stop_after ? 15 : 0; };
      o.after_step = [&](const nn::FitStep& s) { losses.push_back(s.loss); };
      const nn::FitResult r = nn::fit(trainer, *data.train, data.test.get(), o);
      CHECK(asked == stop_after + 1);  // once before every step, and the one that stopped it
      CHECK(r.iterations == stop_after);
      CHECK(r.stopped_early);
      CHECK(r.stop_reason == 15);
      CHECK(r.epochs_done == stop_after / 4);
      CHECK(r.batches_done == stop_after % 4);
      // An epoch that began records how far it got and why it ended.
      REQUIRE(r.epochs.size() == static_cast<std::size_t>(stop_after == 6 ? 2 : stop_after == 4 ? 1 : 0));
      if (stop_after == 6) {
        CHECK(!r.epochs[1].complete);
        CHECK(r.epochs[1].batches == 2);
        CHECK(r.epochs[1].stop_reason == 15);
        CHECK(!r.epochs[1].test_loss.has_value());
      }
      if (stop_after > 0) {
        CHECK(r.epochs[0].complete);
        CHECK(r.epochs[0].stop_reason == 0);
      }
    }
    if (stop_after == 0) {
      CHECK(!std::filesystem::exists(file));  // nothing trained, nothing written
      continue;
    }
    const nn::Checkpoint written = nn::load_checkpoint(file, "tiny");
    CHECK(written.epoch == stop_after / 4);
    CHECK(written.batch == stop_after % 4);
    {
      auto rt = make_evaluation_runtime();
      nn::Trainer trainer(&rt, tiny_graph());
      auto o = fit_options(file);
      o.resume = true;
      o.after_step = [&](const nn::FitStep& s) { losses.push_back(s.loss); };
      const nn::FitResult rest = nn::fit(trainer, *data.train, data.test.get(), o);
      CHECK(rest.stop_reason == 0);
      CHECK(rest.epochs_done == 2);
      CHECK(rest.batches_done == 0);
    }
    CHECK(losses == unbroken_losses);
  }
}

TEST_CASE("nn fit: a resumed run stopped before its first step leaves the checkpoint as it was") {
  const test::ScratchPath dir("nn-fit-stop-resumed");
  std::filesystem::create_directories(dir.path);
  const auto data = nn::open_data("synthetic", {image_channels, side, side}, 2, 3);
  const auto file = dir.path / "run.ckpt";
  {
    auto rt = make_evaluation_runtime();
    nn::Trainer trainer(&rt, tiny_graph());
    auto o = fit_options(file);
    o.max_iterations = 3;
    (void)nn::fit(trainer, *data.train, nullptr, o);
  }
  const auto before = std::filesystem::last_write_time(file);
  auto rt = make_evaluation_runtime();
  nn::Trainer trainer(&rt, tiny_graph());
  auto o = fit_options(file);
  o.resume = true;
  o.stop_requested = [] { return 2; };
  const nn::FitResult r = nn::fit(trainer, *data.train, nullptr, o);
  CHECK(r.iterations == 0);
  CHECK(r.stop_reason == 2);
  CHECK(r.epochs.empty());
  CHECK(r.epochs_done == 0);
  CHECK(r.batches_done == 3);
  CHECK(std::filesystem::last_write_time(file) == before);
  CHECK(nn::load_checkpoint(file, "tiny").batch == 3);
}

TEST_CASE("nn fit: the temporary files of saves whose process died are removed, in one line of the log") {
  const test::ScratchPath dir("nn-fit-stale");
  std::filesystem::create_directories(dir.path);
  const auto data = nn::open_data("synthetic", {image_channels, side, side}, 2, 3);
  const auto file = dir.path / "run.ckpt";
  const std::string ours = nn::checkpoint_temporary_path(file).filename().string();
  const std::string stale = ours;  // a dead process with our host and id: the file cannot be a save in progress
  std::ofstream(dir.path / stale) << "half";
  std::vector<std::string> log;
  auto rt = make_evaluation_runtime();
  nn::Trainer trainer(&rt, tiny_graph());
  auto o = fit_options(file);
  o.max_iterations = 1;
  o.log = [&](const std::string& line) { log.push_back(line); };
  (void)nn::fit(trainer, *data.train, nullptr, o);
  REQUIRE(!log.empty());
  CHECK(log.front() == "removed 1 temporary file of checkpoint saves whose process no longer runs: " + stale);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) names.push_back(entry.path().filename());
  CHECK(names == std::vector<std::string>{"run.ckpt"});
}

TEST_CASE("nn fit: what cannot be resumed or trained is refused before any step") {
  const test::ScratchPath dir("nn-fit");
  std::filesystem::create_directories(dir.path);
  const auto data = nn::open_data("synthetic", {image_channels, side, side}, 2, 3);
  auto rt = make_evaluation_runtime();
  nn::Trainer trainer(&rt, tiny_graph());
  const auto before = trainer.state();
  const auto file = dir.path / "run.ckpt";
  {
    auto o = fit_options(file);
    o.max_iterations = 1;
    (void)nn::fit(trainer, *data.train, nullptr, o);
  }
  int steps = 0;
  auto o = fit_options(file);
  o.after_step = [&](const nn::FitStep&) { ++steps; };
  o.resume = true;
  o.model = "another";
  CHECK(test::invalid_argument_message([&] { (void)nn::fit(trainer, *data.train, nullptr, o); }).find("another") !=
        std::string::npos);
  o.model = "tiny";
  o.checkpoint = dir.path / "missing.ckpt";
  CHECK(!test::invalid_argument_message([&] { (void)nn::fit(trainer, *data.train, nullptr, o); }).empty());
  o.checkpoint.clear();
  CHECK(test::invalid_argument_message([&] { (void)nn::fit(trainer, *data.train, nullptr, o); }).find("--checkpoint") !=
        std::string::npos);
  o = fit_options();
  o.train.batch = images_per_batch + 1;
  CHECK(test::invalid_argument_message([&] { (void)nn::fit(trainer, *data.train, nullptr, o); }).find("batches of 8") !=
        std::string::npos);
  const auto other = nn::open_data("synthetic", {3, side, side}, 2, 3);
  CHECK(test::invalid_argument_message([&] {
          (void)nn::fit(trainer, *other.train, nullptr, fit_options());
        }).find("3x4x4 images but the model takes 2x4x4") != std::string::npos);
  CHECK(steps == 0);
}
