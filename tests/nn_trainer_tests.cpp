// The trainer end to end: it learns, its hints never retire a tensor before
// its last use, and placement never changes arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;

namespace {

nn::ModelConfig tiny(const std::string& family, int depth) {
  nn::ModelConfig c;
  c.family = family;
  c.depth = depth;
  c.batch = 4;
  c.image_size = 32;
  c.classes = 5;
  c.width = 0.125;
  return c;
}

// Runs `iterations` steps of `config` under `policy` with the fast tier at
// `fast_fraction` of the footprint, the program of the iteration given to
// the runtime (policies that do not plan ahead ignore it); returns the
// losses, and the run's counters in `stats` if given.
std::vector<float> train(const nn::ModelConfig& config, const std::string& policy, double fast_fraction,
                         int iterations = 2, ca::Stats* stats = nullptr) {
  const auto build = [&] { return nn::build_model(config); };
  const std::uint64_t footprint = nn::measure_footprint(build);
  const auto fast = std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(fast_fraction * static_cast<double>(footprint)));
  ca::Runtime rt({ca::dram(fast, "fast"), ca::dax_file({}, 2 * footprint + (16 << 20), "slow")},
                 ca::policy::Registry::builtin().make(policy));
  rt.set_program(nn::dry_run_program(build));
  nn::Trainer trainer(&rt, build());
  auto data = nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 3);
  std::vector<float> images(static_cast<std::size_t>(config.batch * config.channels * config.image_size * config.image_size));
  std::vector<float> labels(static_cast<std::size_t>(config.batch));
  std::vector<float> losses;
  for (int i = 0; i < iterations; ++i) {
    data->next_batch(images, labels);
    losses.push_back(trainer.step(images, labels));
    rt.collect();
    // Between iterations only parameters, momentum and the scratchpad live.
    const ca::Stats s = rt.stats();
    CHECK(s.objects_created - s.objects_destroyed <= trainer.persistent_tensors() + 1);
  }
  rt.manager().check_invariants(true);
  CHECK(rt.iteration() == static_cast<std::uint64_t>(iterations));  // each step begins an iteration
  if (stats != nullptr) *stats = rt.stats();
  return losses;
}

}  // namespace

TEST_CASE("nn trainer: a tiny network learns a learnable synthetic task") {
  // Two classes told apart by which channel carries a positive offset.
  nn::Graph g;
  const std::int64_t n = 16;
  const auto x = g.input("images", {n, 2, 6, 6});
  const auto y = g.label("labels", {n});
  auto h = nn::conv2d(g, "conv", x, {.out_channels = 4, .kernel = 3, .stride = 1, .padding = 1, .bias = true});
  h = nn::relu(g, "relu", h);
  h = nn::global_avg_pool(g, "pool", h);
  h = nn::linear(g, "fc", h, 2);
  g.set_loss(nn::softmax_cross_entropy(g, "loss", h, y));

  ca::Runtime rt({ca::dram(16 << 20, "fast"), ca::dax_file({}, 64 << 20, "slow")},
                 ca::policy::Registry::builtin().make("ca-lm"));
  nn::TrainerOptions options;
  options.sgd.learning_rate = 0.1f;
  nn::Trainer trainer(&rt, std::move(g), options);
  test::Rng rng(5);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::vector<float> images(n * 2 * 36);
  std::vector<float> labels(n);
  float first = 0;
  float last = 0;
  for (int step = 0; step < 60; ++step) {
    for (std::int64_t i = 0; i < n; ++i) {
      const int label = static_cast<int>(rng.below(2));
      labels[static_cast<std::size_t>(i)] = static_cast<float>(label);
      for (int c = 0; c < 2; ++c)
        for (int p = 0; p < 36; ++p)
          images[static_cast<std::size_t>((i * 2 + c) * 36 + p)] = noise(rng) + (c == label ? 1.0f : 0.0f);
    }
    const float loss = trainer.step(images, labels);
    if (step == 0) first = loss;
    last = loss;
  }
  CHECK(std::isfinite(last));
  CHECK(first > 0.5f);
  CHECK(last < 0.5f * first);
}

TEST_CASE("nn trainer: placement never changes arithmetic — bit-identical losses under every policy and budget") {
  // Every policy with a fast tier of 20% of the footprint; the budgets
  // 100%, 50% and 20% under the CachedArrays extremes (CA:∅ and CA:LMP)
  // and the asynchronous lookahead modes (copies in flight beside the
  // kernels); and a DenseNet (concatenations) under the busiest policies.
  struct Run {
    std::string family;
    int depth;
    std::string policy;
    double fraction;
  };
  std::vector<Run> runs;
  for (const std::string& policy : ca::policy::Registry::builtin().names()) {
    if (policy != "all-fast") runs.push_back({"resnet", 18, policy, policy == "all-slow" ? 0.0 : 0.2});
  }
  for (const char* policy : {"ca", "ca-lmp", "ca-lma", "ca-lmpa"}) {
    for (double fraction : {1.0, 0.5}) runs.push_back({"resnet", 18, policy, fraction});
  }
  runs.push_back({"densenet", 121, "ca-lmp", 0.2});
  runs.push_back({"densenet", 121, "ca-lma", 0.2});

  std::map<std::string, std::vector<float>> reference;
  for (const char* family : {"resnet", "densenet"}) {
    reference[family] = train(tiny(family, family == std::string("resnet") ? 18 : 121), "all-fast", 4.0);
    REQUIRE(reference[family].size() == 2);
    CHECK(std::isfinite(reference[family][1]));
  }
  for (const Run& run : runs) {
    CAPTURE(run.family);
    CAPTURE(run.policy);
    CAPTURE(run.fraction);
    const std::vector<float> losses = train(tiny(run.family, run.depth), run.policy, run.fraction);
    const std::vector<float>& expected = reference[run.family];
    REQUIRE(losses.size() == expected.size());
    // Bit for bit: compare the representations, not within a tolerance.
    CHECK(std::memcmp(losses.data(), expected.data(), sizeof(float) * losses.size()) == 0);
  }
}

TEST_CASE("nn trainer: no tensor is retired before its last use on ResNet and DenseNet graphs") {
  // The trainer throws retired_error if a kernel reads a retired tensor; a
  // fast tier of 20% makes the policy move everything it can meanwhile.
  for (const auto& [family, depth] : {std::pair<std::string, int>{"resnet", 50}, {"densenet", 121}, {"vgg", 11}}) {
    CAPTURE(family);
    CHECK_NOTHROW(train(tiny(family, depth), "ca-lmp", 0.2, 1));
  }
}

TEST_CASE("nn trainer: liveness comes from the graph") {
  nn::Graph g = nn::build_model(tiny("resnet", 18));
  const nn::Liveness l = nn::Liveness::of(g);
  // Every activation that a backward op reads dies at or before its
  // producer's backward; parameters always need a gradient.
  for (nn::ValueId p : g.values_with_role(nn::ValueRole::parameter)) CHECK(l.needs_grad[static_cast<std::size_t>(p)]);
  const nn::ValueId images = g.values_with_role(nn::ValueRole::input).front();
  CHECK(!l.needs_grad[static_cast<std::size_t>(images)]);
  for (std::size_t v = 0; v < g.value_count(); ++v) {
    const nn::ValueInfo& info = g.value(static_cast<nn::ValueId>(v));
    if (info.producer >= 0 && l.last_backward_use[v] >= 0) CHECK(l.last_backward_use[v] >= info.producer);
    if (info.producer >= 0 && static_cast<nn::ValueId>(v) != g.loss()) CHECK(l.last_forward_use[v] > info.producer);
  }
}

TEST_CASE("nn trainer: the dry run measures a footprint without allocating memory") {
  const auto build = [] { return nn::build_model(tiny("resnet", 18)); };
  const nn::Graph g = build();
  const std::uint64_t footprint = nn::measure_footprint(build);
  // At least parameters and momentum (4 bytes each), and far from absurd.
  CHECK(footprint >= static_cast<std::uint64_t>(g.parameter_count()) * 8);
  CHECK(footprint < (std::uint64_t{1} << 30));
  // The published-size ResNet-50 measures in a blink: no memory is touched.
  nn::ModelConfig big;
  big.family = "resnet";
  big.depth = 50;
  big.batch = 32;
  const std::uint64_t resnet50 = nn::measure_footprint([&] { return nn::build_model(big); });
  CHECK(resnet50 > (std::uint64_t{2} << 30));
}

TEST_CASE("nn trainer: all-fast trains in a fast tier of exactly the measured footprint") {
  // The footprint is the heap's peak extent, holes included; a fast tier of
  // that size must hold every iteration (a dry run places exactly as a real
  // one does), while a tier one alignment unit smaller must not.
  for (const auto& [family, depth] : std::vector<std::pair<std::string, int>>{{"vgg", 16}, {"densenet", 121}}) {
    CAPTURE(family);
    nn::ModelConfig c = tiny(family, depth);
    c.batch = 4;
    c.width = 0.25;
    const std::uint64_t footprint = nn::measure_footprint([&] { return nn::build_model(c); });
    const auto train = [&](std::uint64_t fast) {
      ca::Runtime rt({ca::virtual_device(fast, "fast"), ca::virtual_device(footprint, "slow")},
                     ca::policy::Registry::builtin().make("all-fast"));
      nn::Trainer trainer(&rt, nn::build_model(c), {}, /*run_kernels=*/false);
      for (int i = 0; i < 3; ++i) (void)trainer.step({}, {});
      rt.collect();
    };
    CHECK_NOTHROW(train(footprint));
    CHECK_THROWS_AS(train(footprint - 64), ca::out_of_memory);
  }
}

TEST_CASE("nn trainer: the lookahead modes copy ahead through the mover, and only with a program") {
  ca::Stats with_program;
  (void)train(tiny("resnet", 18), "ca-lma", 0.2, 3, &with_program);
  CHECK(with_program.async.copies > 0);
  CHECK(with_program.async.failures == 0);
  // The same budget without A: every copy is made on the compute thread.
  ca::Stats without;
  (void)train(tiny("resnet", 18), "ca-lm", 0.2, 3, &without);
  CHECK(without.async.copies == 0);
}
