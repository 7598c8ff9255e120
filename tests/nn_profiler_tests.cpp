// Kernel signatures of the trainer's kernels (nn/dnnl_signature.hpp) and
// the profiler (nn/profiler.hpp): equal for equal shapes, different for
// different ones, FLOPs against a hand count, the names a trace records,
// and the profile cache of a real model. No timing is asserted: the
// profiles' times are measurements (bench/model_accuracy compares them).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "cachedarrays/nn/dnnl_signature.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/profiler.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "nn_test_support.hpp"
#include "test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
namespace plan = cachedarrays::plan;

struct SignatureRecorder final : nn::KernelObserver {
  std::vector<std::string> signatures;
  void on_kernel(const std::string& signature, std::span<const nn::KernelArg>) override {
    signatures.push_back(signature);
  }
  // The signatures of kind `kind`.
  [[nodiscard]] std::vector<std::string> of(std::string_view kind) const {
    std::vector<std::string> found;
    for (const std::string& s : signatures) {
      if (plan::kernel_kind(s) == kind) found.push_back(s);
    }
    return found;
  }
};

// The signatures the last node of `g` runs, forward and (with `backward`)
// backward, in a shape-only dry run over plain inputs of `dims`.
SignatureRecorder kernels_of(nn::Graph& g, const std::vector<nn::Dims>& dims, bool backward) {
  nn::Op& op = *g.nodes().back().op;
  nn::Context ctx(nullptr);
  SignatureRecorder recorder;
  ctx.set_observer(&recorder);
  std::vector<nn::Tensor> ins;
  for (const nn::Dims& d : dims) ins.push_back(ctx.make_plain(d));
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  if (backward) {
    const std::vector<nn::Tensor> grad_outs{ctx.make(outs[0].desc())};
    std::vector<nn::Tensor> grads(ins.size());
    const bool need[] = {true, true, true};
    op.backward(ctx, ins, outs, grad_outs, saved, std::span(need, ins.size()), grads);
  }
  return recorder;
}

struct ConvCase {
  std::int64_t n, c, h, out, k, stride, pad;
};

// The signatures of one convolution's forward and backward kernels.
SignatureRecorder conv_kernels(const ConvCase& c) {
  nn::Graph g;
  nn::conv2d(g, "conv", g.input("x", {c.n, c.c, c.h, c.h}), {c.out, c.k, c.stride, c.pad, false});
  return kernels_of(g, {{c.n, c.c, c.h, c.h}, {c.out, c.c, c.k, c.k}}, true);
}

nn::ModelConfig tiny_resnet() { return test::tiny_model("resnet", 18); }

}  // namespace

TEST_CASE("nn kernel signature: equal for equal shapes, different for different ones") {
  const ConvCase a{2, 3, 8, 4, 3, 1, 1};
  const SignatureRecorder first = conv_kernels(a);
  const SignatureRecorder again = conv_kernels(a);
  REQUIRE(first.of("conv").size() == 1);
  REQUIRE(first.of("conv_backward_data").size() == 1);
  REQUIRE(first.of("conv_backward_weights").size() == 1);
  CHECK(first.signatures == again.signatures);
  for (const ConvCase& other : {ConvCase{4, 3, 8, 4, 3, 1, 1}, ConvCase{2, 3, 8, 8, 3, 1, 1},
                                ConvCase{2, 3, 8, 4, 1, 1, 0}, ConvCase{2, 3, 16, 4, 3, 1, 1}}) {
    const SignatureRecorder b = conv_kernels(other);
    for (const char* kind : {"conv", "conv_backward_data", "conv_backward_weights"}) {
      CAPTURE(kind);
      CHECK(b.of(kind).at(0) != first.of(kind).at(0));
    }
  }
  const std::string s = first.of("conv").at(0);
  CHECK(s.starts_with("conv s1p1 src=2x3x8x8:"));
  CHECK(s.find(" weights=4x3x3x3:") != std::string::npos);
  CHECK(s.find(" dst=2x4x8x8:") != std::string::npos);
}

TEST_CASE("nn kernel signature: a convolution's FLOPs are 2*N*OC*OH*OW*IC*KH*KW in all three passes") {
  // 2 images of 3x10x10, 5 output channels, 3x3 kernel, stride 2, padding 1: 5x5 outputs.
  const ConvCase c{2, 3, 10, 5, 3, 2, 1};
  const std::uint64_t oh = (10 + 2 * 1 - 3) / 2 + 1;
  REQUIRE(oh == 5);
  const std::uint64_t by_hand = 2ull * 2 * 5 * oh * oh * 3 * 3 * 3;  // 2*N*OC*OH*OW*IC*KH*KW = 2700
  const SignatureRecorder r = conv_kernels(c);
  for (const char* kind : {"conv", "conv_backward_data", "conv_backward_weights"}) {
    CAPTURE(kind);
    CHECK(plan::kernel_flops(r.of(kind).at(0)) == by_hand);
    CHECK(r.of(kind).at(0).starts_with(std::string(kind) + " s2p1 "));
  }
  // Data movement has none.
  for (const std::string& s : r.of("reorder")) CHECK(plan::kernel_flops(s) == 0);
}

TEST_CASE("nn kernel signature: an inner product's FLOPs are 2*N*IN*OUT") {
  nn::Graph g;
  nn::linear(g, "fc", g.input("x", {4, 6}), 3, false);
  const SignatureRecorder r = kernels_of(g, {{4, 6}, {3, 6}}, false);
  REQUIRE(r.of("linear").size() == 1);
  CHECK(plan::kernel_flops(r.of("linear")[0]) == 2 * 4 * 6 * 3);
}

TEST_CASE("nn kernel signature: a trace records every kernel under its signature, the op kind first") {
  const nn::ModelConfig config = tiny_resnet();
  ca::Runtime rt({ca::dram(nn::measure_footprint([&] { return nn::build_model(config); }))});
  const ca::Trace& trace = rt.start_trace();
  {
    nn::Trainer trainer(&rt, nn::build_model(config));
    std::vector<float> images(2 * 3 * 32 * 32, 0.5f);
    std::vector<float> labels(2, 1.0f);
    (void)trainer.step(images, labels);
  }
  std::set<std::string> kinds;
  for (const std::string& name : trace.names()) kinds.emplace(plan::kernel_kind(name));
  for (const char* kind :
       {"conv", "conv_backward_data", "conv_backward_weights", "batch_norm", "batch_norm_backward", "relu",
        "relu_backward", "add", "max_pool", "global_avg_pool", "linear", "sgd", "reorder", "softmax_cross_entropy"}) {
    CAPTURE(kind);
    CHECK(kinds.contains(kind));
  }
  // The dry run that lists a model's kernels finds the real run's ones.
  const std::vector<std::string> listed = nn::kernel_signatures([&] { return nn::build_model(config); });
  CHECK(listed.size() > 20);
  for (const std::string& s : listed) {
    CAPTURE(s);
    CHECK(std::find(trace.names().begin(), trace.names().end(), s) != trace.names().end());
  }
}

TEST_CASE("nn profiler: a second profile_model loads the cache instead of measuring") {
  const test::ScratchPath file("nn-profiles.json");
  const auto build = [] { return nn::build_model(tiny_resnet()); };
  nn::ProfilerOptions options;
  options.iterations = 1;
  bool measured = false;
  const plan::KernelProfiles first = nn::profile_model(build, file.path.string(), options, &measured);
  CHECK(measured);
  CHECK(first.key() == nn::this_machine("optane"));
  CHECK_FALSE(first.key().cpu.empty());
  CHECK(first.key().cores >= 1);
  for (const std::string& s : nn::kernel_signatures(build)) {
    CAPTURE(s);
    const plan::KernelProfile* p = first.find(s);
    REQUIRE(p != nullptr);
    CHECK(p->fast_seconds > 0);
    CHECK(p->slow_seconds > 0);
    CHECK(p->flops == plan::kernel_flops(s));
    CHECK(p->bytes_read + p->bytes_written > 0);
  }
  const plan::KernelProfiles second = nn::profile_model(build, file.path.string(), options, &measured);
  CHECK_FALSE(measured);
  CHECK(second == first);

  SUBCASE("kernels on other compute threads are another key: measured again") {
    options.compute_threads = first.key().cores + 1;
    const plan::KernelProfiles more = nn::profile_model(build, file.path.string(), options, &measured);
    CHECK(measured);
    CHECK(more.key().cores == first.key().cores + 1);
    CHECK(more.key() == nn::this_machine("optane", first.key().cores + 1));
  }
  SUBCASE("another slow tier is another key: measured again") {
    options.slow_tier = "cxl";
    const plan::KernelProfiles cxl = nn::profile_model(build, file.path.string(), options, &measured);
    CHECK(measured);
    CHECK(cxl.key().slow_tier == "cxl");
  }
  SUBCASE("bad options are refused") {
    options.iterations = 0;
    CHECK_THROWS_AS((void)nn::measure_profiles(build, options), ca::invalid_argument);
    options.iterations = 1;
    options.slow_tier = "none";
    CHECK_THROWS_AS((void)nn::measure_profiles(build, options), ca::invalid_argument);
  }
}

TEST_CASE("nn profiler: an AutoTM policy's options plan from the model's profiles on the emulated tier's bandwidths") {
  const test::ScratchPath file("nn-autotm-profiles.json");
  const auto build = [] { return nn::build_model(tiny_resnet()); };
  nn::ProfilerOptions options;
  options.iterations = 1;
  bool measured = false;
  const ca::policy::AutotmPolicyOptions autotm =
      nn::autotm_policy_options("autotm-async", build, file.path.string(), options, &measured);
  CHECK(measured);
  CHECK(autotm.solver.formulation == plan::AutotmFormulation::asynchronous);
  const ca::EmulationProfile optane = *ca::emulation::profile("optane");
  CHECK(autotm.slow_tier.read_gbps == doctest::Approx(optane.read_gbps));
  CHECK(autotm.slow_tier.write_gbps == doctest::Approx(optane.write_gbps));
  CHECK(autotm.fast_tier.read_gbps == doctest::Approx(optane.dram_read_gbps));
  REQUIRE(autotm.time_model != nullptr);
  // The model times each profiled kernel as measured, all in the fast tier.
  const plan::KernelProfiles profiles = nn::profile_model(build, file.path.string(), options, &measured);
  CHECK_FALSE(measured);
  const std::string signature = nn::kernel_signatures(build).front();
  const plan::KernelProfile* p = profiles.find(signature);
  REQUIRE(p != nullptr);
  std::vector<plan::ArgTraffic> args{{p->bytes_read, ca::Access::read, autotm.fast_tier.read_gbps},
                                     {p->bytes_written, ca::Access::write, autotm.fast_tier.write_gbps}};
  CHECK(autotm.time_model->seconds(signature, args) == doctest::Approx(p->fast_seconds));
  args[0].gbps = autotm.slow_tier.read_gbps;
  args[1].gbps = autotm.slow_tier.write_gbps;
  CHECK(autotm.time_model->seconds(signature, args) == doctest::Approx(p->slow_seconds));

  test::check_contains(
      test::invalid_argument_of([&] { (void)nn::autotm_policy_options("ca-lm", build, file.path.string(), options); }),
      "'ca-lm' is not a policy that plans ahead (autotm-static");
  options.slow_tier = "none";
  test::check_contains(test::invalid_argument_of(
                           [&] { (void)nn::autotm_policy_options("autotm-sync", build, file.path.string(), options); }),
                       "must be emulated");
}
