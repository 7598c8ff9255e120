// The trainer end to end: it learns, its hints never retire a tensor before
// its last use, and placement never changes arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

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

// Inception v4 at its smallest image, 75x75, a sixteenth of the width and a
// batch of 2: its 149 convolutions are many small kernels, and the policy
// tests run it dozens of times.
nn::ModelConfig tiny_inception() {
  nn::ModelConfig c = tiny("inception", 4);
  c.image_size = 75;
  c.batch = 2;
  c.width = 0.0625;
  return c;
}

// A Vision Transformer small enough to run dozens of times: 16x16 images
// in 16 patches of 4x4 and the class token, dim 16, 2 blocks of 2 heads.
nn::ModelConfig tiny_vit() {
  nn::ModelConfig c = tiny("vit", 2);
  c.image_size = 16;
  c.width = 1;
  c.vit = {.patch = 4, .dim = 16, .heads = 2, .mlp_ratio = 2};
  return c;
}

// How `config` trains: a ViT with AdamW, as transformers are, the CNNs with SGD.
nn::TrainerOptions trainer_options_for(const nn::ModelConfig& config) {
  nn::TrainerOptions o;
  if (config.family == "vit") o.optimizer = nn::Optimizer::adamw;
  return o;
}

// Runs `iterations` steps of `config` under `policy` with the fast tier at
// `fast_fraction` of the footprint, the program of the iteration given to
// the runtime (policies that do not plan ahead ignore it); returns the
// losses, and the run's counters in `stats` if given.
std::vector<float> train(const nn::ModelConfig& config, std::unique_ptr<ca::policy::Policy> policy,
                         double fast_fraction, int iterations = 2, ca::Stats* stats = nullptr,
                         const std::function<void(const ca::policy::Policy&)>& inspect = {}) {
  const auto build = [&] { return nn::build_model(config); };
  const nn::TrainerOptions options = trainer_options_for(config);
  const std::uint64_t footprint = nn::measure_footprint(build, options);
  const auto fast_bytes =
      std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(fast_fraction * static_cast<double>(footprint)));
  ca::Runtime rt({ca::dram(fast_bytes, "fast"), ca::dax_file({}, 2 * footprint + (16 << 20), "slow")},
                 std::move(policy));
  rt.set_program(nn::dry_run_program(build, options));
  nn::Trainer trainer(&rt, build(), options);
  auto data = nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 3);
  std::vector<float> images(
      static_cast<std::size_t>(config.batch * config.channels * config.image_size * config.image_size));
  std::vector<float> labels(static_cast<std::size_t>(config.batch));
  std::vector<float> losses;
  for (int i = 0; i < iterations; ++i) {
    data->next_batch(images, labels);
    losses.push_back(trainer.step(images, labels));
    rt.collect();
    // Between iterations only parameters and momentum live (no kernel's
    // scratchpad outlives its kernel).
    const ca::Stats s = rt.stats();
    CHECK(s.objects_created - s.objects_destroyed == trainer.persistent_tensors());
  }
  rt.manager().check_invariants(true);
  CHECK(rt.iteration() == static_cast<std::uint64_t>(iterations));  // each step begins an iteration
  if (stats != nullptr) *stats = rt.stats();
  if (inspect) inspect(rt.policy());
  return losses;
}

std::vector<float> train(const nn::ModelConfig& config, const std::string& policy, double fast_fraction,
                         int iterations = 2, ca::Stats* stats = nullptr) {
  return train(config, ca::policy::Registry::builtin().make(policy), fast_fraction, iterations, stats);
}

// conv-BN[-add]-ReLU layers at constant width: in a ResNet's shape
// without the downsampling, or with `relus` false the same network with no
// ReLU at all.
nn::Graph conv_bn_relu_chain(bool relus, bool residual) {
  nn::Graph g;
  const auto images = g.input("images", {8, 3, 16, 16});
  const auto labels = g.label("labels", {8});
  const nn::Conv2dOptions conv{.out_channels = 16, .kernel = 3, .stride = 1, .padding = 1, .bias = false};
  auto x = nn::conv2d(g, "stem", images, conv);
  for (int i = 0; i < 8; ++i) {
    const std::string n = "layer" + std::to_string(i);
    auto y = nn::batch_norm(g, n + ".bn", nn::conv2d(g, n + ".conv", x, conv));
    if (residual) y = nn::add(g, n + ".add", y, x);
    x = relus ? nn::relu(g, n + ".relu", y) : y;
  }
  x = nn::global_avg_pool(g, "pool", x);
  g.set_loss(nn::softmax_cross_entropy(g, "loss", nn::linear(g, "fc", x, 4), labels));
  return g;
}

// A DenseNet block of four layers (growth 4 from 8 channels: not multiples
// of oneDNN's channel block, where layouts are the most varied) in two
// forms that create their values in the same order, so that parameters
// start equal: `running` extends one materialised concatenation per layer,
// concat(previous, new), all kept for the backward pass (DenseNet without
// the memory-efficient form); otherwise each layer reads one n-input
// concatenation that, with the batch norm and ReLU over it, is recomputed
// in the backward pass, as nn::build_model builds DenseNets.
nn::Graph mini_densenet(bool running) {
  nn::Graph g;
  const auto images = g.input("images", {4, 3, 16, 16});
  const auto labels = g.label("labels", {4});
  nn::ValueId x = nn::conv2d(g, "stem", images, {.out_channels = 8, .kernel = 3, .stride = 1, .padding = 1});
  std::vector<nn::ValueId> features{x};
  const auto concatenation = [&](const std::string& name) {
    if (features.size() == 1) return features.front();
    const nn::ValueId c = nn::concat(g, name, features);
    g.recompute_in_backward(c);
    return c;
  };
  for (int i = 0; i < 4; ++i) {
    const std::string n = "layer" + std::to_string(i);
    const nn::ValueId in = running ? x : concatenation(n + ".concat");
    const nn::ValueId normalised = nn::batch_norm(g, n + ".norm1", in);
    nn::ValueId y = nn::relu(g, n + ".relu1", normalised);
    if (!running) {
      g.recompute_in_backward(normalised);
      g.recompute_in_backward(y);
    }
    y = nn::conv2d(g, n + ".conv1", y, {.out_channels = 16, .kernel = 1, .stride = 1, .padding = 0});
    y = nn::relu(g, n + ".relu2", nn::batch_norm(g, n + ".norm2", y));
    y = nn::conv2d(g, n + ".conv2", y, {.out_channels = 4, .kernel = 3, .stride = 1, .padding = 1});
    features.push_back(y);
    if (running) x = nn::concat(g, n + ".concat", {x, y});
  }
  if (!running) x = concatenation("block.concat");
  x = nn::global_avg_pool(g, "pool", nn::relu(g, "relu", nn::batch_norm(g, "norm", x)));
  g.set_loss(nn::softmax_cross_entropy(g, "loss", nn::linear(g, "fc", x, 3), labels));
  return g;
}

// The losses of `iterations` steps on synthetic data, all in fast memory;
// and the trainer's parameter `parameter` at the end in `final_parameter`.
std::vector<float> losses_of(nn::Graph graph, int iterations, const std::string& parameter = "",
                             std::vector<float>* final_parameter = nullptr, const nn::TrainerOptions& options = {}) {
  const nn::ValueInfo& x = graph.value(graph.values_with_role(nn::ValueRole::input).front());
  const nn::Dims dims = x.dims;
  ca::Runtime rt({ca::dram(64 << 20, "fast")}, ca::policy::Registry::builtin().make("all-fast"));
  nn::Trainer trainer(&rt, std::move(graph), options);
  auto data = nn::synthetic_dataset({dims[1], dims[2], dims[3]}, 3, 11);
  std::vector<float> images(static_cast<std::size_t>(dims[0] * dims[1] * dims[2] * dims[3]));
  std::vector<float> labels(static_cast<std::size_t>(dims[0]));
  std::vector<float> losses;
  for (int i = 0; i < iterations; ++i) {
    data->next_batch(images, labels);
    losses.push_back(trainer.step(images, labels));
    rt.collect();
  }
  if (final_parameter != nullptr) *final_parameter = trainer.parameter(parameter);
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
  const auto registry = ca::policy::Registry::builtin();
  for (const std::string& policy : registry.names()) {
    // The policies that plan ahead have their own test (AutoTM's with a
    // short solver time limit).
    if (policy == "all-fast" || registry.describe(policy).plans_ahead()) continue;
    runs.push_back({"resnet", 18, policy, policy == "all-slow" ? 0.0 : 0.2});
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

TEST_CASE(
    "nn trainer: the policies that plan ahead follow their plan from the second iteration on, losses "
    "bit-identical") {
  // AutoTM's, AutoSwap's and ReDL's. The program is the dry run's steady
  // iteration, which the first real one already is: no departure.
  const std::vector<float> reference = train(tiny("resnet", 18), "all-fast", 4.0, 4);
  const auto registry = ca::policy::Registry::builtin();
  for (const ca::policy::PolicyDescriptor& d : registry.descriptors()) {
    if (!d.plans_ahead()) continue;
    const std::string& policy = d.name();
    CAPTURE(policy);
    ca::policy::AutotmPolicyOptions options = d.planned_options().value();
    options.solver.time_limit_seconds = 5;
    options.log = [](const std::string&) {};
    ca::policy::AutotmPolicy::Counters counters;
    const std::vector<float> losses = train(
        tiny("resnet", 18), std::make_unique<ca::policy::AutotmPolicy>(options), 0.2, 4, nullptr,
        [&](const ca::policy::Policy& p) { counters = dynamic_cast<const ca::policy::AutotmPolicy&>(p).counters(); });
    REQUIRE(losses.size() == reference.size());
    CHECK(std::memcmp(losses.data(), reference.data(), sizeof(float) * losses.size()) == 0);
    CHECK(counters.plans == 1);
    CHECK(counters.departures == 0);
    CHECK(counters.iterations_followed >= 2);  // the fourth ends after the last begin_iteration
    // At 20% of the footprint every planner moves something.
    if (policy != "autotm-static") CHECK(counters.moves_in + counters.moves_out > 0);
  }
}

namespace {

// Every policy that does not plan ahead, at each of `fractions` of the
// footprint, trains `config` for `iterations` steps with the losses of
// all-fast, bit for bit; returns the policies run.
int check_every_policy_bit_identical(const nn::ModelConfig& config, int iterations,
                                     const std::vector<double>& fractions = {0.2, 0.5, 1.0}) {
  const std::vector<float> reference = train(config, "all-fast", 4.0, iterations);
  REQUIRE(reference.size() == static_cast<std::size_t>(iterations));
  CHECK(std::isfinite(reference.back()));
  const auto registry = ca::policy::Registry::builtin();
  int policies = 0;
  for (const std::string& policy : registry.names()) {
    // The policies that plan ahead have tests of their own.
    if (policy == "all-fast" || registry.describe(policy).plans_ahead()) continue;
    ++policies;
    for (double fraction : fractions) {
      if (policy == "all-slow" && fraction != fractions.front()) continue;  // it has no fast tier to size
      CAPTURE(policy);
      CAPTURE(fraction);
      const std::vector<float> losses = train(config, policy, policy == "all-slow" ? 0.0 : fraction, iterations);
      REQUIRE(losses.size() == reference.size());
      CHECK(std::memcmp(losses.data(), reference.data(), sizeof(float) * losses.size()) == 0);
    }
  }
  return policies;
}

// `config` trained for 3 steps at 20% of its footprint under the planning
// policy `policy` (a plan of at most 1 s), with the losses `reference` of
// its 3 all-fast steps bit for bit, one plan and no departure from it;
// returns the policy's counters.
ca::policy::AutotmPolicy::Counters check_planned_bit_identical(const nn::ModelConfig& config, const std::string& policy,
                                                               const std::vector<float>& reference) {
  ca::policy::AutotmPolicyOptions options = ca::policy::Registry::builtin().describe(policy).planned_options().value();
  options.solver.time_limit_seconds = 1;
  options.log = [](const std::string&) {};
  ca::policy::AutotmPolicy::Counters counters;
  const std::vector<float> losses = train(
      config, std::make_unique<ca::policy::AutotmPolicy>(options), 0.2, 3, nullptr,
      [&](const ca::policy::Policy& p) { counters = dynamic_cast<const ca::policy::AutotmPolicy&>(p).counters(); });
  REQUIRE(losses.size() == reference.size());
  CHECK(std::memcmp(losses.data(), reference.data(), sizeof(float) * losses.size()) == 0);
  CHECK(counters.plans == 1);
  CHECK(counters.departures == 0);
  CHECK(counters.iterations_followed >= 1);
  return counters;
}

}  // namespace

TEST_CASE(
    "nn trainer: placement never changes arithmetic in Inception v4 — bit-identical losses under every policy "
    "at 20%, 50% and 100%") {
  // Rectangular kernels, n-input concatenations and padding-excluding
  // average pools, which ResNet and DenseNet have none of.
  // Its 149 kernels make it the longest of these runs: under a sanitizer,
  // which checks memory accesses rather than arithmetic, the 20% budget
  // alone, where every policy moves the most.
  const std::vector<double> fractions =
      test::sanitized_build ? std::vector<double>{0.2} : std::vector<double>{0.2, 0.5, 1.0};
  CHECK(check_every_policy_bit_identical(tiny_inception(), 2, fractions) > 10);  // the registry's policies were all run
}

TEST_CASE("nn trainer: AutoTM, AutoSwap and ReDL plan Inception v4 and follow their plan, losses bit-identical") {
  // One policy of each planner, on the dry run's program of a tiny
  // Inception v4; the rest of each family is the ResNet test's above. Under
  // a sanitizer ReDL's search, most of this test's time there, runs on the
  // ResNet and ViT programs only: its code is the same on this one.
  const nn::ModelConfig config = tiny_inception();
  const std::vector<float> reference = train(config, "all-fast", 4.0, 3);
  std::vector<std::string> policies = {"autotm-sync", "autoswap:doa"};
  if (!test::sanitized_build) policies.push_back("redl");
  for (const std::string& policy : policies) {
    CAPTURE(policy);
    const ca::policy::AutotmPolicy::Counters counters = check_planned_bit_identical(config, policy, reference);
    // At 20% of the footprint AutoTM and ReDL move something. AutoSwap's
    // candidates are objects of 1 MB or more (its paper's filter), which a
    // model this small has none of: nn_program_tests.cpp plans its program
    // without the filter.
    if (policy != "autoswap:doa") CHECK(counters.moves_in + counters.moves_out > 0);
  }
}

TEST_CASE(
    "nn trainer: placement never changes arithmetic in a ViT trained with AdamW — bit-identical losses under "
    "every policy at 20%, 50% and 100%") {
  // Attention, LayerNorm, GELU, token-wise linear layers and AdamW's two
  // moments per parameter, archived after each update: none of them is in
  // a CNN.
  CHECK(check_every_policy_bit_identical(tiny_vit(), 3) > 10);
}

TEST_CASE(
    "nn trainer: AutoTM, AutoSwap and ReDL plan a ViT trained with AdamW and follow their plan, losses "
    "bit-identical") {
  const nn::ModelConfig config = tiny_vit();
  const std::vector<float> reference = train(config, "all-fast", 4.0, 3);
  for (const std::string policy : {"autotm-sync", "autotm-static", "autoswap:doa", "redl"}) {
    CAPTURE(policy);
    (void)check_planned_bit_identical(config, policy, reference);
  }
}

TEST_CASE("nn trainer: no tensor is retired before its last use on ResNet and DenseNet graphs") {
  // The trainer throws retired_error if a kernel reads a retired tensor; a
  // fast tier of 20% makes the policy move everything it can meanwhile.
  for (const auto& [family, depth] : {std::pair<std::string, int>{"resnet", 50}, {"densenet", 121}, {"vgg", 11}}) {
    const auto& captured_family = family;  // Clang 14 cannot capture a binding
    CAPTURE(captured_family);
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
    const auto& captured_family = family;  // Clang 14 cannot capture a binding
    CAPTURE(captured_family);
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

TEST_CASE("nn trainer: in-place ReLU and add keep about two activations per conv-BN-ReLU layer, not three") {
  // ReLU's backward reads its output and add's reads nothing, so batch
  // norm's output is not kept and the ReLU (and the residual add before it)
  // overwrite it: a layer keeps the convolution's output (batch norm's
  // backward reads it) and the ReLU's (the next convolution's), as the same
  // network without ReLUs keeps the convolution's and batch norm's. Keeping
  // the ReLU's input as well would make it three per layer, well past the
  // bound checked here.
  for (const bool residual : {false, true}) {
    CAPTURE(residual);
    const std::uint64_t with = nn::measure_footprint([&] { return conv_bn_relu_chain(true, residual); });
    const std::uint64_t without = nn::measure_footprint([&] { return conv_bn_relu_chain(false, residual); });
    CHECK(static_cast<double>(with) < 1.2 * static_cast<double>(without));
  }
  const nn::Graph g = conv_bn_relu_chain(true, true);
  const nn::Liveness l = nn::Liveness::of(g);
  for (const nn::Node& node : g.nodes()) {
    if (node.op->kind() != "batch_norm" && node.op->kind() != "add") continue;
    CAPTURE(node.name);
    CHECK(l.last_backward_use[static_cast<std::size_t>(node.outputs[0])] < 0);  // read by no backward op
  }
}

TEST_CASE("nn trainer: ReLU and add run in place exactly where nothing reads their input later") {
  // Counts the forward relu and add kernels whose first source is their
  // destination.
  struct InPlace : nn::KernelObserver {
    std::map<std::string, std::pair<int, int>> counts;  // kind -> (in place, all)
    void on_kernel(const std::string& signature, std::span<const nn::KernelArg> args) override {
      const std::string kind = signature.substr(0, signature.find(' '));
      if (kind != "relu" && kind != "add") return;
      auto& [in_place, all] = counts[kind];
      in_place += args.front().tensor->id() == args.back().tensor->id() ? 1 : 0;
      ++all;
    }
  };
  const auto count = [](nn::Graph g) {
    ca::Runtime rt({ca::virtual_device(std::uint64_t{1} << 30)});
    nn::Trainer trainer(&rt, std::move(g), {}, /*run_kernels=*/false);
    InPlace observer;
    trainer.context().set_observer(&observer);
    (void)trainer.step({}, {});
    return observer.counts;
  };
  const auto chain = count(conv_bn_relu_chain(true, true));
  CHECK(chain.at("relu") == std::pair{8, 8});
  CHECK(chain.at("add") == std::pair{8, 8});

  // Here the ReLU's input is read by the add after it, and the add's first
  // input by the ReLU's backward: neither may be overwritten.
  nn::Graph g;
  const auto images = g.input("images", {4, 3, 8, 8});
  const auto labels = g.label("labels", {4});
  const auto x = nn::conv2d(g, "stem", images, {.out_channels = 4, .kernel = 3, .stride = 1, .padding = 1});
  const auto r = nn::relu(g, "relu", x);
  const auto y = nn::add(g, "join", r, x);
  g.set_loss(nn::softmax_cross_entropy(g, "loss", nn::linear(g, "fc", nn::global_avg_pool(g, "pool", y), 3), labels));
  const auto kept = count(std::move(g));
  CHECK(kept.at("relu") == std::pair{0, 1});
  CHECK(kept.at("add") == std::pair{0, 1});
}

TEST_CASE("nn trainer: recomputed DenseNet concatenations give the losses of kept ones, in a smaller footprint") {
  SUBCASE("against the running, materialised concatenation") {
    std::vector<float> running_stem;
    std::vector<float> recomputed_stem;
    const std::vector<float> running = losses_of(mini_densenet(true), 3, "stem.weight", &running_stem);
    const std::vector<float> recomputed = losses_of(mini_densenet(false), 3, "stem.weight", &recomputed_stem);
    REQUIRE(running.size() == recomputed.size());
    CHECK(std::memcmp(running.data(), recomputed.data(), sizeof(float) * running.size()) == 0);
    REQUIRE(running_stem.size() == recomputed_stem.size());
    CHECK(std::memcmp(running_stem.data(), recomputed_stem.data(), sizeof(float) * running_stem.size()) == 0);
    CHECK(nn::measure_footprint([] { return mini_densenet(false); }) <
          nn::measure_footprint([] { return mini_densenet(true); }));
  }
  SUBCASE("the model zoo's DenseNet with and without recomputation") {
    const nn::ModelConfig c = tiny("densenet", 121);
    const auto kept = [&] {
      nn::Graph g = nn::build_model(c);
      for (nn::Node& node : g.nodes()) node.recompute = false;
      return g;
    };
    const std::vector<float> with = losses_of(nn::build_model(c), 2);
    const std::vector<float> without = losses_of(kept(), 2);
    CHECK(std::memcmp(with.data(), without.data(), sizeof(float) * with.size()) == 0);
    const std::uint64_t recomputed_bytes = nn::measure_footprint([&] { return nn::build_model(c); });
    const std::uint64_t kept_bytes = nn::measure_footprint(kept);
    CAPTURE(recomputed_bytes);
    CAPTURE(kept_bytes);
    CHECK(recomputed_bytes < kept_bytes);
  }
}

TEST_CASE(
    "nn trainer: updating each parameter in the backward pass is the update at the end, with gradients alive "
    "for one backward step") {
  for (const char* family : {"resnet", "densenet"}) {
    const auto& captured_family = family;  // Clang 14 cannot capture a binding
    CAPTURE(captured_family);
    const nn::ModelConfig c = tiny(family, family == std::string("resnet") ? 18 : 121);
    const auto build = [&] { return nn::build_model(c); };
    nn::TrainerOptions in_backward;
    nn::TrainerOptions at_end;
    at_end.update_in_backward = false;
    REQUIRE(in_backward.update_in_backward);  // the default

    // The same arithmetic: losses and parameters bit for bit.
    const nn::Graph probe = build();
    const std::string first_parameter = probe.value(probe.values_with_role(nn::ValueRole::parameter).front()).name;
    std::vector<float> w_in_backward;
    std::vector<float> w_at_end;
    const std::vector<float> with = losses_of(build(), 3, first_parameter, &w_in_backward, in_backward);
    const std::vector<float> without = losses_of(build(), 3, first_parameter, &w_at_end, at_end);
    REQUIRE(with.size() == without.size());
    CHECK(std::memcmp(with.data(), without.data(), sizeof(float) * with.size()) == 0);
    REQUIRE(w_in_backward.size() == w_at_end.size());
    REQUIRE(!w_in_backward.empty());
    CHECK(std::memcmp(w_in_backward.data(), w_at_end.data(), sizeof(float) * w_at_end.size()) == 0);

    // Where the updates run: each SGD kernel follows the making of the
    // gradient it reads by a few kernels (its node's backward step), not by
    // the rest of the backward pass.
    struct Updates {
      std::size_t count = 0;
      std::uint32_t first = 0, last_other = 0;  // the first SGD kernel, the last kernel that is not one
      std::uint32_t widest_gap = 0;             // kernels from a gradient's first use to its SGD
    };
    const auto updates_of = [](const ca::plan::Program& program) {
      Updates u;
      std::vector<std::int64_t> first_use(program.objects().size(), -1);
      for (std::uint32_t k = 0; k < program.kernels().size(); ++k) {
        const ca::plan::ProgramKernel& kernel = program.kernels()[k];
        const bool sgd = kernel.name.rfind("sgd", 0) == 0;
        if (sgd) {
          if (u.count++ == 0) u.first = k;
          const std::int64_t made = first_use[kernel.args.front().object];  // the gradient (DIFF_WEIGHTS)
          REQUIRE(made >= 0);
          u.widest_gap = std::max(u.widest_gap, k - static_cast<std::uint32_t>(made));
        } else {
          u.last_other = k;
        }
        for (const auto& arg : kernel.args) {
          if (first_use[arg.object] < 0) first_use[arg.object] = k;
        }
      }
      return u;
    };
    const Updates interleaved = updates_of(nn::dry_run_program(build, in_backward));
    const Updates batched = updates_of(nn::dry_run_program(build, at_end));
    CAPTURE(interleaved.widest_gap);
    CAPTURE(batched.widest_gap);
    CHECK(interleaved.count == probe.values_with_role(nn::ValueRole::parameter).size());
    CHECK(interleaved.count == batched.count);
    CHECK(batched.first > batched.last_other);          // at the end: after every other kernel
    CHECK(interleaved.first < interleaved.last_other);  // in the backward pass
    CHECK(interleaved.widest_gap <= 8);
    CHECK(batched.widest_gap > 8);
    // Updated in the backward pass, a gradient does not wait for the end:
    // the iteration never needs more.
    CHECK(nn::measure_footprint(build, in_backward) <= nn::measure_footprint(build, at_end));
  }
}

TEST_CASE(
    "nn trainer: parameters kept in their primitives' layout train bit for bit as plain ones, with fewer "
    "reorders") {
  // DenseNet's channel counts (a growth of 4 at this width) are no multiple
  // of oneDNN's blocks: most of its weights would be padded in the blocked
  // layouts, so they stay plain, and the footprint must not grow.
  for (const std::string family : {"vgg", "resnet", "densenet"}) {
    const auto& captured_family = family;  // Clang 14 cannot capture a binding
    CAPTURE(captured_family);
    const nn::ModelConfig c = tiny(family, family == "vgg" ? 11 : family == "resnet" ? 18 : 121);
    const auto build = [&] { return nn::build_model(c); };
    nn::TrainerOptions kept;
    nn::TrainerOptions plain;
    plain.parameters_in_primitive_layout = false;
    REQUIRE(kept.parameters_in_primitive_layout);  // the default

    // Three steps each; the losses, then every parameter and momentum as
    // state() reads them (plain), bit for bit.
    struct Run {
      std::vector<float> losses;
      std::vector<nn::CheckpointTensor> state;
    };
    const auto run = [&](const nn::TrainerOptions& options) {
      ca::Runtime rt({ca::dram(64 << 20, "fast")}, ca::policy::Registry::builtin().make("all-fast"));
      nn::Trainer trainer(&rt, build(), options);
      auto data = nn::synthetic_dataset({c.channels, c.image_size, c.image_size}, c.classes, 5);
      std::vector<float> images(static_cast<std::size_t>(c.batch * c.channels * c.image_size * c.image_size));
      std::vector<float> labels(static_cast<std::size_t>(c.batch));
      Run r;
      for (int i = 0; i < 3; ++i) {
        data->next_batch(images, labels);
        r.losses.push_back(trainer.step(images, labels));
        rt.collect();
      }
      r.state = trainer.state();
      return r;
    };
    const Run blocked = run(kept);
    const Run as_plain = run(plain);
    REQUIRE(blocked.losses.size() == as_plain.losses.size());
    CHECK(std::memcmp(blocked.losses.data(), as_plain.losses.data(), sizeof(float) * blocked.losses.size()) == 0);
    REQUIRE(blocked.state.size() == as_plain.state.size());
    for (std::size_t i = 0; i < blocked.state.size(); ++i) {
      CAPTURE(blocked.state[i].name);
      REQUIRE(blocked.state[i].values.size() == as_plain.state[i].values.size());
      CHECK(std::memcmp(blocked.state[i].values.data(), as_plain.state[i].values.data(),
                        sizeof(float) * blocked.state[i].values.size()) == 0);
    }
    // A checkpoint moves between the layouts unchanged: a trainer that
    // keeps blocked parameters hands back exactly the plain state it loaded.
    {
      ca::Runtime rt({ca::dram(64 << 20, "fast")}, ca::policy::Registry::builtin().make("all-fast"));
      nn::Trainer trainer(&rt, build(), kept);
      trainer.load_state(as_plain.state);
      const std::vector<nn::CheckpointTensor> back = trainer.state();
      REQUIRE(back.size() == as_plain.state.size());
      for (std::size_t i = 0; i < back.size(); ++i) {
        CAPTURE(back[i].name);
        CHECK(back[i].values == as_plain.state[i].values);
      }
    }

    // The reorders of one iteration that touch a weight of a convolution or
    // linear layer (its dims are a parameter's, of rank 2 or 4): plain
    // weights are reordered for every primitive that wants a blocked layout
    // (the forward pass, backward data, the weight gradient); kept ones only
    // for the primitives that do not share the layout most of them use, at
    // most two of the three (at 2x2 pixels oneDNN's weight gradient goes
    // through a plain GEMM, while forward and backward data stay blocked).
    const nn::Graph probe = build();
    std::map<std::string, int> weight_dims;  // "64x3x3x3" -> parameters of those dims
    std::size_t weights = 0;
    for (nn::ValueId p : probe.values_with_role(nn::ValueRole::parameter)) {
      const nn::Dims& d = probe.value(p).dims;
      if (d.size() != 2 && d.size() != 4) continue;
      ++weights;
      std::string name;
      for (const std::int64_t extent : d) name += (name.empty() ? "" : "x") + std::to_string(extent);
      ++weight_dims[name];
    }
    const auto weight_reorders = [&](const nn::TrainerOptions& options) {
      std::size_t n = 0;
      const ca::plan::Program program = nn::dry_run_program(build, options);
      for (const ca::plan::ProgramKernel& k : program.kernels()) {
        if (k.name.rfind("reorder ", 0) != 0) continue;
        const std::size_t eq = k.name.find("src=");
        const std::string dims = k.name.substr(eq + 4, k.name.find(':', eq) - eq - 4);
        if (weight_dims.count(dims) != 0) ++n;
      }
      return n;
    };
    const std::size_t kept_reorders = weight_reorders(kept);
    const std::size_t plain_reorders = weight_reorders(plain);
    CAPTURE(weights);
    CAPTURE(kept_reorders);
    CAPTURE(plain_reorders);
    CHECK(kept_reorders < plain_reorders);
    if (family != "densenet") {  // no weight padded: every one kept blocked
      CHECK(kept_reorders <= 2 * weights);
      CHECK(plain_reorders > weights);
      CHECK(2 * kept_reorders < plain_reorders + weights);  // most of the weights lose two of their three
    }
    CHECK(nn::measure_footprint(build, kept) <= nn::measure_footprint(build, plain));
  }
}

TEST_CASE("nn trainer: a recomputed value's node reads its inputs where the value is first needed") {
  const nn::Graph g = mini_densenet(false);
  const nn::Liveness l = nn::Liveness::of(g);
  int concats = 0;
  for (std::size_t k = 0; k < g.nodes().size(); ++k) {
    const nn::Node& node = g.nodes()[k];
    for (nn::ValueId v : node.outputs) CHECK(l.recompute[static_cast<std::size_t>(v)] == node.recompute);
    if (node.op->kind() != "concat" || node.name == "block.concat") continue;
    ++concats;
    CAPTURE(node.name);
    // concat -> norm1 -> relu1 -> conv1: the concatenation is remade at
    // conv1's backward (which reads relu1's output) and last read by norm1's.
    const auto out = static_cast<std::size_t>(node.outputs[0]);
    CHECK(l.read_by_backward[out]);
    CHECK(l.last_backward_use[out] == static_cast<int>(k) + 1);
    CHECK(l.first_backward_use[out] == static_cast<int>(k) + 3);
    CHECK(g.nodes()[k + 3].op->kind() == "conv");
    // The new features it joins live until then, no longer.
    for (nn::ValueId input : node.inputs) {
      CHECK(l.last_backward_use[static_cast<std::size_t>(input)] <= static_cast<int>(k) + 3);
    }
  }
  CHECK(concats == 3);
  // And nothing is read after it was retired (the trainer would throw).
  CHECK_NOTHROW(losses_of(mini_densenet(false), 1));
}
