// nn op batch_norm: forward (output, saved batch mean and variance) against
// a naive reference in plain and blocked layouts, finite-difference
// gradients, plain scale/shift gradients, the builder's parameters,
// primitive reuse. Shape validation is in nn_negative_tests.cpp.
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

nn::Op& build_batch_norm(nn::Graph& g, const nn::Dims& x) {
  nn::batch_norm(g, "bn", g.input("x", x));
  return *g.nodes().back().op;
}

struct Reference {
  std::vector<float> y, mean, variance;
};

// Per channel over N, H, W: biased variance, epsilon 1e-5.
Reference reference_batch_norm(const nn::Dims& d, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& b) {
  const auto n = static_cast<std::size_t>(d[0]), c = static_cast<std::size_t>(d[1]);
  const std::size_t hw = static_cast<std::size_t>(d[2] * d[3]);
  Reference r{std::vector<float>(x.size()), std::vector<float>(c), std::vector<float>(c)};
  for (std::size_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t p = 0; p < hw; ++p) sum += x[(i * c + ch) * hw + p];
    const double mean = sum / static_cast<double>(n * hw);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t p = 0; p < hw; ++p) sq += (x[(i * c + ch) * hw + p] - mean) * (x[(i * c + ch) * hw + p] - mean);
    const double var = sq / static_cast<double>(n * hw);
    r.mean[ch] = static_cast<float>(mean);
    r.variance[ch] = static_cast<float>(var);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t p = 0; p < hw; ++p) {
        const std::size_t at = (i * c + ch) * hw + p;
        r.y[at] = static_cast<float>(w[ch] * (x[at] - mean) / std::sqrt(var + 1e-5) + b[ch]);
      }
  }
  return r;
}

}  // namespace

TEST_CASE("nn batch_norm: forward matches a naive reference in plain and blocked layouts") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  for (const nn::Dims& d : {nn::Dims{4, 3, 3, 3}, nn::Dims{2, 16, 5, 4}, nn::Dims{3, 20, 2, 2}}) {
    CAPTURE(d[1]);
    nn::Graph g;
    nn::Op& op = build_batch_norm(g, d);
    CHECK(op.kind() == "batch_norm");
    const auto c = static_cast<std::size_t>(d[1]);
    std::vector<float> x = test::random_values(count(d), 1, 2.0f);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] += static_cast<float>((i / static_cast<std::size_t>(d[2] * d[3])) % c);
    const std::vector<float> w = test::random_values(c, 2);
    const std::vector<float> b = test::random_values(c, 3);
    const Reference want = reference_batch_norm(d, x, w, b);
    for (const auto tag : {memory::format_tag::nchw, memory::format_tag::nhwc, memory::format_tag::nChw16c}) {
      CAPTURE(static_cast<int>(tag));
      const memory::desc layout(d, memory::data_type::f32, tag);
      const std::vector<nn::Tensor> ins{tensor(ctx, layout, x), tensor(ctx, nn::plain_desc({d[1]}), w),
                                        tensor(ctx, nn::plain_desc({d[1]}), b)};
      std::vector<nn::Tensor> outs(1);
      std::vector<nn::Tensor> saved;
      op.forward(ctx, ins, outs, saved);
      CHECK(outs[0].desc() == layout);  // the layout passes through
      check_close(ctx.read(outs[0]), want.y);
      REQUIRE(saved.size() == 2);
      check_close(ctx.read(saved[0]), want.mean);
      check_close(ctx.read(saved[1]), want.variance);
    }
  }
}

TEST_CASE("nn batch_norm: gradient check") {
  const nn::Dims d{4, 3, 3, 3};
  nn::Graph g;
  nn::Op& op = build_batch_norm(g, d);
  std::vector<float> w = test::random_values(3, 21, 0.2f);
  for (float& v : w) v += 1.0f;  // scale near 1, as initialised
  test::GradCheckOptions o;
  o.eps = 5e-3f;
  test::gradcheck(op, {d, {3}, {3}}, {test::random_values(count(d), 20), w, test::random_values(3, 22)}, o);

  // Only the parameters' gradients.
  o.skip_inputs = {true, false, false};
  test::gradcheck(op, {d, {3}, {3}}, {test::random_values(count(d), 23), w, test::random_values(3, 24)}, o);
}

TEST_CASE("nn batch_norm: gradient check with blocked-friendly channels") {
  const nn::Dims d{2, 16, 2, 2};
  nn::Graph g;
  nn::Op& op = build_batch_norm(g, d);
  std::vector<float> w = test::random_values(16, 26, 0.2f);
  for (float& v : w) v += 1.0f;
  test::GradCheckOptions o;
  o.eps = 5e-3f;
  test::gradcheck(op, {d, {16}, {16}}, {test::random_values(count(d), 25), w, test::random_values(16, 27)}, o);
}

TEST_CASE("nn batch_norm: backward on a blocked gradient gives plain scale and shift gradients") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims d{2, 16, 3, 3};
  nn::Graph g;
  nn::Op& op = build_batch_norm(g, d);
  CHECK(op.backward_reads_inputs(3) == std::vector<bool>{true, true, false});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
  const memory::desc blocked(d, memory::data_type::f32, memory::format_tag::nChw16c);
  const std::vector<float> x = test::random_values(count(d), 30);
  std::vector<nn::Tensor> ins{tensor(ctx, blocked, x), tensor(ctx, nn::plain_desc({16}), test::random_values(16, 31)),
                              tensor(ctx, nn::plain_desc({16}), test::random_values(16, 32))};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  ins[2].reset();  // backward reads neither the shift nor the output
  outs[0].reset();
  const std::vector<float> r = test::random_values(count(d), 33);
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc(d), r)};  // plain: reordered to blocked
  std::vector<nn::Tensor> grads(3);
  const bool need[] = {true, true, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
  CHECK(grads[0].desc() == blocked);
  CHECK(grads[1].desc() == nn::plain_desc({16}));
  CHECK(grads[2].desc() == nn::plain_desc({16}));
  // dL/dshift[c] = sum of r over n, h, w; dL/dscale[c] = sum of r * x_hat.
  const Reference ref = reference_batch_norm(d, x, std::vector<float>(16, 1.0f), std::vector<float>(16, 0.0f));
  std::vector<float> shift(16, 0.0f), scale(16, 0.0f);
  for (std::size_t i = 0; i < r.size(); ++i) {
    shift[(i / 9) % 16] += r[i];
    scale[(i / 9) % 16] += r[i] * ref.y[i];
  }
  check_close(ctx.read(grads[2]), shift);
  check_close(ctx.read(grads[1]), scale, 1e-3f);

  std::vector<nn::Tensor> some(3);
  const bool need_params[] = {false, true, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need_params, some);
  CHECK_FALSE(some[0]);
  CHECK(some[1]);
  CHECK(some[2]);

  std::vector<nn::Tensor> no_saved;
  CHECK_THROWS_AS(op.backward(ctx, ins, outs, grad_outs, no_saved, need, grads), ca::invalid_operation);
}

TEST_CASE("nn batch_norm: builder adds weight (ones) and bias (zeros) parameters") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {8, 32, 4, 4});
  const nn::ValueId y = nn::batch_norm(g, "bn1", x);
  CHECK(g.value(y).dims == nn::Dims{8, 32, 4, 4});
  const auto params = g.values_with_role(nn::ValueRole::parameter);
  REQUIRE(params.size() == 2);
  CHECK(g.value(params[0]).name == "bn1.weight");
  CHECK(g.value(params[0]).dims == nn::Dims{32});
  CHECK(g.value(params[0]).init == nn::Init::ones);
  CHECK(g.value(params[1]).name == "bn1.bias");
  CHECK(g.value(params[1]).dims == nn::Dims{32});
  CHECK(g.value(params[1]).init == nn::Init::zeros);
  CHECK(g.parameter_count() == 64);
  CHECK(g.nodes().back().inputs == std::vector<nn::ValueId>{x, params[0], params[1]});
}

TEST_CASE("nn batch_norm: forward and backward twice create no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims d{2, 16, 3, 3};
  nn::Graph g;
  nn::Op& op = build_batch_norm(g, d);
  const memory::desc blocked(d, memory::data_type::f32, memory::format_tag::nChw16c);
  const std::vector<nn::Tensor> ins{tensor(ctx, blocked, test::random_values(count(d), 40)),
                                    tensor(ctx, nn::plain_desc({16}), test::random_values(16, 41)),
                                    tensor(ctx, nn::plain_desc({16}), test::random_values(16, 42))};
  const std::vector<nn::Tensor> grad_outs{tensor(ctx, blocked, test::random_values(count(d), 43))};
  const bool need[] = {true, true, true};
  std::vector<float> first;
  const auto forward = [&] { return test::forward(ctx, op, ins); };
  first = ctx.read(forward());
  const std::uint64_t after_forward = ctx.primitives_created();
  CHECK(ctx.read(forward()) == first);
  CHECK(ctx.primitives_created() == after_forward);
  const auto pass = [&] { test::forward_backward(ctx, op, ins, grad_outs, need); };
  pass();
  const std::uint64_t after_backward = ctx.primitives_created();
  pass();
  CHECK(ctx.primitives_created() == after_backward);
}
