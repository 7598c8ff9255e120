// nn ops max_pool, avg_pool, global_avg_pool: forward against a naive
// reference (with padding and a floor-rounded edge, plain and blocked
// layouts), finite-difference gradients, global_avg_pool's shape check,
// primitive reuse. max_pool's and avg_pool's validation is in
// nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using dnnl::memory;
using test::blocked, test::invalid_argument_message, test::tensor;

// Distinct values 0.05 apart (more than 2 * eps of the gradient check), in a
// shuffled order, so that no window has a tie even after a perturbation.
std::vector<float> distinct_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.05f * (static_cast<float>(i) - static_cast<float>(n) / 2);
  test::Rng rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// Naive NCHW pooling, symmetric padding; average over the real elements.
std::vector<float> reference_pool(const std::vector<float>& x, const nn::Dims& d, bool max, std::int64_t k,
                                  std::int64_t s, std::int64_t p) {
  const std::int64_t oh = (d[2] + 2 * p - k) / s + 1;
  const std::int64_t ow = (d[3] + 2 * p - k) / s + 1;
  std::vector<float> y;
  for (std::int64_t nc = 0; nc < d[0] * d[1]; ++nc) {
    for (std::int64_t i = 0; i < oh; ++i) {
      for (std::int64_t j = 0; j < ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        double sum = 0;
        int count = 0;
        for (std::int64_t a = i * s - p; a < i * s - p + k; ++a) {
          for (std::int64_t b = j * s - p; b < j * s - p + k; ++b) {
            if (a < 0 || b < 0 || a >= d[2] || b >= d[3]) continue;
            const float v = x[static_cast<std::size_t>((nc * d[2] + a) * d[3] + b)];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        }
        y.push_back(max ? best : static_cast<float>(sum / count));
      }
    }
  }
  return y;
}

void check_approx_equal(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }
}

struct PoolCase {
  bool max;
  std::int64_t kernel, stride, padding;
};

}  // namespace

TEST_CASE("nn max_pool / avg_pool: forward matches a naive reference") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims dims{2, 3, 7, 6};
  const std::vector<float> x = test::random_values(252, 21);
  const PoolCase cases[] = {{true, 2, 2, 0},  {true, 3, 2, 1},  {true, 3, 1, 1}, {false, 2, 2, 0},
                            {false, 3, 2, 1}, {false, 3, 3, 0}, {true, 6, 1, 0}};
  for (const PoolCase& c : cases) {
    CAPTURE(c.max);
    CAPTURE(c.kernel);
    CAPTURE(c.stride);
    CAPTURE(c.padding);
    nn::Graph g;
    const nn::ValueId in = g.input("x", dims);
    if (c.max)
      nn::max_pool(g, "pool", in, c.kernel, c.stride, c.padding);
    else
      nn::avg_pool(g, "pool", in, c.kernel, c.stride, c.padding);
    nn::Op& op = *g.nodes().back().op;
    CHECK(op.kind() == (c.max ? "max_pool" : "avg_pool"));
    const std::vector<float> want = reference_pool(x, dims, c.max, c.kernel, c.stride, c.padding);
    const std::int64_t oh = (7 + 2 * c.padding - c.kernel) / c.stride + 1;
    const std::int64_t ow = (6 + 2 * c.padding - c.kernel) / c.stride + 1;
    CHECK(op.output_dims(std::vector<nn::Dims>{dims}) == std::vector<nn::Dims>{{2, 3, oh, ow}});
    for (const memory::desc& desc : {nn::plain_desc(dims), blocked(dims)}) {
      const std::vector<nn::Tensor> ins{tensor(ctx, desc, x)};
      std::vector<nn::Tensor> outs(1);
      std::vector<nn::Tensor> saved;
      op.forward(ctx, ins, outs, saved);
      CHECK(outs[0].dims() == nn::Dims{2, 3, oh, ow});
      CHECK(saved.size() == (c.max ? 1u : 0u));  // max pooling's workspace
      check_approx_equal(ctx.read(outs[0]), want);
    }
  }
}

// One runtime per gradient check, so one check per test case keeps each short.
TEST_CASE("nn max_pool: gradient check (kernel 2 stride 2 odd input)") {
  nn::Graph g;
  nn::max_pool(g, "pool", g.input("x", {2, 2, 5, 5}), 2, 2);
  test::gradcheck(*g.nodes().back().op, {{2, 2, 5, 5}}, {distinct_values(100, 22)});
}

TEST_CASE("nn max_pool: gradient check (kernel 3 stride 2 padding 1)") {
  nn::Graph g;
  nn::max_pool(g, "pool", g.input("x", {2, 2, 5, 5}), 3, 2, 1);
  test::gradcheck(*g.nodes().back().op, {{2, 2, 5, 5}}, {distinct_values(100, 22)});
}

TEST_CASE("nn avg_pool: gradient check (kernel 2 stride 2 odd input)") {
  nn::Graph g;
  nn::avg_pool(g, "pool", g.input("x", {2, 2, 5, 5}), 2, 2);
  test::gradcheck(*g.nodes().back().op, {{2, 2, 5, 5}}, {test::random_values(100, 23)});
}

TEST_CASE("nn avg_pool: gradient check (kernel 3 stride 2 padding 1 excluded)") {
  nn::Graph g;
  nn::avg_pool(g, "pool", g.input("x", {2, 2, 5, 5}), 3, 2, 1);
  test::gradcheck(*g.nodes().back().op, {{2, 2, 5, 5}}, {test::random_values(100, 23)});
}

TEST_CASE("nn max_pool / avg_pool: backward needs no activation and keeps the source layout") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims dims{2, 3, 4, 4};
  const std::vector<float> x = distinct_values(96, 24);
  const std::vector<float> r = test::random_values(24, 25);
  for (const bool max : {true, false}) {
    CAPTURE(max);
    nn::Graph g;
    const nn::ValueId in = g.input("x", dims);
    if (max)
      nn::max_pool(g, "pool", in, 2, 2);
    else
      nn::avg_pool(g, "pool", in, 2, 2);
    nn::Op& op = *g.nodes().back().op;
    CHECK(op.backward_reads_inputs(1) == std::vector<bool>{false});
    CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
    // The expected gradient: r to the window's maximum, or r / 4 to each.
    std::vector<float> want(96, 0.0f);
    for (std::size_t nc = 0; nc < 6; ++nc) {
      for (std::size_t i = 0; i < 2; ++i) {
        for (std::size_t j = 0; j < 2; ++j) {
          const float g_out = r[(nc * 2 + i) * 2 + j];
          std::size_t arg = (nc * 4 + 2 * i) * 4 + 2 * j;
          for (std::size_t a = 2 * i; a < 2 * i + 2; ++a) {
            for (std::size_t b = 2 * j; b < 2 * j + 2; ++b) {
              const std::size_t e = (nc * 4 + a) * 4 + b;
              if (!max) want[e] = g_out / 4;
              if (x[e] > x[arg]) arg = e;
            }
          }
          if (max) want[arg] = g_out;
        }
      }
    }
    for (const memory::desc& desc : {nn::plain_desc(dims), blocked(dims)}) {
      std::vector<nn::Tensor> ins{tensor(ctx, desc, x)};
      std::vector<nn::Tensor> outs(1);
      std::vector<nn::Tensor> saved;
      op.forward(ctx, ins, outs, saved);
      ins[0].reset();  // as the trainer retires what backward does not read
      outs[0].reset();
      const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({2, 3, 2, 2}), r)};
      std::vector<nn::Tensor> grads(1);
      const bool need[] = {true};
      op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
      CHECK(grads[0].desc() == desc);
      check_approx_equal(ctx.read(grads[0]), want);
    }
  }
}

TEST_CASE("nn global_avg_pool: forward matches the mean over H and W; shape validation") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::Dims dims{2, 3, 4, 5};
  const nn::ValueId y = nn::global_avg_pool(g, "gap", g.input("x", dims));
  CHECK(g.value(y).dims == nn::Dims{2, 3, 1, 1});
  nn::Op& op = *g.nodes().back().op;
  CHECK(op.kind() == "global_avg_pool");
  const std::vector<float> x = test::random_values(120, 26);
  std::vector<float> want(6);
  for (std::size_t nc = 0; nc < 6; ++nc) {
    want[nc] = std::accumulate(x.begin() + static_cast<std::ptrdiff_t>(nc * 20),
                               x.begin() + static_cast<std::ptrdiff_t>(nc * 20 + 20), 0.0f) /
               20;
  }
  for (const memory::desc& desc : {nn::plain_desc(dims), blocked(dims)}) {
    const std::vector<nn::Tensor> ins{tensor(ctx, desc, x)};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    check_approx_equal(ctx.read(outs[0]), want);
  }
  const std::string rank = invalid_argument_message([&] { nn::global_avg_pool(g, "gap2", g.input("v", {2, 3})); });
  CHECK(rank.find("global_avg_pool 'gap2'") != std::string::npos);
  CHECK(rank.find("[2, 3]") != std::string::npos);
}

TEST_CASE("nn global_avg_pool: gradient check") {
  nn::Graph g;
  nn::global_avg_pool(g, "gap", g.input("x", {2, 3, 4, 5}));
  test::gradcheck(*g.nodes().back().op, {{2, 3, 4, 5}}, {test::random_values(120, 26)});
}

TEST_CASE("nn max_pool / avg_pool: forward and backward twice create no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims dims{2, 16, 6, 6};
  for (const bool max : {true, false}) {
    nn::Graph g;
    const nn::ValueId in = g.input("x", dims);
    if (max)
      nn::max_pool(g, "pool", in, 3, 2, 1);
    else
      nn::avg_pool(g, "pool", in, 3, 2, 1);
    nn::Op& op = *g.nodes().back().op;
    const std::vector<nn::Tensor> ins{tensor(ctx, blocked(dims), test::random_values(1152, 27))};
    const std::vector<nn::Tensor> grad_outs{tensor(ctx, nn::plain_desc({2, 16, 3, 3}), test::random_values(288, 28))};
    const bool need[] = {true};
    const auto pass = [&] { test::forward_backward(ctx, op, ins, grad_outs, need); };
    pass();
    const std::uint64_t created = ctx.primitives_created();
    pass();
    CHECK(ctx.primitives_created() == created);
  }
}

TEST_CASE("nn max_pool / avg_pool: a dry run gives shapes and the workspace without storage") {
  nn::Context ctx(nullptr);
  nn::Graph g;
  const nn::Dims dims{4, 8, 9, 9};
  nn::max_pool(g, "pool", g.input("x", dims), 3, 2);
  nn::Op& op = *g.nodes().back().op;
  const std::vector<nn::Tensor> ins{ctx.make_plain(dims)};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  CHECK(outs[0].dims() == nn::Dims{4, 8, 4, 4});
  CHECK(outs[0].array() == nullptr);
  REQUIRE(saved.size() == 1);
  CHECK(saved[0].array() == nullptr);
  CHECK(saved[0].bytes() > 0);
}
