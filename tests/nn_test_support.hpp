// Helpers the nn test files share: the message of an expected
// invalid_argument, element counts, tensors written from values, the
// blocked layout oneDNN picks for convolutions, a relative comparison of
// results, one forward (and backward) pass of an op with fresh outputs,
// as the primitive-reuse tests run it twice, and model configurations.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/op.hpp"
#include "cachedarrays/nn/tensor.hpp"
#include "test_support.hpp"

namespace test {

// The message of the invalid_argument `f` throws ("" if none).
template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const cachedarrays::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// The number of elements of a tensor of these dims.
inline std::size_t count(const cachedarrays::nn::Dims& d) {
  std::int64_t n = 1;
  for (auto v : d) n *= v;
  return static_cast<std::size_t>(n);
}

// A tensor of layout `desc` holding `values` (given in plain order).
inline cachedarrays::nn::Tensor tensor(cachedarrays::nn::Context& ctx, const dnnl::memory::desc& desc,
                                       const std::vector<float>& values) {
  cachedarrays::nn::Tensor t = ctx.make(desc);
  ctx.write(t, values);
  return t;
}

// The channel-blocked layout oneDNN's convolutions choose on x86.
inline dnnl::memory::desc blocked(const cachedarrays::nn::Dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nChw16c);
}

// Element-wise |got - want| <= rtol * max(1, |want|), each element reported.
inline void check_close(const std::vector<float>& got, const std::vector<float>& want, float rtol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CAPTURE(got[i]);
    CAPTURE(want[i]);
    CHECK(std::abs(got[i] - want[i]) <= rtol * std::max(1.0f, std::abs(want[i])));
  }
}

// One forward pass of `op` into fresh outputs; returns output 0.
inline cachedarrays::nn::Tensor forward(cachedarrays::nn::Context& ctx, cachedarrays::nn::Op& op,
                                        std::span<const cachedarrays::nn::Tensor> ins) {
  std::vector<cachedarrays::nn::Tensor> outs(1);
  std::vector<cachedarrays::nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  return outs[0];
}

// One forward and one backward pass of a one-output `op`, every tensor they
// create dropped at the end.
inline void forward_backward(cachedarrays::nn::Context& ctx, cachedarrays::nn::Op& op,
                             std::span<const cachedarrays::nn::Tensor> ins,
                             std::span<const cachedarrays::nn::Tensor> grad_outs, std::span<const bool> need) {
  std::vector<cachedarrays::nn::Tensor> outs(1);
  std::vector<cachedarrays::nn::Tensor> saved;
  std::vector<cachedarrays::nn::Tensor> grads(ins.size());
  op.forward(ctx, ins, outs, saved);
  op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
}

// A model for ImageNet: 3x224x224 images, 1000 classes, batch 32.
inline cachedarrays::nn::ModelConfig imagenet_model(const std::string& family, int depth) {
  return {.family = family, .depth = depth, .batch = 32, .image_size = 224, .channels = 3, .classes = 1000};
}

// A model small enough to train in a test: an eighth of the width, 32x32
// images, or Inception's smallest, 75x75 (its unpadded stem and reductions
// shrink anything less to nothing).
inline cachedarrays::nn::ModelConfig tiny_model(const std::string& family, int depth) {
  const std::int64_t image_size = cachedarrays::nn::canonical_model({.family = family}).family == "inception" ? 75 : 32;
  return {.family = family,
          .depth = depth,
          .batch = 2,
          .image_size = image_size,
          .channels = 3,
          .classes = 10,
          .width = 0.125};
}

}  // namespace test
