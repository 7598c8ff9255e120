// nn transformer layers layer_norm, gelu, softmax, token_linear and matmul:
// forward against naive loops, the same values from a second forward (a
// recomputation), finite-difference gradients of every input, the
// builders' parameters, the kernels' names and FLOPs, and the refusals of
// shapes and options they cannot take, each naming the layer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/nn/transformer_layers.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using test::check_close, test::count, test::tensor;

// The op of the graph's last node.
nn::Op& last_op(nn::Graph& g) { return *g.nodes().back().op; }

// Output 0 of one forward pass of `op` on plain tensors holding `values`;
// the pass runs twice and must give the same values both times, as a
// recomputation in the backward pass does.
std::vector<float> forward_twice(nn::Op& op, const std::vector<nn::Dims>& dims,
                                 const std::vector<std::vector<float>>& values) {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  std::vector<nn::Tensor> ins;
  for (std::size_t i = 0; i < dims.size(); ++i) ins.push_back(tensor(ctx, nn::plain_desc(dims[i]), values[i]));
  const std::vector<float> first = ctx.read(test::forward(ctx, op, ins));
  ctx.set_phase(nn::Context::Phase::recompute);
  CHECK(ctx.read(test::forward(ctx, op, ins)) == first);
  return first;
}

// Records every kernel's signature.
struct FlopsRecorder final : nn::KernelObserver {
  std::vector<std::string> signatures;
  void on_kernel(const std::string& signature, std::span<const nn::KernelArg>) override {
    signatures.push_back(signature);
  }
  // The FLOPs of the first kernel of `kind` (-1: none ran).
  [[nodiscard]] std::int64_t flops(std::string_view kind) const {
    for (const std::string& s : signatures) {
      if (ca::plan::kernel_kind(s) == kind) return static_cast<std::int64_t>(ca::plan::kernel_flops(s));
    }
    return -1;
  }
};

// One forward and backward pass of `op` on random plain inputs of `dims`
// (every gradient asked for) under a recorder.
FlopsRecorder record_kernels(nn::Op& op, const std::vector<nn::Dims>& dims) {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  FlopsRecorder recorder;
  ctx.set_observer(&recorder);
  std::vector<nn::Tensor> ins;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    ins.push_back(tensor(ctx, nn::plain_desc(dims[i]), test::random_values(count(dims[i]), 40 + i)));
  }
  const nn::Dims y = op.output_dims(dims).at(0);
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(y), test::random_values(count(y), 50))};
  std::unique_ptr<bool[]> flags(new bool[dims.size()]);
  for (std::size_t i = 0; i < dims.size(); ++i) flags[i] = true;
  test::forward_backward(ctx, op, ins, grad_outs, std::span<const bool>(flags.get(), dims.size()));
  return recorder;
}

// The ValueInfo of input `i` of the graph's last node.
const nn::ValueInfo& input_info(const nn::Graph& g, std::size_t i) { return g.value(g.nodes().back().inputs.at(i)); }

}  // namespace

// ---- layer_norm ----------------------------------------------------------

namespace {

// y = w (x - mean) / sqrt(var + eps) + b over the last axis of each row.
std::vector<float> reference_layer_norm(const nn::Dims& xd, const std::vector<float>& x, const std::vector<float>& w,
                                        const std::vector<float>& b, float eps) {
  const auto d = static_cast<std::size_t>(xd.back());
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += x[r * d + i];
    mean /= static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    var /= static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) {
      y[r * d + i] = static_cast<float>(w[i] * (x[r * d + i] - mean) / std::sqrt(var + eps) + b[i]);
    }
  }
  return y;
}

}  // namespace

TEST_CASE("nn transformer layers: layer_norm matches a naive loop and starts at weight ones, bias zeros") {
  for (const nn::Dims& xd : {nn::Dims{2, 3, 8}, nn::Dims{4, 6}, nn::Dims{2, 2, 2, 5}}) {
    CAPTURE(nn::to_string(xd));
    nn::Graph g;
    const nn::ValueId y = nn::layer_norm(g, "blocks.0.norm1", g.input("x", xd));
    CHECK(g.value(y).dims == xd);
    nn::Op& op = last_op(g);
    CHECK(op.kind() == "layer_norm");
    CHECK(op.backward_reads_inputs(3) == std::vector<bool>{true, true, false});
    CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
    const nn::Dims features{xd.back()};
    CHECK(input_info(g, 1).name == "blocks.0.norm1.weight");
    CHECK(input_info(g, 1).dims == features);
    CHECK(input_info(g, 1).init == nn::Init::ones);
    CHECK_FALSE(input_info(g, 1).weight_decay);
    CHECK(input_info(g, 2).name == "blocks.0.norm1.bias");
    CHECK(input_info(g, 2).init == nn::Init::zeros);
    CHECK_FALSE(input_info(g, 2).weight_decay);

    const auto x = test::random_values(count(xd), 1, 2.0f);
    const auto w = test::random_values(count(features), 2);
    const auto b = test::random_values(count(features), 3);
    check_close(forward_twice(op, {xd, features, features}, {x, w, b}), reference_layer_norm(xd, x, w, b, 1e-6f));
  }
}

TEST_CASE("nn transformer layers: layer_norm saves the mean and variance; a wider epsilon is honoured") {
  const nn::Dims xd{2, 3, 8};
  nn::Graph g;
  nn::layer_norm(g, "ln", g.input("x", xd), 0.5f);
  nn::Op& op = last_op(g);
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const auto x = test::random_values(count(xd), 4);
  const std::vector<float> w(8, 1.0f), b(8, 0.0f);
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(xd), x), tensor(ctx, nn::plain_desc({8}), w),
                                    tensor(ctx, nn::plain_desc({8}), b)};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  REQUIRE(saved.size() == 2);
  CHECK(saved[0].dims() == nn::Dims{2, 3});
  CHECK(saved[1].dims() == nn::Dims{2, 3});
  CHECK(outs[0].desc() == nn::plain_desc(xd));
  check_close(ctx.read(outs[0]), reference_layer_norm(xd, x, w, b, 0.5f));
}

TEST_CASE("nn transformer layers: layer_norm gradient check of x, weight and bias on [2, 3, 8]") {
  const nn::Dims xd{2, 3, 8};
  nn::Graph g;
  nn::layer_norm(g, "ln", g.input("x", xd));
  test::gradcheck(last_op(g), {xd, {8}, {8}},
                  {test::random_values(48, 5), test::random_values(8, 6), test::random_values(8, 7)});
}

// ---- gelu ----------------------------------------------------------------

TEST_CASE("nn transformer layers: gelu matches x Phi(x) with the exact erf") {
  const nn::Dims xd{2, 3, 7};
  nn::Graph g;
  nn::gelu(g, "blocks.0.mlp.act", g.input("x", xd));
  nn::Op& op = last_op(g);
  CHECK(op.kind() == "gelu");
  CHECK(op.backward_reads_inputs(1) == std::vector<bool>{true});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
  CHECK(op.in_place_input() == -1);
  const auto x = test::random_values(count(xd), 8, 2.0f);
  std::vector<float> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    want[i] = static_cast<float>(0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))));
  }
  check_close(forward_twice(op, {xd}, {x}), want);
}

TEST_CASE("nn transformer layers: gelu gradient check") {
  nn::Graph g;
  nn::gelu(g, "act", g.input("x", {2, 3, 4}));
  test::GradCheckOptions o;
  o.samples_per_input = 12;
  test::gradcheck(last_op(g), {{2, 3, 4}}, {test::random_values(24, 9, 1.5f)}, o);
}

// ---- softmax -------------------------------------------------------------

namespace {

// exp(x - max) / sum over the last axis of each row.
std::vector<float> reference_softmax(const nn::Dims& xd, const std::vector<float>& x) {
  const auto d = static_cast<std::size_t>(xd.back());
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double max = x[r * d];
    for (std::size_t i = 1; i < d; ++i) max = std::max<double>(max, x[r * d + i]);
    double sum = 0;
    for (std::size_t i = 0; i < d; ++i) sum += std::exp(x[r * d + i] - max);
    for (std::size_t i = 0; i < d; ++i) y[r * d + i] = static_cast<float>(std::exp(x[r * d + i] - max) / sum);
  }
  return y;
}

}  // namespace

TEST_CASE("nn transformer layers: softmax matches a naive loop over the last axis") {
  for (const nn::Dims& xd : {nn::Dims{3, 5}, nn::Dims{2, 2, 3, 4}, nn::Dims{2, 3, 6}}) {
    CAPTURE(nn::to_string(xd));
    nn::Graph g;
    nn::softmax(g, "blocks.0.attn.softmax", g.input("x", xd));
    nn::Op& op = last_op(g);
    CHECK(op.kind() == "softmax");
    CHECK(op.backward_reads_inputs(1) == std::vector<bool>{false});
    CHECK(op.backward_reads_outputs(1) == std::vector<bool>{true});
    const auto x = test::random_values(count(xd), 10, 3.0f);
    check_close(forward_twice(op, {xd}, {x}), reference_softmax(xd, x));
  }
}

TEST_CASE("nn transformer layers: softmax takes its input's storage when offered") {
  const nn::Dims xd{2, 3, 5};
  nn::Graph g;
  nn::softmax(g, "sm", g.input("x", xd));
  nn::Op& op = last_op(g);
  CHECK(op.in_place_input() == 0);
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const auto x = test::random_values(count(xd), 11);
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(xd), x)};
  std::vector<nn::Tensor> outs{ins[0]};
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  CHECK(outs[0].id() == ins[0].id());
  check_close(ctx.read(outs[0]), reference_softmax(xd, x));
}

TEST_CASE("nn transformer layers: softmax gradient check") {
  nn::Graph g;
  nn::softmax(g, "sm", g.input("x", {2, 3, 5}));
  test::gradcheck(last_op(g), {{2, 3, 5}}, {test::random_values(30, 12)});
}

// ---- token_linear --------------------------------------------------------

namespace {

// y[n][t][o] = sum_i x[n][t][i] w[o][i] + b[o].
std::vector<float> reference_token_linear(const nn::Dims& xd, std::int64_t out, const std::vector<float>& x,
                                          const std::vector<float>& w, const std::vector<float>& b) {
  const auto in = static_cast<std::size_t>(xd.back());
  const auto outs = static_cast<std::size_t>(out);
  const std::size_t rows = x.size() / in;
  std::vector<float> y(rows * outs);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < outs; ++o) {
      double acc = b[o];
      for (std::size_t i = 0; i < in; ++i) acc += static_cast<double>(x[r * in + i]) * w[o * in + i];
      y[r * outs + o] = static_cast<float>(acc);
    }
  return y;
}

}  // namespace

TEST_CASE("nn transformer layers: token_linear matches a naive loop, with timm's parameters") {
  const nn::Dims xd{2, 3, 5};
  nn::Graph g;
  const nn::ValueId y = nn::token_linear(g, "blocks.0.attn.qkv", g.input("x", xd), 4);
  CHECK(g.value(y).dims == nn::Dims{2, 3, 4});
  nn::Op& op = last_op(g);
  CHECK(op.kind() == "linear");
  CHECK(op.backward_reads_inputs(3) == std::vector<bool>{true, true, false});
  CHECK(input_info(g, 1).name == "blocks.0.attn.qkv.weight");
  CHECK(input_info(g, 1).dims == nn::Dims{4, 5});
  CHECK(input_info(g, 1).init == nn::Init::small_normal);
  CHECK(input_info(g, 1).fan_in == 5);
  CHECK(input_info(g, 1).weight_decay);
  CHECK(input_info(g, 2).name == "blocks.0.attn.qkv.bias");
  CHECK(input_info(g, 2).dims == nn::Dims{4});
  CHECK(input_info(g, 2).init == nn::Init::zeros);
  CHECK_FALSE(input_info(g, 2).weight_decay);

  const auto x = test::random_values(count(xd), 13);
  const auto w = test::random_values(20, 14, 0.5f);
  const auto b = test::random_values(4, 15);
  check_close(forward_twice(op, {xd, {4, 5}, {4}}, {x, w, b}), reference_token_linear(xd, 4, x, w, b));
}

TEST_CASE("nn transformer layers: token_linear gradient check of x, weight and bias") {
  const nn::Dims xd{2, 3, 5};
  nn::Graph g;
  nn::token_linear(g, "fc", g.input("x", xd), 4);
  test::gradcheck(last_op(g), {xd, {4, 5}, {4}},
                  {test::random_values(30, 16), test::random_values(20, 17, 0.5f), test::random_values(4, 18)});
}

TEST_CASE("nn transformer layers: token_linear's kernels count 2 N T in out FLOPs") {
  const nn::Dims xd{2, 3, 5};
  nn::Graph g;
  nn::token_linear(g, "fc", g.input("x", xd), 4);
  const FlopsRecorder r = record_kernels(last_op(g), {xd, {4, 5}, {4}});
  const std::int64_t flops = 2 * 2 * 3 * 5 * 4;
  CHECK(r.flops("linear") == flops);
  CHECK(r.flops("linear_backward_data") == flops);
  CHECK(r.flops("linear_backward_weights") == flops);
}

// ---- matmul --------------------------------------------------------------

namespace {

// y = scale * a op(b) over the last two axes, batch dims in front.
std::vector<float> reference_matmul(const nn::Dims& ad, const nn::Dims& bd, bool transpose_b, float scale,
                                    const std::vector<float>& a, const std::vector<float>& b) {
  const std::size_t r = ad.size();
  const auto m = static_cast<std::size_t>(ad[r - 2]);
  const auto k = static_cast<std::size_t>(ad[r - 1]);
  const auto n = static_cast<std::size_t>(transpose_b ? bd[r - 2] : bd[r - 1]);
  const std::size_t batch = a.size() / (m * k);
  std::vector<float> y(batch * m * n);
  for (std::size_t p = 0; p < batch; ++p)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::size_t l = 0; l < k; ++l) {
          const float bv = transpose_b ? b[p * n * k + j * k + l] : b[p * k * n + l * n + j];
          acc += static_cast<double>(a[p * m * k + i * k + l]) * bv;
        }
        y[p * m * n + i * n + j] = static_cast<float>(scale * acc);
      }
  return y;
}

struct MatmulCase {
  nn::Dims a, b;
  bool transpose_b;
  float scale;
};

const MatmulCase matmul_cases[] = {
    {{2, 2, 3, 4}, {2, 2, 4, 5}, false, 1.0f},
    {{2, 2, 3, 4}, {2, 2, 5, 4}, true, 0.5f},  // attention scores: q k^T / sqrt(4)
    {{2, 2, 3, 3}, {2, 2, 3, 4}, false, 0.25f},
    {{3, 4}, {4, 2}, false, 1.0f},
    {{2, 3, 4}, {2, 6, 4}, true, 1.0f},
    {{1, 2, 2, 3, 4}, {1, 2, 2, 4, 2}, false, 2.0f},
};

}  // namespace

TEST_CASE("nn transformer layers: matmul matches a naive loop, with and without transpose_b and scale") {
  for (const MatmulCase& c : matmul_cases) {
    CAPTURE(nn::to_string(c.a));
    CAPTURE(nn::to_string(c.b));
    CAPTURE(c.transpose_b);
    nn::Graph g;
    nn::matmul(g, "blocks.0.attn.scores", g.input("a", c.a), g.input("b", c.b), c.transpose_b, c.scale);
    nn::Op& op = last_op(g);
    CHECK(op.kind() == "matmul");
    CHECK(op.backward_reads_inputs(2) == std::vector<bool>{true, true});
    CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
    const auto a = test::random_values(count(c.a), 20);
    const auto b = test::random_values(count(c.b), 21);
    check_close(forward_twice(op, {c.a, c.b}, {a, b}), reference_matmul(c.a, c.b, c.transpose_b, c.scale, a, b));
  }
}

TEST_CASE("nn transformer layers: matmul gradient check of a and b, batched, with and without transpose_b") {
  for (const MatmulCase& c : matmul_cases) {
    CAPTURE(nn::to_string(c.a));
    CAPTURE(nn::to_string(c.b));
    CAPTURE(c.transpose_b);
    nn::Graph g;
    nn::matmul(g, "mm", g.input("a", c.a), g.input("b", c.b), c.transpose_b, c.scale);
    test::GradCheckOptions o;
    o.samples_per_input = 8;
    test::gradcheck(last_op(g), {c.a, c.b}, {test::random_values(count(c.a), 22), test::random_values(count(c.b), 23)},
                    o);
  }
}

TEST_CASE("nn transformer layers: matmul's three kernels each count 2 |dst| K FLOPs") {
  nn::Graph g;
  // y [2, 2, 3, 5] = a [2, 2, 3, 4] b^T, b [2, 2, 5, 4]: M 3, K 4, N 5.
  nn::matmul(g, "mm", g.input("a", {2, 2, 3, 4}), g.input("b", {2, 2, 5, 4}), true, 0.5f);
  const FlopsRecorder r = record_kernels(last_op(g), {{2, 2, 3, 4}, {2, 2, 5, 4}});
  const std::int64_t flops = 2 * 4 * 3 * 4 * 5;
  CHECK(r.flops("matmul") == flops);
  CHECK(r.flops("matmul_backward_a") == flops);
  CHECK(r.flops("matmul_backward_b") == flops);
  for (const std::string& s : r.signatures) {
    CAPTURE(s);
    CHECK(ca::plan::kernel_kind(s) != "reorder");  // the transposes are views, never copies
  }
}

// ---- refusals ------------------------------------------------------------

TEST_CASE("nn transformer layers: shapes and options the layers cannot take are refused, naming the layer") {
  using test::check_contains, test::invalid_argument_of;
  nn::Graph g;
  const nn::ValueId x1 = g.input("x1", {8});
  const nn::ValueId x3 = g.input("x3", {2, 3, 8});
  const nn::ValueId x2 = g.input("x2", {6, 8});

  SUBCASE("layer_norm") {
    const std::string rank = invalid_argument_of([&] { nn::layer_norm(g, "blocks.0.norm1", x1); });
    check_contains(rank, "layer_norm 'blocks.0.norm1'");
    check_contains(rank, "rank 2 to 5");
    check_contains(rank, "[8]");
    check_contains(invalid_argument_of([&] { nn::layer_norm(g, "ln0", x3, 0.0f); }), "layer_norm 'ln0'");
    CHECK(g.nodes().empty());
    CHECK(g.values_with_role(nn::ValueRole::parameter).empty());
    nn::layer_norm(g, "ln", x3);
    const nn::Op& op = last_op(g);
    const std::string weight = invalid_argument_of([&] {
      (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 8}, {7}, {8}});
    });
    check_contains(weight, "layer_norm 'ln'");
    check_contains(weight, "weight");
    check_contains(weight, "[7]");
    check_contains(invalid_argument_of([&] {
                     (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 8}, {8}, {1}});
                   }),
                   "bias");
    check_contains(invalid_argument_of([&] {
                     (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 8}});
                   }),
                   "takes 3 inputs");
  }
  SUBCASE("gelu and softmax") {
    check_contains(invalid_argument_of([&] { nn::softmax(g, "blocks.0.attn.softmax", x1); }),
                   "softmax 'blocks.0.attn.softmax' needs an input of rank 2 to 5, got [8]");
    nn::gelu(g, "act", x3);
    check_contains(invalid_argument_of([&] {
                     (void)last_op(g).output_dims(std::vector<nn::Dims>{{1, 1, 1, 1, 1, 1}});
                   }),
                   "gelu 'act' needs an input of rank 1 to 5, got [1, 1, 1, 1, 1, 1]");
    check_contains(invalid_argument_of([&] {
                     (void)last_op(g).output_dims(std::vector<nn::Dims>{{2}, {2}});
                   }),
                   "takes 1 input");
  }
  SUBCASE("token_linear") {
    const std::string rank = invalid_argument_of([&] { nn::token_linear(g, "head", x2, 4); });
    check_contains(rank, "token_linear 'head' needs tokens of shape [N, T, in], got [6, 8]");
    check_contains(invalid_argument_of([&] { nn::token_linear(g, "fc0", x3, 0); }), "token_linear 'fc0'");
    CHECK(g.values_with_role(nn::ValueRole::parameter).empty());
    nn::token_linear(g, "fc", x3, 4);
    const nn::Op& op = last_op(g);
    const std::string weight = invalid_argument_of([&] {
      (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 8}, {4, 7}, {4}});
    });
    check_contains(weight, "token_linear 'fc'");
    check_contains(weight, "[4, 8]");
    check_contains(invalid_argument_of([&] {
                     (void)op.output_dims(std::vector<nn::Dims>{{2, 3, 8}, {4, 8}, {3}});
                   }),
                   "bias");
  }
  SUBCASE("matmul") {
    const nn::ValueId a = g.input("a", {2, 2, 3, 4});
    const std::string k = invalid_argument_of([&] { nn::matmul(g, "scores", a, g.input("b", {2, 2, 5, 4})); });
    check_contains(k, "matmul 'scores'");
    check_contains(k, "K = 4");
    check_contains(k, "K = 5");
    const std::string kt = invalid_argument_of([&] {
      nn::matmul(g, "scores_t", a, g.input("bt", {2, 2, 4, 5}), true);
    });
    check_contains(kt, "matmul 'scores_t'");
    check_contains(kt, "transpose_b");
    check_contains(kt, "K = 5");
    const std::string rank = invalid_argument_of([&] { nn::matmul(g, "r", a, g.input("b3", {2, 4, 5})); });
    check_contains(rank, "matmul 'r'");
    check_contains(rank, "[2, 4, 5]");
    check_contains(invalid_argument_of([&] { nn::matmul(g, "r1", x1, x1); }), "rank from 2 to 5");
    const std::string batch = invalid_argument_of([&] { nn::matmul(g, "bd", a, g.input("b2", {2, 3, 4, 5})); });
    check_contains(batch, "matmul 'bd' needs a and b of equal batch dims");
    check_contains(invalid_argument_of([&] { nn::matmul(g, "s", a, a, true, std::nanf("")); }), "matmul 's'");
    CHECK(g.nodes().empty());
    nn::matmul(g, "ok", a, a, true);
    CHECK(g.value(g.nodes().back().outputs[0]).dims == nn::Dims{2, 2, 3, 3});
  }
}

// ---- backward with what the trainer keeps, and shape-only passes ---------

TEST_CASE("nn transformer layers: layer_norm backward runs with its bias retired") {
  const nn::Dims xd{2, 3, 8};
  nn::Graph g;
  nn::layer_norm(g, "ln", g.input("x", xd));
  nn::Op& op = last_op(g);
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(xd), test::random_values(48, 30)),
                              tensor(ctx, nn::plain_desc({8}), test::random_values(8, 31)),
                              tensor(ctx, nn::plain_desc({8}), test::random_values(8, 32))};
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(xd), test::random_values(48, 33))};
  const bool need[] = {true, true, true};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  std::vector<nn::Tensor> kept(3);
  op.backward(ctx, ins, outs, grad_outs, saved, need, kept);
  // The trainer drops what backward does not read: the bias and the output.
  ins[2].reset();
  outs[0].reset();
  std::vector<nn::Tensor> retired(3);
  op.backward(ctx, ins, outs, grad_outs, saved, need, retired);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(static_cast<bool>(retired[i]));
    CHECK(retired[i].desc() == kept[i].desc());
    CHECK(ctx.read(retired[i]) == ctx.read(kept[i]));
  }
}

TEST_CASE("nn transformer layers: every op runs forward and backward shape-only, as the trainer's first walk") {
  nn::Context ctx(nullptr);
  const auto pass = [&](nn::Graph& g, const std::vector<nn::Dims>& dims) {
    nn::Op& op = last_op(g);
    std::vector<nn::Tensor> ins;
    for (const nn::Dims& d : dims) ins.push_back(ctx.make_plain(d));
    const nn::Dims y = op.output_dims(dims).at(0);
    const std::vector<nn::Tensor> grad_outs{ctx.make_plain(y)};
    const bool need[] = {true, true, true};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    std::vector<nn::Tensor> grads(dims.size());
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].dims() == y);
    CHECK(outs[0].array() == nullptr);
    op.backward(ctx, ins, outs, grad_outs, saved, std::span<const bool>(need, dims.size()), grads);
    for (std::size_t i = 0; i < dims.size(); ++i) CHECK(grads[i].dims() == dims[i]);
  };
  const nn::Dims xd{2, 3, 8};
  {
    nn::Graph g;
    nn::layer_norm(g, "ln", g.input("x", xd));
    pass(g, {xd, {8}, {8}});
  }
  {
    nn::Graph g;
    nn::gelu(g, "act", g.input("x", xd));
    pass(g, {xd});
  }
  {
    nn::Graph g;
    nn::softmax(g, "sm", g.input("x", xd));
    pass(g, {xd});
  }
  {
    nn::Graph g;
    nn::token_linear(g, "fc", g.input("x", xd), 5);
    pass(g, {xd, {5, 8}, {5}});
  }
  {
    nn::Graph g;
    nn::matmul(g, "mm", g.input("a", xd), g.input("b", {2, 4, 8}), true, 0.125f);
    pass(g, {xd, {2, 4, 8}});
  }
}

TEST_CASE("nn transformer layers: gelu and softmax compute dx in dy's storage only when dy is theirs alone") {
  const nn::Dims xd{2, 3, 5};
  for (const bool is_gelu : {true, false}) {
    CAPTURE(is_gelu);
    nn::Graph g;
    if (is_gelu) {
      nn::gelu(g, "act", g.input("x", xd));
    } else {
      nn::softmax(g, "sm", g.input("x", xd));
    }
    nn::Op& op = last_op(g);
    auto rt = test::gradcheck_runtime();
    nn::Context ctx(&rt);
    const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(xd), test::random_values(30, 34))};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    const std::vector<float> dy = test::random_values(30, 35);
    const bool need[] = {true};

    std::vector<nn::Tensor> shared{tensor(ctx, nn::plain_desc(xd), dy)};
    const nn::Tensor other_handle = shared[0];  // dy is shared: the op may not overwrite it
    std::vector<nn::Tensor> from_shared(1);
    op.backward(ctx, ins, outs, shared, saved, need, from_shared);
    CHECK(from_shared[0].id() != other_handle.id());
    CHECK(ctx.read(other_handle) == dy);

    const std::vector<nn::Tensor> alone{tensor(ctx, nn::plain_desc(xd), dy)};
    std::vector<nn::Tensor> in_place(1);
    op.backward(ctx, ins, outs, alone, saved, need, in_place);
    CHECK(in_place[0].id() == alone[0].id());
    CHECK(ctx.read(in_place[0]) == ctx.read(from_shared[0]));
  }
}

TEST_CASE("nn transformer layers: a kernel may not view a tensor through a larger descriptor") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Tensor small = ctx.make_plain({2, 3});
  const nn::Tensor dst = ctx.make_plain({2, 4});
  const dnnl::memory::desc larger = nn::plain_desc({2, 4});
  const auto* prim = ctx.cached<dnnl::eltwise_forward::primitive_desc, dnnl::eltwise_forward>(
                            "test.relu",
                            [&] {
                              const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training,
                                                                  dnnl::algorithm::eltwise_relu, larger);
                              return dnnl::eltwise_forward::primitive_desc(d, ctx.attr(), ctx.engine());
                            })
                         .second;
  const std::string message = test::invalid_argument_of([&] {
    ctx.execute("relu", *prim, dnnl::memory::desc(), {nn::in(DNNL_ARG_SRC, small, larger), nn::out(DNNL_ARG_DST, dst)});
  });
  test::check_contains(message, "kernel 'relu' views a tensor of 24 bytes through a descriptor of 32 bytes");
}
