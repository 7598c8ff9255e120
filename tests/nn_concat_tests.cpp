// nn op concat: forward against a naive reference (plain and blocked
// inputs, mixed), gradient split, finite-difference gradients, primitive
// reuse. Shape validation is in nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using dnnl::memory;
using test::blocked, test::count, test::tensor;

// Naive concatenation along axis 1 of plain row-major tensors.
std::vector<float> reference_concat(const std::vector<std::vector<float>>& xs, const std::vector<nn::Dims>& dims) {
  std::vector<float> y;
  for (std::int64_t n = 0; n < dims[0][0]; ++n) {
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto slice = static_cast<std::int64_t>(count(dims[i])) / dims[i][0];
      y.insert(y.end(), xs[i].begin() + n * slice, xs[i].begin() + (n + 1) * slice);
    }
  }
  return y;
}

}  // namespace

TEST_CASE("nn concat: forward matches a naive reference for plain blocked and mixed inputs") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::vector<nn::Dims> dims{{2, 3, 4, 5}, {2, 16, 4, 5}, {2, 5, 4, 5}};
  nn::Graph g;
  std::vector<nn::ValueId> xs;
  for (std::size_t i = 0; i < dims.size(); ++i) xs.push_back(g.input("x" + std::to_string(i), dims[i]));
  const nn::ValueId y = nn::concat(g, "cat", xs);
  CHECK(g.value(y).dims == nn::Dims{2, 24, 4, 5});
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.kind() == "concat");
  std::vector<std::vector<float>> values;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    values.push_back(test::random_values(count(dims[i]), 31 + i));
  }
  const std::vector<float> want = reference_concat(values, dims);
  for (int layout = 0; layout < 3; ++layout) {  // all plain, all blocked, mixed
    CAPTURE(layout);
    std::vector<nn::Tensor> ins;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const bool block = layout == 1 || (layout == 2 && i == 1);
      ins.push_back(tensor(ctx, block ? blocked(dims[i]) : nn::plain_desc(dims[i]), values[i]));
    }
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].dims() == nn::Dims{2, 24, 4, 5});
    CHECK(ctx.read(outs[0]) == want);
  }
}

TEST_CASE("nn concat: backward splits the gradient in any layout into plain slices") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::vector<nn::Dims> dims{{2, 16, 3, 3}, {2, 4, 3, 3}, {2, 12, 3, 3}};
  nn::Graph g;
  std::vector<nn::ValueId> xs;
  for (std::size_t i = 0; i < dims.size(); ++i) xs.push_back(g.input("x" + std::to_string(i), dims[i]));
  nn::concat(g, "cat", xs);
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.backward_reads_inputs(3) == std::vector<bool>{false, false, false});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
  std::vector<nn::Tensor> ins;
  for (const nn::Dims& d : dims) {
    ins.push_back(tensor(ctx, blocked(d), std::vector<float>(count(d), 1.0f)));
  }
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  ins.assign(3, nn::Tensor());  // backward reads none of them
  outs[0].reset();
  const nn::Dims out_dims{2, 32, 3, 3};
  const std::vector<float> r = test::random_values(576, 35);
  // The slices of r that belong to each input.
  std::vector<std::vector<float>> want(3);
  for (std::size_t n = 0, at = 0; n < 2; ++n) {
    for (std::size_t i = 0; i < 3; ++i) {
      const auto slice = static_cast<std::size_t>(dims[i][1] * 9);
      want[i].insert(want[i].end(), r.begin() + static_cast<std::ptrdiff_t>(at),
                     r.begin() + static_cast<std::ptrdiff_t>(at + slice));
      at += slice;
    }
  }
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, blocked(out_dims), r)};
  std::vector<nn::Tensor> grads(3);
  const bool need[] = {true, false, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
  CHECK(ctx.read(grads[0]) == want[0]);
  CHECK_FALSE(grads[1]);
  CHECK(ctx.read(grads[2]) == want[2]);
}

TEST_CASE("nn concat: gradient check on images NCHW") {
  const std::vector<nn::Dims> dims{{2, 2, 3, 3}, {2, 3, 3, 3}};
  nn::Graph g;
  nn::concat(g, "cat", {g.input("a", dims[0]), g.input("b", dims[1])});
  test::gradcheck(*g.nodes().back().op, dims, {test::random_values(36, 36), test::random_values(54, 37)});
}

TEST_CASE("nn concat: gradient check on features NC") {
  const std::vector<nn::Dims> flat{{3, 4}, {3, 2}, {3, 5}};
  nn::Graph g;
  nn::concat(g, "cat", {g.input("a", flat[0]), g.input("b", flat[1]), g.input("c", flat[2])});
  test::gradcheck(*g.nodes().back().op, flat,
                  {test::random_values(12, 38), test::random_values(6, 39), test::random_values(15, 40)});
}

TEST_CASE("nn concat: forward twice creates no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::vector<nn::Dims> dims{{2, 16, 3, 3}, {2, 8, 3, 3}};
  nn::Graph g;
  nn::concat(g, "cat", {g.input("a", dims[0]), g.input("b", dims[1])});
  nn::Op& op = *g.nodes().back().op;
  const std::vector<nn::Tensor> ins{tensor(ctx, blocked(dims[0]), test::random_values(288, 41)),
                                    tensor(ctx, nn::plain_desc(dims[1]), test::random_values(144, 42))};
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({2, 24, 3, 3}), test::random_values(432, 43))};
  const bool need[] = {true, true};
  const auto pass = [&] { test::forward_backward(ctx, op, ins, grad_outs, need); };
  pass();
  const std::uint64_t created = ctx.primitives_created();
  pass();
  CHECK(ctx.primitives_created() == created);
}
