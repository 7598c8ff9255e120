// Fully connected layer: y = x W^T [+ bias] for x of shape [N, C] or
// [N, C, H, W]. A 4-d source is not flattened: the weight has shape
// [out, C, H, W], which oneDNN's inner product takes as it is, so a blocked
// activation needs no reorder to plain. Plain [out, C, H, W] has the same
// element order as PyTorch's flattened [out, C*H*W] weight, and the same
// parameter count.
//
// The source is taken in the layout it comes in (oneDNN's GEMM inner
// product reads plain, channels-last and blocked sources alike), so the
// activation is never copied; the weights use format_tag::any and oneDNN
// picks the layout that matches the source. The trainer keeps the weights
// in the layout most of the three primitives chose (parameter_desc): for a
// blocked 4-d source all three share the source's blocking (aBcd8b), so a
// classifier's largest weight (VGG-16's first, 411 MB) is never reordered;
// for a 2-d source forward wants the weights transposed ("ba") and the
// other two one of them, so one reorder an iteration remains. The weight
// gradient goes back in the kept layout, the bias gradient plain. The
// destination is plain [N, out] so that the loss reads it directly; the
// source gradient comes back in the source's layout.
//
// Backward reads the source (for the weight gradient) and the weights (for
// the source gradient), never the bias or the output.
//
// The token-wise layer of a transformer (token_linear) is the same op on a
// source [N, T, in], applied to every token as torch.nn.Linear on a 3-d
// input: weight [out, in], output [N, T, out]. Its inner products are made
// for the matrices [N T, in] and [N T, out], and read and write the plain
// token tensors through views of those shapes (KernelArg::view), so no
// token tensor is copied or reshaped.
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/op.hpp"
#include "cachedarrays/nn/transformer_layers.hpp"
#include "op_support.hpp"

namespace cachedarrays::nn {

namespace {

using detail::any_desc;
using dnnl::prop_kind;

// [out, C] for a source [N, C]; [out, C, H, W] for a source [N, C, H, W];
// [out, in] for a token-wise layer's source [N, T, in].
Dims weight_dims_for(const Dims& x, std::int64_t out_features, bool tokens = false) {
  if (tokens) return {out_features, x.back()};
  Dims w = x;
  w.at(0) = out_features;
  return w;
}

using LinearForwardPd = dnnl::inner_product_forward::primitive_desc;
using DataPd = dnnl::inner_product_backward_data::primitive_desc;
using WeightsPd = dnnl::inner_product_backward_weights::primitive_desc;

class Linear final : public Op {
 public:
  // `tokens`: the token-wise layer (see the file comment).
  Linear(std::string name, std::int64_t out_features, bool bias, bool tokens = false)
      : name_(std::move(name)), out_features_(out_features), bias_(bias), tokens_(tokens) {
    if (out_features_ < 1) {
      throw invalid_argument("cachedarrays::nn: " + where() + " has " + std::to_string(out_features_) +
                             " output features; it needs at least 1");
    }
  }

  [[nodiscard]] std::string kind() const override { return "linear"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, bias_ ? 3 : 2, bias_ ? "x, weight, bias" : "x, weight");
    const Dims& x = inputs[0];
    check_source(where(), x, tokens_);
    const Dims expected_w = weight_dims_for(x, out_features_, tokens_);
    if (inputs[1] != expected_w) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": the weight has shape " + to_string(inputs[1]) +
                             " but an input of shape " + to_string(x) + " needs " + to_string(expected_w));
    }
    if (bias_) detail::check_bias_dims(where(), inputs[2], out_features_);
    if (tokens_) return {{x[0], x[1], out_features_}};
    return {{x[0], out_features_}};
  }

  // Throws invalid_argument naming the layer (`where`) unless `x` is a
  // source linear (`tokens` false) or token_linear takes.
  static void check_source(const std::string& where, const Dims& x, bool tokens) {
    if (tokens && x.size() != 3) {
      throw invalid_argument("cachedarrays::nn: " + where + " needs tokens of shape [N, T, in], got " + to_string(x));
    }
    if (!tokens && x.size() != 2 && x.size() != 4) {
      throw invalid_argument("cachedarrays::nn: " + where + " needs an input of shape [N, C] or [N, C, H, W], got " +
                             to_string(x));
    }
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t inputs) const override {
    return detail::weighted_backward_reads_inputs(inputs);
  }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t outputs) const override {
    return std::vector<bool>(outputs, false);
  }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Shapes s = shapes(inputs[0].desc());
    auto [pd, prim] = forward_primitive(ctx, s);
    // The primitive was made for the source's layout, or for plain tokens.
    const Tensor src = source(ctx, inputs[0]);
    const Tensor weights = ctx.reorder(inputs[1], pd->weights_desc());
    if (tokens_) {
      const Dims x = src.dims();
      outputs[0] = ctx.make_plain({x[0], x[1], out_features_});
    } else {
      outputs[0] = ctx.make(pd->dst_desc());
    }
    detail::execute_forward(ctx, "linear", *prim, *pd, src, weights, bias_ ? &inputs[2] : nullptr, outputs[0], tokens_);
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor>,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    const Shapes s = shapes(inputs[0].desc());
    if (need_grad[0]) backward_data(ctx, s, inputs[1], grad_outputs[0], grad_inputs[0]);
    const bool bias_grad = bias_ && need_grad[2];
    if (need_grad[1] || bias_grad) {
      backward_weights(ctx, s, source(ctx, inputs[0]), grad_outputs[0], inputs[1].desc(), need_grad, grad_inputs);
    }
  }

  [[nodiscard]] dnnl::memory::desc parameter_desc(Context& ctx, std::span<const Tensor> inputs,
                                                  std::size_t input) const override {
    if (input != 1) return Op::parameter_desc(ctx, inputs, input);  // the bias
    const Shapes s = shapes(inputs[0].desc());
    return detail::most_used_weights_desc(*forward_primitive(ctx, s).first, *data_primitive(ctx, s).first,
                                          *weights_primitive(ctx, s).first);
  }

 private:
  // The descriptors every primitive of this op is built from, for one
  // source: its own layout, any layout for the weights, plain bias and output.
  // A token-wise layer's source and output are the plain matrices
  // [N T, in] and [N T, out], whatever the source's layout.
  struct Shapes {
    dnnl::memory::desc src, weights, bias, dst;
    std::string key;  // cache key suffix: the descriptors (they hold the attributes)
  };

  [[nodiscard]] Shapes shapes(const dnnl::memory::desc& src) const {
    const Dims x = src.dims();
    const dnnl::memory::desc bias = bias_ ? plain_desc({out_features_}) : dnnl::memory::desc();
    const dnnl::memory::desc weights = any_desc(weight_dims_for(x, out_features_, tokens_));
    Shapes s = tokens_ ? Shapes{plain_desc({x.at(0) * x.at(1), x.at(2)}),
                                weights,
                                bias,
                                plain_desc({x.at(0) * x.at(1), out_features_}),
                                {}}
                       : Shapes{src, weights, bias, plain_desc({x.at(0), out_features_}), {}};
    s.key = key_of(s.src) + key_of(s.weights) + key_of(s.bias) + key_of(s.dst);
    return s;
  }

  // The source as the primitives read it: as it comes, or plain tokens.
  [[nodiscard]] Tensor source(Context& ctx, const Tensor& x) const {
    return tokens_ ? ctx.reorder(x, plain_desc(x.dims())) : x;
  }

  std::pair<const LinearForwardPd*, const dnnl::inner_product_forward*> forward_primitive(Context& ctx,
                                                                                          const Shapes& s) const {
    return ctx.cached<LinearForwardPd, dnnl::inner_product_forward>("linear.fwd:" + s.key, [&] {
      const dnnl::inner_product_forward::desc d(prop_kind::forward_training, s.src, s.weights, s.bias, s.dst);
      return LinearForwardPd(d, ctx.attr(), ctx.engine());
    });
  }

  std::pair<const DataPd*, const dnnl::inner_product_backward_data*> data_primitive(Context& ctx,
                                                                                    const Shapes& s) const {
    return ctx.cached<DataPd, dnnl::inner_product_backward_data>("linear.bwd_data:" + s.key, [&] {
      const auto* fwd = forward_primitive(ctx, s).first;
      const dnnl::inner_product_backward_data::desc d(s.src, s.weights, s.dst);
      return DataPd(d, ctx.attr(), ctx.engine(), *fwd);
    });
  }

  std::pair<const WeightsPd*, const dnnl::inner_product_backward_weights*> weights_primitive(Context& ctx,
                                                                                             const Shapes& s) const {
    return ctx.cached<WeightsPd, dnnl::inner_product_backward_weights>("linear.bwd_weights:" + s.key, [&] {
      const auto* fwd = forward_primitive(ctx, s).first;
      const dnnl::inner_product_backward_weights::desc d(s.src, s.weights, s.bias, s.dst);
      return WeightsPd(d, ctx.attr(), ctx.engine(), *fwd);
    });
  }

  void backward_data(Context& ctx, const Shapes& s, const Tensor& weights, const Tensor& grad_output,
                     Tensor& grad_src) const {
    auto [pd, prim] = data_primitive(ctx, s);
    detail::execute_backward_data(ctx, "linear_backward_data", *prim, *pd, weights, grad_output, grad_src, tokens_);
  }

  void backward_weights(Context& ctx, const Shapes& s, const Tensor& src, const Tensor& grad_output,
                        const dnnl::memory::desc& kept_weights, std::span<const bool> need_grad,
                        std::span<Tensor> grad_inputs) const {
    auto [pd, prim] = weights_primitive(ctx, s);
    // The source is used as on the forward pass.
    detail::execute_backward_weights(ctx, "linear_backward_weights", *prim, *pd, src, grad_output, kept_weights, bias_,
                                     need_grad, grad_inputs, tokens_);
  }

  [[nodiscard]] std::string where() const { return (tokens_ ? "token_linear '" : "linear '") + name_ + "'"; }

  std::string name_;
  std::int64_t out_features_;
  bool bias_;
  bool tokens_;
};

}  // namespace

ValueId linear(Graph& g, const std::string& name, ValueId x, std::int64_t out_features, bool bias) {
  auto op = std::make_unique<Linear>(name, out_features, bias);  // validates out_features
  const Dims& x_dims = g.value(x).dims;
  if (x_dims.size() != 2 && x_dims.size() != 4) {
    throw invalid_argument("cachedarrays::nn: linear '" + name +
                           "' needs an input of shape [N, C] or [N, C, H, W], got " + to_string(x_dims));
  }
  // fan_in = C*H*W: the features each output sees, as for PyTorch's flatten + Linear.
  std::int64_t fan_in = 1;
  for (std::size_t i = 1; i < x_dims.size(); ++i) fan_in *= x_dims[i];
  const Dims weight_dims = weight_dims_for(x_dims, out_features);
  std::vector<ValueId> inputs = {x, g.parameter(name + ".weight", weight_dims, Init::uniform_fan_in, fan_in)};
  if (bias) inputs.push_back(g.parameter(name + ".bias", {out_features}, Init::uniform_fan_in, fan_in));
  return g.add1(name, std::move(op), std::move(inputs));
}

ValueId token_linear(Graph& g, const std::string& name, ValueId x, std::int64_t out_features) {
  auto op = std::make_unique<Linear>(name, out_features, true, true);  // validates out_features
  const Dims& x_dims = g.value(x).dims;
  Linear::check_source("token_linear '" + name + "'", x_dims, true);
  // fan_in = in, the features each output sees; the small-normal start
  // does not scale by it, but a later fan-in init would.
  const std::int64_t fan_in = x_dims.back();
  const ValueId weight =
      g.parameter(name + ".weight", weight_dims_for(x_dims, out_features, true), Init::small_normal, fan_in);
  const ValueId bias = g.parameter(name + ".bias", {out_features}, Init::zeros, fan_in);
  return g.add1(name, std::move(op), {x, weight, bias});
}

}  // namespace cachedarrays::nn
