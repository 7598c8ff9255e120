// The tokens of a patch embedding: the feature map x [N, D, h, w] of the
// patch convolution becomes [N, h w, D] (timm's x.flatten(2).transpose(1,
// 2)), after an optional class token [1, 1, D] shared by every sample
// (torch.cat((cls_token.expand(N, -1, -1), x), dim=1)).
//
// The output's patch tokens, seen as [N, D, h, w], are a strided view of the
// plain output (strides (T D, 1, w D, D) at offset D with a class token), so
// one oneDNN reorder takes x from whatever layout the convolution chose
// (often blocked, nChw16c) straight into place, with no plain copy of x in
// between; the class token rows are copied in the same kernel.
//
// Backward reads no forward tensor. dx comes back channels-last (nhwc),
// whose memory order [N, h, w, D] is that of the patch tokens, so it is one
// contiguous copy per sample; the convolution reorders it to its own layout.
// The class token's gradient is the sum over the batch of each sample's
// token-0 gradient.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/op.hpp"
#include "cachedarrays/nn/transformer_layers.hpp"
#include "op_support.hpp"
#include "view_reorder.hpp"

namespace cachedarrays::nn {

namespace {

using detail::run_view_reorder;
using detail::strided_desc;
using detail::view_reorder;

class PatchTokens final : public Op {
 public:
  PatchTokens(std::string name, bool class_token) : name_(std::move(name)), class_token_(class_token) {}

  [[nodiscard]] std::string kind() const override { return "patch_tokens"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, class_token_ ? 2 : 1, class_token_ ? "x, class_token" : "x");
    const Dims& x = inputs[0];
    if (x.size() != 4) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs a feature map [N, D, h, w] of rank 4, got " +
                             to_string(x));
    }
    if (class_token_ && inputs[1] != Dims{1, 1, x[1]}) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": the class token has shape " + to_string(inputs[1]) +
                             " but a feature map " + to_string(x) + " needs " + to_string({1, 1, x[1]}));
    }
    return {{x[0], first_patch() + x[2] * x[3], x[1]}};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t inputs) const override {
    return std::vector<bool>(inputs, false);
  }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor& x = inputs[0];
    x_dims_ = x.dims();  // backward's gradient [N, T, D] does not show h and w apart
    const std::int64_t n = x_dims_[0], d = x_dims_[1], h = x_dims_[2], w = x_dims_[3];
    const std::int64_t tokens = first_patch() + h * w;
    const dnnl::memory::desc patches = strided_desc(x_dims_, {tokens * d, 1, w * d, d});
    const dnnl::reorder& prim = view_reorder(ctx, x.desc(), patches);
    outputs[0] = ctx.make_plain({n, tokens, d});
    if (!class_token_) {
      const KernelArg args[] = {in(DNNL_ARG_SRC, x), out(DNNL_ARG_DST, outputs[0])};
      ctx.run("patch_tokens", args,
              [&](std::span<float* const> p) { run_view_reorder(ctx, prim, x.desc(), p[0], patches, p[1]); });
      return;
    }
    const Tensor cls = ctx.reorder(inputs[1], plain_desc({1, 1, d}));
    const KernelArg args[] = {in(DNNL_ARG_SRC, x), in(DNNL_ARG_WEIGHTS, cls), out(DNNL_ARG_DST, outputs[0])};
    ctx.run("patch_tokens", args, [&](std::span<float* const> p) {
      float* y = p[2];
      run_view_reorder(ctx, prim, x.desc(), p[0], patches, y + d);
      const auto row = static_cast<std::size_t>(d) * sizeof(float);
      for (std::int64_t i = 0; i < n; ++i) std::memcpy(y + i * tokens * d, p[1], row);
    });
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    const bool grad_x = need_grad[0];
    const bool grad_cls = class_token_ && need_grad[1];
    if (!grad_x && !grad_cls) return;
    if (x_dims_.size() != 4) {
      throw invalid_operation("cachedarrays::nn: " + where() + ": backward before forward");
    }
    const std::int64_t n = x_dims_[0], d = x_dims_[1];
    const std::int64_t patches = x_dims_[2] * x_dims_[3];
    const std::int64_t tokens = first_patch() + patches;
    const Tensor dy = ctx.reorder(grad_outputs[0], plain_desc({n, tokens, d}));
    std::vector<KernelArg> args{in(DNNL_ARG_DIFF_DST, dy)};
    if (grad_x) {
      grad_inputs[0] = ctx.make({x_dims_, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc});
      args.push_back(out(DNNL_ARG_DIFF_SRC, grad_inputs[0]));
    }
    if (grad_cls) {
      grad_inputs[1] = ctx.make_plain({1, 1, d});
      args.push_back(out(DNNL_ARG_DIFF_WEIGHTS, grad_inputs[1]));
    }
    ctx.run("patch_tokens_backward", args, [&](std::span<float* const> p) {
      const float* src = p[0];
      std::size_t next = 1;
      if (grad_x) {
        float* dx = p[next++];
        const auto sample = static_cast<std::size_t>(patches * d) * sizeof(float);
        for (std::int64_t i = 0; i < n; ++i) {
          std::memcpy(dx + i * patches * d, src + (i * tokens + first_patch()) * d, sample);
        }
      }
      if (grad_cls) {
        float* dcls = p[next];
        std::fill(dcls, dcls + d, 0.0f);
        for (std::int64_t i = 0; i < n; ++i) {
          const float* row = src + i * tokens * d;
          for (std::int64_t j = 0; j < d; ++j) dcls[j] += row[j];
        }
      }
    });
  }

 private:
  [[nodiscard]] std::string where() const { return "patch_tokens '" + name_ + "'"; }
  // The index of the first patch token: 1 after a class token, else 0.
  [[nodiscard]] std::int64_t first_patch() const { return class_token_ ? 1 : 0; }

  std::string name_;
  bool class_token_;
  Dims x_dims_;  // of the last forward pass
};

}  // namespace

ValueId patch_tokens(Graph& g, const std::string& name, ValueId x, ValueId class_token) {
  if (class_token == -1) return g.add1(name, std::make_unique<PatchTokens>(name, false), {x});
  const ValueId y = g.add1(name, std::make_unique<PatchTokens>(name, true), {x, class_token});
  // timm's no_weight_decay() lists cls_token: an embedding, not a weight.
  if (g.value(class_token).role == ValueRole::parameter) g.exclude_from_weight_decay(class_token);
  return y;
}

}  // namespace cachedarrays::nn
