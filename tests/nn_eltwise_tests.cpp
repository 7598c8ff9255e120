// nn ops relu and add: forward against a naive reference (plain and blocked
// layouts), finite-difference gradients, primitive reuse. Shape validation
// is in nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <algorithm>
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
using test::blocked, test::tensor;

// Values with |x| >= 0.1, so that x +- eps never crosses ReLU's kink.
std::vector<float> away_from_zero(std::size_t n, std::uint64_t seed) {
  std::vector<float> v = test::random_values(n, seed);
  for (float& x : v) x = std::copysign(0.1f + std::abs(x), x);
  return v;
}

}  // namespace

TEST_CASE("nn relu: forward matches max(x; 0) and keeps the input's layout") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3, 4, 5});
  nn::relu(g, "r", x);
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.kind() == "relu");
  const nn::Dims dims{2, 3, 4, 5};
  const std::vector<float> values = test::random_values(120, 1);
  std::vector<float> expected(values.size());
  std::transform(values.begin(), values.end(), expected.begin(), [](float v) { return std::max(v, 0.0f); });

  for (const memory::desc& desc : {nn::plain_desc(dims), blocked(dims)}) {
    const std::vector<nn::Tensor> ins{tensor(ctx, desc, values)};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].desc() == desc);
    CHECK(ctx.read(outs[0]) == expected);
    CHECK(saved.empty());
  }
}

TEST_CASE("nn relu: gradient check") {
  nn::Graph g;
  nn::relu(g, "r", g.input("x", {2, 3, 3, 3}));
  test::gradcheck(*g.nodes().back().op, {{2, 3, 3, 3}}, {away_from_zero(54, 2)});
}

TEST_CASE("nn relu: backward on a blocked layout matches the plain one") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 3, 4, 4};
  nn::relu(g, "r", g.input("x", dims));
  nn::Op& op = *g.nodes().back().op;
  const std::vector<float> values = away_from_zero(96, 3);
  const std::vector<float> r = test::random_values(96, 4);
  std::vector<float> expected(96);
  for (std::size_t i = 0; i < 96; ++i) expected[i] = values[i] > 0 ? r[i] : 0.0f;
  const bool need[] = {true};
  for (const memory::desc& desc : {nn::plain_desc(dims), blocked(dims)}) {
    const std::vector<nn::Tensor> ins{tensor(ctx, desc, values)};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(dims), r)};  // reordered inside
    std::vector<nn::Tensor> grads(1);
    op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
    CHECK(grads[0].desc() == desc);
    CHECK(ctx.read(grads[0]) == expected);
  }
}

TEST_CASE("nn relu: backward reads the output, so it may run in place with the same values and gradient") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 3, 4, 4};
  nn::relu(g, "r", g.input("x", dims));
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.backward_reads_inputs(1) == std::vector<bool>{false});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{true});
  CHECK(op.in_place_input() == 0);
  const std::vector<float> values = away_from_zero(96, 8);
  const std::vector<float> r = test::random_values(96, 9);
  std::vector<float> forward_expected(96);
  std::vector<float> backward_expected(96);
  for (std::size_t i = 0; i < 96; ++i) {
    forward_expected[i] = std::max(values[i], 0.0f);
    backward_expected[i] = values[i] > 0 ? r[i] : 0.0f;
  }
  const bool need[] = {true};
  const std::vector<nn::Tensor> no_inputs(1);  // backward must not need them
  for (const memory::desc& desc : {nn::plain_desc(dims), blocked(dims)}) {
    CAPTURE(nn::key_of(desc));
    const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(dims), r)};
    std::vector<nn::Tensor> saved;
    // Out of place (nothing offered): a new output.
    const std::vector<nn::Tensor> ins{tensor(ctx, desc, values)};
    std::vector<nn::Tensor> outs(1);
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].id() != ins[0].id());
    CHECK(ctx.read(ins[0]) == values);
    std::vector<nn::Tensor> grads(1);
    op.backward(ctx, no_inputs, outs, grad_outs, saved, need, grads);
    CHECK(ctx.read(grads[0]) == backward_expected);
    // In place (the input offered): the input's own tensor holds the result.
    const std::vector<nn::Tensor> ins_in_place{tensor(ctx, desc, values)};
    std::vector<nn::Tensor> outs_in_place{ins_in_place[0]};
    op.forward(ctx, ins_in_place, outs_in_place, saved);
    CHECK(outs_in_place[0].id() == ins_in_place[0].id());
    CHECK(ctx.read(outs_in_place[0]) == forward_expected);
    std::vector<nn::Tensor> grads_in_place(1);
    op.backward(ctx, no_inputs, outs_in_place, grad_outs, saved, need, grads_in_place);
    CHECK(ctx.read(grads_in_place[0]) == backward_expected);
  }
}

TEST_CASE("nn relu: an offered output that is not the input is declined") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 3, 2, 2};
  nn::relu(g, "r", g.input("x", dims));
  nn::Op& op = *g.nodes().back().op;
  const std::vector<float> values = away_from_zero(24, 10);
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(dims), values)};
  const nn::Tensor other = tensor(ctx, nn::plain_desc(dims), std::vector<float>(24, 7.0f));
  std::vector<nn::Tensor> outs{other};
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  CHECK(outs[0].id() != other.id());
  CHECK(outs[0].id() != ins[0].id());
  CHECK(ctx.read(other) == std::vector<float>(24, 7.0f));
  CHECK(ctx.read(ins[0]) == values);
}

TEST_CASE("nn relu: forward and backward twice create no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 4, 3, 3};
  nn::relu(g, "r", g.input("x", dims));
  nn::Op& op = *g.nodes().back().op;
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(dims), test::random_values(72, 5))};
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(dims), test::random_values(72, 6))};
  const bool need[] = {true};
  const auto pass = [&] { test::forward_backward(ctx, op, ins, grad_outs, need); };
  pass();
  const std::uint64_t created = ctx.primitives_created();
  CHECK(created >= 2);
  pass();
  CHECK(ctx.primitives_created() == created);
}

TEST_CASE("nn add: forward matches a + b in a's layout whatever b's is") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 3, 4, 5};
  nn::add(g, "sum", g.input("a", dims), g.input("b", dims));
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.kind() == "add");
  const std::vector<float> a = test::random_values(120, 7);
  const std::vector<float> b = test::random_values(120, 8);
  std::vector<float> expected(120);
  for (std::size_t i = 0; i < 120; ++i) expected[i] = a[i] + b[i];

  const memory::desc layouts[][2] = {{nn::plain_desc(dims), nn::plain_desc(dims)},
                                     {blocked(dims), nn::plain_desc(dims)},
                                     {nn::plain_desc(dims), blocked(dims)},
                                     {blocked(dims), blocked(dims)}};
  for (const auto& layout : layouts) {
    const std::vector<nn::Tensor> ins{tensor(ctx, layout[0], a), tensor(ctx, layout[1], b)};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].desc() == layout[0]);
    CHECK(ctx.read(outs[0]) == expected);
  }
}

TEST_CASE("nn add: gradient check") {
  nn::Graph g;
  const nn::Dims dims{2, 3, 2, 2};
  nn::add(g, "sum", g.input("a", dims), g.input("b", dims));
  test::gradcheck(*g.nodes().back().op, {dims, dims}, {test::random_values(24, 9), test::random_values(24, 10)});
}

TEST_CASE("nn add: backward hands out the output's gradient itself and reads nothing") {
  nn::Graph g;
  const nn::Dims dims{2, 3, 2, 2};
  nn::add(g, "sum", g.input("a", dims), g.input("b", dims));
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.backward_reads_inputs(2) == std::vector<bool>{false, false});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});

  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(dims), test::random_values(24, 11))};
  std::vector<nn::Tensor> saved;
  std::vector<nn::Tensor> grads(2);
  const bool need[] = {true, false};
  op.backward(ctx, std::vector<nn::Tensor>(2), std::vector<nn::Tensor>(1), grad_outs, saved, need, grads);
  CHECK(grads[0].id() == grad_outs[0].id());  // the same tensor, no copy
  CHECK_FALSE(grads[1]);
}

TEST_CASE("nn add: forward twice creates no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 16, 3, 3};
  nn::add(g, "sum", g.input("a", dims), g.input("b", dims));
  nn::Op& op = *g.nodes().back().op;
  const std::vector<nn::Tensor> ins{tensor(ctx, blocked(dims), test::random_values(288, 12)),
                                    tensor(ctx, nn::plain_desc(dims), test::random_values(288, 13))};
  const auto pass = [&] { test::forward(ctx, op, ins); };
  pass();
  const std::uint64_t created = ctx.primitives_created();
  pass();
  CHECK(ctx.primitives_created() == created);
}

TEST_CASE("nn add: in place over a in its layout, b untouched, the same sum as out of place") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 16, 3, 3};
  nn::add(g, "sum", g.input("a", dims), g.input("b", dims));
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.in_place_input() == 0);
  const std::vector<float> a = test::random_values(288, 14);
  const std::vector<float> b = test::random_values(288, 15);
  std::vector<float> expected(288);
  for (std::size_t i = 0; i < 288; ++i) expected[i] = a[i] + b[i];
  for (const memory::desc& b_desc : {nn::plain_desc(dims), blocked(dims)}) {
    const std::vector<nn::Tensor> ins{tensor(ctx, blocked(dims), a), tensor(ctx, b_desc, b)};
    std::vector<nn::Tensor> outs{ins[0]};
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].id() == ins[0].id());
    CHECK(outs[0].desc() == blocked(dims));
    CHECK(ctx.read(outs[0]) == expected);
    CHECK(ctx.read(ins[1]) == b);
  }
}

TEST_CASE("nn add: x + x reads one tensor through both inputs") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3});
  nn::add(g, "double", x, x);
  nn::Op& op = *g.nodes().back().op;
  const std::vector<float> values{1, -2, 3, -4, 5, -6};
  const nn::Tensor t = tensor(ctx, nn::plain_desc({2, 3}), values);
  const std::vector<nn::Tensor> ins{t, t};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  CHECK(ctx.read(outs[0]) == std::vector<float>{2, -4, 6, -8, 10, -12});
}
