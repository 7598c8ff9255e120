// nn op linear: forward against a naive reference for [N, C] and
// [N, C, H, W] sources (plain and blocked), finite-difference gradients,
// plain parameter gradients, the builder's parameters (PyTorch's flatten +
// Linear count), primitive reuse. Shape validation is in
// nn_negative_tests.cpp.
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
using test::check_close, test::count, test::tensor;

nn::Dims weight_dims(const nn::Dims& x, std::int64_t out) {
  nn::Dims w = x;
  w[0] = out;
  return w;
}

nn::Op& build_linear(nn::Graph& g, const nn::Dims& x, std::int64_t out, bool bias) {
  nn::linear(g, "fc", g.input("x", x), out, bias);
  return *g.nodes().back().op;
}

// y[n][o] = sum_f x[n][f] w[o][f] (+ b[o]) over the flattened features.
std::vector<float> reference_linear(const nn::Dims& xd, std::int64_t out, const std::vector<float>& x,
                                    const std::vector<float>& w, const std::vector<float>& b) {
  const auto n = static_cast<std::size_t>(xd[0]);
  const std::size_t features = count(xd) / n;
  const auto outs = static_cast<std::size_t>(out);
  std::vector<float> y(n * outs);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t o = 0; o < outs; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (std::size_t f = 0; f < features; ++f) acc += static_cast<double>(x[i * features + f]) * w[o * features + f];
      y[i * outs + o] = static_cast<float>(acc);
    }
  return y;
}

}  // namespace

TEST_CASE("nn linear: forward matches a naive reference for 2-d and 4-d sources") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  struct Case {
    nn::Dims x;
    std::int64_t out;
    bool bias;
    memory::format_tag tag;
  };
  const Case cases[] = {
      {{3, 7}, 5, true, memory::format_tag::nc},
      {{4, 10}, 1, false, memory::format_tag::nc},
      {{2, 3, 4, 4}, 6, true, memory::format_tag::nchw},
      {{2, 16, 3, 2}, 10, true, memory::format_tag::nChw16c},  // a convolution's blocked activation
      {{2, 8, 3, 3}, 4, false, memory::format_tag::nhwc},
      {{5, 32, 1, 1}, 10, true, memory::format_tag::nChw8c},  // after global average pooling
  };
  for (const Case& c : cases) {
    CAPTURE(c.x.size());
    CAPTURE(c.out);
    CAPTURE(static_cast<int>(c.tag));
    nn::Graph g;
    nn::Op& op = build_linear(g, c.x, c.out, c.bias);
    CHECK(op.kind() == "linear");
    const nn::Dims wd = weight_dims(c.x, c.out);
    const auto x = test::random_values(count(c.x), 1);
    const auto w = test::random_values(count(wd), 2, 0.3f);
    const auto b = c.bias ? test::random_values(static_cast<std::size_t>(c.out), 3) : std::vector<float>{};
    std::vector<nn::Tensor> ins{tensor(ctx, memory::desc(c.x, memory::data_type::f32, c.tag), x),
                                tensor(ctx, nn::plain_desc(wd), w)};
    if (c.bias) ins.push_back(tensor(ctx, nn::plain_desc({c.out}), b));
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].desc() == nn::plain_desc({c.x[0], c.out}));  // plain, for the loss
    check_close(ctx.read(outs[0]), reference_linear(c.x, c.out, x, w, b));
  }
}

namespace {

void linear_gradcheck(const nn::Dims& x, bool bias) {
  CAPTURE(x.size());
  CAPTURE(bias);
  nn::Graph g;
  nn::Op& op = build_linear(g, x, 4, bias);
  std::vector<nn::Dims> dims{x, weight_dims(x, 4)};
  std::vector<std::vector<float>> values{test::random_values(count(x), 10),
                                         test::random_values(count(dims[1]), 11, 0.5f)};
  if (bias) {
    dims.push_back({4});
    values.push_back(test::random_values(4, 12));
  }
  test::gradcheck(op, dims, values);
}

}  // namespace

TEST_CASE("nn linear: gradient check, [N, C] source, with and without bias") {
  linear_gradcheck({3, 7}, true);
  linear_gradcheck({3, 7}, false);
}

TEST_CASE("nn linear: gradient check, [N, C, H, W] source, with and without bias") {
  linear_gradcheck({2, 3, 2, 2}, true);
  linear_gradcheck({2, 3, 2, 2}, false);
}

TEST_CASE("nn linear: backward on a blocked source gives plain parameter gradients") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims xd{2, 16, 2, 3};
  nn::Graph g;
  nn::Op& op = build_linear(g, xd, 5, true);
  CHECK(op.backward_reads_inputs(3) == std::vector<bool>{true, true, false});
  CHECK(op.backward_reads_inputs(2) == std::vector<bool>{true, true});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
  const memory::desc blocked(xd, memory::data_type::f32, memory::format_tag::nChw16c);
  const std::vector<float> x = test::random_values(count(xd), 20);
  const std::vector<float> w = test::random_values(5 * 96, 21);
  std::vector<nn::Tensor> ins{tensor(ctx, blocked, x), tensor(ctx, nn::plain_desc({5, 16, 2, 3}), w),
                              tensor(ctx, nn::plain_desc({5}), test::random_values(5, 22))};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  ins[2].reset();  // backward reads neither the bias nor the output
  outs[0].reset();
  const std::vector<float> r = test::random_values(10, 23);
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({2, 5}), r)};
  std::vector<nn::Tensor> grads(3);
  const bool need[] = {true, true, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
  CHECK(grads[0].dims() == xd);
  CHECK(grads[1].desc() == nn::plain_desc({5, 16, 2, 3}));
  CHECK(grads[2].desc() == nn::plain_desc({5}));
  // dx = r w, dw = r^T x, db = sum over the batch of r.
  std::vector<float> dx(192, 0.0f), dw(480, 0.0f), db(5, 0.0f);
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t o = 0; o < 5; ++o) {
      db[o] += r[n * 5 + o];
      for (std::size_t f = 0; f < 96; ++f) {
        dx[n * 96 + f] += r[n * 5 + o] * w[o * 96 + f];
        dw[o * 96 + f] += r[n * 5 + o] * x[n * 96 + f];
      }
    }
  check_close(ctx.read(grads[0]), dx);
  check_close(ctx.read(grads[1]), dw);
  check_close(ctx.read(grads[2]), db);

  std::vector<nn::Tensor> only_bias(3);
  const bool need_bias[] = {false, false, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need_bias, only_bias);
  CHECK_FALSE(only_bias[0]);
  CHECK_FALSE(only_bias[1]);
  check_close(ctx.read(only_bias[2]), db);
}

TEST_CASE("nn linear: builder adds parameters with PyTorch's count") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {4, 64, 3, 3});
  const nn::ValueId y = nn::linear(g, "fc1", x, 100);
  CHECK(g.value(y).dims == nn::Dims{4, 100});
  const auto params = g.values_with_role(nn::ValueRole::parameter);
  REQUIRE(params.size() == 2);
  const nn::ValueInfo& w = g.value(params[0]);
  CHECK(w.name == "fc1.weight");
  CHECK(w.dims == nn::Dims{100, 64, 3, 3});
  CHECK(w.init == nn::Init::uniform_fan_in);
  CHECK(w.fan_in == 576);
  const nn::ValueInfo& b = g.value(params[1]);
  CHECK(b.name == "fc1.bias");
  CHECK(b.dims == nn::Dims{100});
  CHECK(b.init == nn::Init::uniform_fan_in);
  CHECK(b.fan_in == 576);
  CHECK(g.parameter_count() == 576 * 100 + 100);  // nn.Linear(576, 100)

  const nn::ValueId z = nn::linear(g, "fc2", y, 10, false);
  CHECK(g.value(z).dims == nn::Dims{4, 10});
  CHECK(g.value(g.values_with_role(nn::ValueRole::parameter).back()).dims == nn::Dims{10, 100});
  CHECK(g.value(g.values_with_role(nn::ValueRole::parameter).back()).fan_in == 100);
  CHECK(g.nodes().back().inputs.size() == 2);
  CHECK(g.parameter_count() == 576 * 100 + 100 + 1000);
}

TEST_CASE("nn linear: forward and backward twice create no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims xd{4, 16, 2, 2};
  nn::Graph g;
  nn::Op& op = build_linear(g, xd, 10, true);
  const std::vector<nn::Tensor> ins{
      tensor(ctx, memory::desc(xd, memory::data_type::f32, memory::format_tag::nChw16c), test::random_values(256, 30)),
      tensor(ctx, nn::plain_desc({10, 16, 2, 2}), test::random_values(640, 31)),
      tensor(ctx, nn::plain_desc({10}), test::random_values(10, 32))};
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({4, 10}), test::random_values(40, 33))};
  const bool need[] = {true, true, true};
  const auto forward = [&] { return test::forward(ctx, op, ins); };
  const std::vector<float> first = ctx.read(forward());
  const std::uint64_t after_forward = ctx.primitives_created();
  CHECK(ctx.read(forward()) == first);
  CHECK(ctx.primitives_created() == after_forward);
  const auto pass = [&] { test::forward_backward(ctx, op, ins, grad_outs, need); };
  pass();
  const std::uint64_t after_backward = ctx.primitives_created();
  pass();
  CHECK(ctx.primitives_created() == after_backward);
}
