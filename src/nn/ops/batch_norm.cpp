// Batch normalisation of an NCHW tensor over N, H and W:
// y = weight * (x - mean) / sqrt(variance + 1e-5) + bias, as PyTorch's
// BatchNorm2d. Training (Context::Phase::train and recompute) normalises
// with the batch's own mean and (biased) variance; evaluation with the
// running statistics training keeps, as BatchNorm2d in eval mode:
// running = (1 - 0.1) * running + 0.1 * batch, the variance unbiased
// (times m / (m - 1), m = N*H*W), starting from mean 0 and variance 1.
//
// The source keeps its layout (a blocked activation from a convolution stays
// blocked) and the destination gets the same one. The forward primitive
// outputs the batch mean and variance; they go into `saved`, because the
// backward primitive reads them together with the source and the scale.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/op.hpp"
#include "op_support.hpp"

namespace cachedarrays::nn {

namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

constexpr float epsilon = 1e-5f;
constexpr double running_momentum = 0.1;  // PyTorch's default
const normalization_flags flags = normalization_flags::use_scale | normalization_flags::use_shift;

using BatchNormForwardPd = dnnl::batch_normalization_forward::primitive_desc;
using BatchNormBackwardPd = dnnl::batch_normalization_backward::primitive_desc;

class BatchNorm final : public Op {
 public:
  BatchNorm(std::string name, std::int64_t channels)
      : name_(std::move(name)),
        running_mean_(static_cast<std::size_t>(channels), 0.0f),
        running_variance_(static_cast<std::size_t>(channels), 1.0f) {}

  [[nodiscard]] std::string kind() const override { return "batch_norm"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 3, "x, weight, bias");
    const Dims& x = inputs[0];
    detail::check_nchw(where(), x);
    const Dims channels = {x[1]};
    for (std::size_t i = 1; i < 3; ++i) {
      if (inputs[i] != channels) {
        throw invalid_argument("cachedarrays::nn: " + where() + ": the " + (i == 1 ? "weight" : "bias") +
                               " has shape " + to_string(inputs[i]) + " but an input of shape " + to_string(x) +
                               " needs " + to_string(channels));
      }
    }
    return {x};
  }

  // Backward needs the source and the scale (the weight), not the shift (see shift_argument).
  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {true, true, false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs,
               std::vector<Tensor>& saved) override {
    const Tensor& src = inputs[0];
    const std::size_t channels = running_mean_.size();
    if (ctx.phase() == Context::Phase::evaluate) {
      evaluate(ctx, inputs, outputs);
      return;
    }
    auto [pd, prim] = forward_primitive(ctx, src.desc());
    const Tensor scale = ctx.reorder(inputs[1], pd->weights_desc());
    const Tensor shift = ctx.reorder(inputs[2], pd->weights_desc());
    outputs[0] = ctx.make(pd->dst_desc());
    Tensor mean = ctx.make(pd->mean_desc());
    Tensor variance = ctx.make(pd->variance_desc());
    const KernelArg args[] = {in(DNNL_ARG_SRC, src),     in(DNNL_ARG_SCALE, scale),
                              in(DNNL_ARG_SHIFT, shift), out(DNNL_ARG_DST, outputs[0]),
                              out(DNNL_ARG_MEAN, mean),  out(DNNL_ARG_VARIANCE, variance)};
    // A recomputation gives the same batch statistics again: counting them
    // twice would move the running ones further than one step does.
    if (ctx.phase() == Context::Phase::train) {
      const Dims& d = src.dims();
      const double m = static_cast<double>(d[0] * d[2] * d[3]);
      const double unbiased = m > 1 ? m / (m - 1) : 1.0;
      ctx.execute("batch_norm", *prim, pd->scratchpad_desc(), args, [&](std::span<float* const> p) {
        for (std::size_t c = 0; c < channels; ++c) {
          running_mean_[c] = static_cast<float>((1 - running_momentum) * running_mean_[c] + running_momentum * p[4][c]);
          running_variance_[c] =
              static_cast<float>((1 - running_momentum) * running_variance_[c] + running_momentum * unbiased * p[5][c]);
        }
      });
    } else {
      ctx.execute("batch_norm", *prim, pd->scratchpad_desc(), args);
    }
    saved = {std::move(mean), std::move(variance)};
  }

  [[nodiscard]] std::vector<Buffer> buffers() override {
    return {{"running_mean", &running_mean_}, {"running_var", &running_variance_}};
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor>,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>& saved, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (saved.size() != 2) {
      throw invalid_operation("cachedarrays::nn: backward of " + where() +
                              " needs the mean and variance its forward pass saved; run forward first");
    }
    const Tensor& src = inputs[0];
    const dnnl::memory::desc& desc = src.desc();
    auto [pd, prim] =
        ctx.cached<BatchNormBackwardPd, dnnl::batch_normalization_backward>("batch_norm.bwd:" + key_of(desc), [&] {
          const auto* fwd = forward_primitive(ctx, desc).first;
          const dnnl::batch_normalization_backward::desc d(prop_kind::backward, desc, desc, epsilon, flags);
          return BatchNormBackwardPd(d, ctx.attr(), ctx.engine(), *fwd);
        });
    detail::execute_normalization_backward(ctx, "batch_norm_backward", *prim, *pd, src, inputs[1], inputs[2],
                                           grad_outputs[0], saved[0], saved[1], need_grad, grad_inputs);
  }

 private:
  std::pair<const BatchNormForwardPd*, const dnnl::batch_normalization_forward*> forward_primitive(
      Context& ctx, const dnnl::memory::desc& src) const {
    return ctx.cached<BatchNormForwardPd, dnnl::batch_normalization_forward>("batch_norm.fwd:" + key_of(src), [&] {
      const dnnl::batch_normalization_forward::desc d(prop_kind::forward_training, src, epsilon, flags);
      return BatchNormForwardPd(d, ctx.attr(), ctx.engine());
    });
  }

  // Inference with the running statistics: they go in as two small tensors
  // written from the host (evaluation is not the training iteration the
  // policies plan for, so its kernels need not match it).
  void evaluate(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
    const Tensor& src = inputs[0];
    auto [pd, prim] = ctx.cached<BatchNormForwardPd, dnnl::batch_normalization_forward>(
        "batch_norm.inference:" + key_of(src.desc()), [&] {
          const dnnl::batch_normalization_forward::desc d(prop_kind::forward_inference, src.desc(), epsilon,
                                                          flags | normalization_flags::use_global_stats);
          return BatchNormForwardPd(d, ctx.attr(), ctx.engine());
        });
    const Tensor scale = ctx.reorder(inputs[1], pd->weights_desc());
    const Tensor shift = ctx.reorder(inputs[2], pd->weights_desc());
    Tensor mean = ctx.make(pd->mean_desc());
    Tensor variance = ctx.make(pd->variance_desc());
    ctx.write(mean, running_mean_);
    ctx.write(variance, running_variance_);
    outputs[0] = ctx.make(pd->dst_desc());
    ctx.execute("batch_norm_inference", *prim, pd->scratchpad_desc(),
                {in(DNNL_ARG_SRC, src), in(DNNL_ARG_MEAN, mean), in(DNNL_ARG_VARIANCE, variance),
                 in(DNNL_ARG_SCALE, scale), in(DNNL_ARG_SHIFT, shift), out(DNNL_ARG_DST, outputs[0])});
  }

  [[nodiscard]] std::string where() const { return "batch_norm '" + name_ + "'"; }

  std::string name_;
  std::vector<float> running_mean_;      // by channel
  std::vector<float> running_variance_;  // unbiased
};

}  // namespace

ValueId batch_norm(Graph& g, const std::string& name, ValueId x) {
  const Dims& x_dims = g.value(x).dims;
  detail::check_nchw("batch_norm '" + name + "'", x_dims);
  auto op = std::make_unique<BatchNorm>(name, x_dims[1]);
  const Dims channels = {x_dims[1]};
  const ValueId weight = g.parameter(name + ".weight", channels, Init::ones);
  const ValueId bias = g.parameter(name + ".bias", channels, Init::zeros);
  return g.add1(name, std::move(op), {x, weight, bias});
}

}  // namespace cachedarrays::nn
