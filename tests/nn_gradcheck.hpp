// Finite-difference gradient check for one nn::Op: forward and backward
// must agree. L = sum_j <r_j, output_j> for fixed random r_j; the analytic
// dL/dx from Op::backward (with grad_outputs = r) is compared with
// (L(x + eps) - L(x - eps)) / (2 eps) on sampled elements of every input.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/op.hpp"
#include "nn_test_support.hpp"
#include "test_support.hpp"

namespace test {

struct GradCheckOptions {
  float eps = 1e-2f;
  float rtol = 5e-2f;
  float atol = 5e-3f;
  int samples_per_input = 24;     // elements perturbed per input
  std::vector<bool> skip_inputs;  // e.g. labels: no gradient
  std::uint64_t seed = 7;
};

// A runtime big enough for small ops, on two tiers so that data may move.
inline cachedarrays::Runtime gradcheck_runtime() {
  namespace ca = cachedarrays;
  return ca::Runtime({ca::dram(16 << 20, "fast"), ca::dax_file({}, 64 << 20, "slow")});
}

// `inputs` are the plain-layout values of each input, with `dims`.
inline void gradcheck(cachedarrays::nn::Op& op, const std::vector<cachedarrays::nn::Dims>& dims,
                      const std::vector<std::vector<float>>& inputs, const GradCheckOptions& o = {}) {
  namespace nn = cachedarrays::nn;
  auto rt = gradcheck_runtime();
  nn::Context ctx(&rt);
  Rng rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);

  const auto make_inputs = [&](const std::vector<std::vector<float>>& values) {
    std::vector<nn::Tensor> ts;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      ts.push_back(ctx.make_plain(dims[i]));
      ctx.write(ts.back(), values[i]);
    }
    return ts;
  };
  const std::vector<nn::Dims> out_dims = op.output_dims(dims);
  std::vector<std::vector<float>> r(out_dims.size());
  for (std::size_t j = 0; j < out_dims.size(); ++j) {
    r[j].resize(count(out_dims[j]));
    for (float& v : r[j]) v = normal(rng);
  }
  const auto loss = [&](const std::vector<std::vector<float>>& values) {
    std::vector<nn::Tensor> ins = make_inputs(values);
    std::vector<nn::Tensor> outs(out_dims.size());
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    double l = 0;
    for (std::size_t j = 0; j < outs.size(); ++j) {
      REQUIRE(outs[j].dims() == out_dims[j]);
      const std::vector<float> y = ctx.read(outs[j]);
      for (std::size_t k = 0; k < y.size(); ++k) l += static_cast<double>(y[k]) * r[j][k];
    }
    return l;
  };

  // Analytic gradients.
  std::vector<nn::Tensor> ins = make_inputs(inputs);
  std::vector<nn::Tensor> outs(out_dims.size());
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  std::vector<nn::Tensor> grad_outs;
  for (std::size_t j = 0; j < outs.size(); ++j) {
    grad_outs.push_back(ctx.make_plain(out_dims[j]));
    ctx.write(grad_outs.back(), r[j]);
  }
  std::unique_ptr<bool[]> need(new bool[dims.size()]);
  for (std::size_t i = 0; i < dims.size(); ++i) need[i] = i >= o.skip_inputs.size() || !o.skip_inputs[i];
  std::vector<nn::Tensor> grads(dims.size());
  op.backward(ctx, ins, outs, grad_outs, saved, std::span<const bool>(need.get(), dims.size()), grads);

  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (!need[i]) continue;
    CAPTURE(i);
    REQUIRE(static_cast<bool>(grads[i]));
    REQUIRE(grads[i].dims() == dims[i]);
    const std::vector<float> analytic = ctx.read(grads[i]);
    std::uniform_int_distribution<std::size_t> pick(0, inputs[i].size() - 1);
    for (int s = 0; s < o.samples_per_input; ++s) {
      const std::size_t e = s == 0 ? 0 : pick(rng);
      auto plus = inputs;
      auto minus = inputs;
      plus[i][e] += o.eps;
      minus[i][e] -= o.eps;
      const double numeric = (loss(plus) - loss(minus)) / (2.0 * o.eps);
      CAPTURE(e);
      CAPTURE(numeric);
      CAPTURE(analytic[e]);
      CHECK(std::abs(analytic[e] - numeric) <= o.atol + o.rtol * std::abs(numeric));
    }
  }
}

// n values from N(0, scale), deterministic for this standard library (the
// tests that use them compare with tolerances, not recorded values).
inline std::vector<float> random_values(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

}  // namespace test
