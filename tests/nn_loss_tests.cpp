// nn op softmax_cross_entropy: forward against a naive reference (also for
// large logits), the gradient softmax - onehot, finite differences, shape
// validation with the dry run, primitive reuse. Bad labels are in
// nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using dnnl::memory;
using test::invalid_argument_message, test::tensor;

// mean_n -log(exp(z_n[l_n]) / sum_k exp(z_n[k])), in long double.
double reference_loss(const std::vector<float>& z, const std::vector<float>& labels, std::size_t k) {
  const std::size_t n = labels.size();
  long double total = 0;
  for (std::size_t row = 0; row < n; ++row) {
    long double sum = 0;
    for (std::size_t c = 0; c < k; ++c) sum += std::exp(static_cast<long double>(z[row * k + c]));
    total += std::log(sum) - z[row * k + static_cast<std::size_t>(labels[row])];
  }
  return static_cast<double>(total / static_cast<long double>(n));
}

struct Loss {
  nn::Graph g;
  nn::Op* op = nullptr;
  Loss(std::int64_t n, std::int64_t k) {
    nn::softmax_cross_entropy(g, "loss", g.input("logits", {n, k}), g.label("labels", {n}));
    op = g.nodes().back().op.get();
  }
};

}  // namespace

TEST_CASE("nn softmax_cross_entropy: forward matches a naive reference") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  Loss loss(4, 5);
  CHECK(loss.op->kind() == "softmax_cross_entropy");
  CHECK(loss.g.value(static_cast<nn::ValueId>(loss.g.value_count() - 1)).dims == nn::Dims{1});
  const std::vector<float> z = test::random_values(20, 51, 2.0f);
  const std::vector<float> labels{0, 4, 2, 2};
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc({4, 5}), z), tensor(ctx, nn::plain_desc({4}), labels)};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  loss.op->forward(ctx, ins, outs, saved);
  CHECK(outs[0].dims() == nn::Dims{1});
  CHECK(ctx.read(outs[0]).at(0) == doctest::Approx(reference_loss(z, labels, 5)).epsilon(1e-6));

  // Uniform logits: log K whatever the labels.
  const std::vector<nn::Tensor> flat{tensor(ctx, nn::plain_desc({4, 5}), std::vector<float>(20, 3.0f)), ins[1]};
  loss.op->forward(ctx, flat, outs, saved);
  CHECK(ctx.read(outs[0]).at(0) == doctest::Approx(std::log(5.0)).epsilon(1e-6));
}

TEST_CASE("nn softmax_cross_entropy: large logits neither overflow nor underflow") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  Loss loss(2, 3);
  // exp(1000) overflows float and double; the shifted form does not.
  const std::vector<float> z{1000, 0, -1000, -500, 500, 499};
  const std::vector<float> labels{0, 2};
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc({2, 3}), z), tensor(ctx, nn::plain_desc({2}), labels)};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  loss.op->forward(ctx, ins, outs, saved);
  // Row 0 (label 0, the maximum): log(1 + e^-1000 + e^-2000) = 0 in float.
  // Row 1 (label 2): logsumexp(-500, 500, 499) - 499 = 1 + log(1 + 1/e).
  const double row1 = 1.0 + std::log1p(std::exp(-1.0));
  const float value = ctx.read(outs[0]).at(0);
  CHECK(std::isfinite(value));
  CHECK(value == doctest::Approx(row1 / 2).epsilon(1e-5));
}

TEST_CASE("nn softmax_cross_entropy: gradient is g * (softmax - onehot) / N and none for labels") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  Loss loss(3, 4);
  CHECK(loss.op->backward_reads_inputs(2) == std::vector<bool>{false, true});
  CHECK(loss.op->backward_reads_outputs(1) == std::vector<bool>{false});
  const std::vector<float> z = test::random_values(12, 52);
  const std::vector<float> labels{3, 0, 1};
  std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc({3, 4}), z), tensor(ctx, nn::plain_desc({3}), labels)};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  loss.op->forward(ctx, ins, outs, saved);
  ins[0].reset();  // backward reads the labels only
  outs[0].reset();
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({1}), {2.0f})};
  std::vector<nn::Tensor> grads(2);
  const bool need[] = {true, true};  // even if asked, labels get no gradient
  loss.op->backward(ctx, ins, outs, grad_outs, saved, need, grads);
  CHECK_FALSE(grads[1]);
  REQUIRE(grads[0]);
  CHECK(grads[0].dims() == nn::Dims{3, 4});
  const std::vector<float> got = ctx.read(grads[0]);
  for (std::size_t row = 0; row < 3; ++row) {
    double sum = 0;
    for (std::size_t c = 0; c < 4; ++c) sum += std::exp(static_cast<double>(z[row * 4 + c]));
    for (std::size_t c = 0; c < 4; ++c) {
      const double p = std::exp(static_cast<double>(z[row * 4 + c])) / sum;
      const double want = 2.0 * (p - (c == static_cast<std::size_t>(labels[row]) ? 1.0 : 0.0)) / 3.0;
      CHECK(got[row * 4 + c] == doctest::Approx(want).epsilon(1e-5));
    }
  }
}

TEST_CASE("nn softmax_cross_entropy: gradient check") {
  Loss loss(4, 6);
  test::GradCheckOptions o;
  o.skip_inputs = {false, true};
  test::gradcheck(*loss.op, {{4, 6}, {4}}, {test::random_values(24, 53), {5, 0, 3, 3}}, o);
}

TEST_CASE("nn softmax_cross_entropy: forward twice creates no new primitives even when the logits need a reorder") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  Loss loss(8, 10);
  // Logits in a transposed layout need a reorder (a primitive) to plain.
  const memory::desc ba(nn::Dims{8, 10}, memory::data_type::f32, memory::format_tag::ba);
  const std::vector<float> z = test::random_values(80, 54);
  const std::vector<float> labels{0, 1, 2, 3, 4, 5, 6, 9};
  const std::vector<nn::Tensor> ins{tensor(ctx, ba, z), tensor(ctx, nn::plain_desc({8}), labels)};
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({1}), {1.0f})};
  const bool need[] = {true, false};
  float first = 0;
  const auto pass = [&] {
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    std::vector<nn::Tensor> grads(2);
    loss.op->forward(ctx, ins, outs, saved);
    loss.op->backward(ctx, ins, outs, grad_outs, saved, need, grads);
    return ctx.read(outs[0]).at(0);
  };
  first = pass();
  CHECK(first == doctest::Approx(reference_loss(z, labels, 10)).epsilon(1e-6));
  const std::uint64_t created = ctx.primitives_created();
  CHECK(pass() == first);
  CHECK(ctx.primitives_created() == created);
}

TEST_CASE("nn softmax_cross_entropy: output_dims validation and the dry run") {
  nn::Graph g;
  const nn::ValueId z = g.input("z", {4, 10});
  const std::string labels =
      invalid_argument_message([&] { nn::softmax_cross_entropy(g, "ce", z, g.label("y", {5})); });
  CHECK(labels.find("softmax_cross_entropy 'ce'") != std::string::npos);
  CHECK(labels.find("[4]") != std::string::npos);
  CHECK(labels.find("[5]") != std::string::npos);
  const std::string rank = invalid_argument_message([&] {
    nn::softmax_cross_entropy(g, "ce", g.input("img", {4, 10, 1, 1}), g.label("y2", {4}));
  });
  CHECK(rank.find("[N, K]") != std::string::npos);
  CHECK(rank.find("[4, 10, 1, 1]") != std::string::npos);
  CHECK_FALSE(invalid_argument_message([&] { nn::softmax_cross_entropy(g, "ce", z, g.label("y3", {4, 1})); }).empty());
  CHECK(g.nodes().empty());

  nn::Context ctx(nullptr);
  const nn::ValueId l = nn::softmax_cross_entropy(g, "ce", z, g.label("y4", {4}));
  CHECK(g.value(l).dims == nn::Dims{1});
  const std::vector<nn::Tensor> ins{ctx.make_plain({4, 10}), ctx.make_plain({4})};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  g.nodes().back().op->forward(ctx, ins, outs, saved);
  CHECK(outs[0].dims() == nn::Dims{1});
  CHECK(outs[0].array() == nullptr);
}
