// 2-d convolution over NCHW: y = conv(x, weight) [+ bias], a square or
// rectangular kernel (Inception's 1x7 and 7x1), padding the same on both
// sides of each axis, no dilation or groups.
//
// The primitives are created with format_tag::any for source, weights and
// destination, so oneDNN picks its blocked layouts (nChw16c, OIhw16i16o,
// ...). The source is reordered into the chosen layout when it arrives in
// another one (the first layer's plain image; a following convolution sees
// the blocked layout it wants). The trainer keeps the weights in the layout
// most of the three primitives chose (parameter_desc): the forward and the
// weight-gradient primitives share one blocked layout (ABcd8b8a on AVX2),
// so only backward data, which wants it transposed (ABcd8a8b), reorders the
// weights each iteration, and the weight gradient goes back as it is made
// (weights whose channels the blocks would pad stay plain); the bias and
// its gradient stay plain. The source gradient stays in whatever layout
// oneDNN picked.
//
// With Conv2dOptions::relu the forward primitive applies ReLU as a post-op
// ("conv_relu" kernels) and backward first turns dy into the pre-ReLU
// gradient from y, with ReLU's own backward kernel (op_support.hpp).
//
// Backward reads the source (for the weight gradient) and the weights (for
// the source gradient), never the bias or the output.
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

using detail::any_desc;
using dnnl::algorithm;
using dnnl::prop_kind;

using ConvForwardPd = dnnl::convolution_forward::primitive_desc;
using DataPd = dnnl::convolution_backward_data::primitive_desc;
using WeightsPd = dnnl::convolution_backward_weights::primitive_desc;

class Conv2d final : public Op {
 public:
  Conv2d(std::string name, const Conv2dOptions& options) : name_(std::move(name)), options_(options) {
    if (options_.out_channels < 1 || options_.kernel < 1 || options_.stride < 1 || options_.padding < 0 ||
        options_.kernel_width < 0 || options_.padding_width < -1) {
      // The options as given: kernel_text() and padding_text() would show
      // an out-of-range kernel_width or padding_width as the square default.
      std::string given = "out_channels " + std::to_string(options_.out_channels) + ", kernel " +
                          std::to_string(options_.kernel) + ", stride " + std::to_string(options_.stride) +
                          ", padding " + std::to_string(options_.padding);
      if (options_.kernel_width != 0) given += ", kernel_width " + std::to_string(options_.kernel_width);
      if (options_.padding_width != -1) given += ", padding_width " + std::to_string(options_.padding_width);
      throw invalid_argument("cachedarrays::nn: " + where() + " has " + given +
                             "; out_channels, kernel and stride must be at least 1, padding at least 0, "
                             "kernel_width at least 0 (0: square) and padding_width at least -1 (-1: padding)");
    }
  }

  [[nodiscard]] std::string kind() const override { return "conv"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, options_.bias ? 3 : 2, options_.bias ? "x, weight, bias" : "x, weight");
    const Dims& x = inputs[0];
    const Dims& w = inputs[1];
    detail::check_nchw(where(), x);
    const Dims kernel = {options_.kernel, options_.kernel_w()};
    const Dims pad = {options_.padding, options_.padding_w()};
    const Dims expected_w = {options_.out_channels, x[1], kernel[0], kernel[1]};
    if (w != expected_w) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": the weight has shape " + to_string(w) +
                             " but an input of shape " + to_string(x) + " needs " + to_string(expected_w) +
                             " [out_channels, in_channels, kernel height, kernel width]");
    }
    if (options_.bias) detail::check_bias_dims(where(), inputs[2], options_.out_channels);
    Dims y = {x[0], options_.out_channels, 0, 0};
    for (std::size_t i = 2; i < 4; ++i) {
      const std::int64_t padded = x[i] + 2 * pad[i - 2];
      if (padded < kernel[i - 2]) {
        throw invalid_argument("cachedarrays::nn: " + where() + ": the kernel " + to_string(kernel) +
                               " is larger than the input " + to_string(x) + " with padding " + padding_text());
      }
      y[i] = (padded - kernel[i - 2]) / options_.stride + 1;
    }
    return {y};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t inputs) const override {
    return detail::weighted_backward_reads_inputs(inputs);
  }
  // With a fused ReLU, backward reads y for ReLU's gradient, as the ReLU op would.
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t outputs) const override {
    return std::vector<bool>(outputs, options_.relu);
  }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Shapes s = shapes(inputs[0].dims());
    auto [pd, prim] = forward_primitive(ctx, s);
    const Tensor src = ctx.reorder(inputs[0], pd->src_desc());
    const Tensor weights = ctx.reorder(inputs[1], pd->weights_desc());
    outputs[0] = ctx.make(pd->dst_desc());
    detail::execute_forward(ctx, kernel_name(options_.relu ? "conv_relu" : "conv"), *prim, *pd, src, weights,
                            options_.bias ? &inputs[2] : nullptr, outputs[0]);
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    const Shapes s = shapes(inputs[0].dims());
    // A fused ReLU's gradient first (dy where y > 0), as its own kernel:
    // the convolution's backward primitives take the pre-ReLU gradient.
    Tensor relu_grad;
    if (options_.relu) {
      if (!outputs[0]) {
        throw invalid_operation("cachedarrays::nn: backward of " + where() + " (ReLU fused) needs its forward output");
      }
      relu_grad = detail::relu_backward(ctx, outputs[0], grad_outputs[0]);
    }
    const Tensor& grad_output = options_.relu ? relu_grad : grad_outputs[0];
    if (need_grad[0]) backward_data(ctx, s, inputs[1], grad_output, grad_inputs[0]);
    const bool bias_grad = options_.bias && need_grad[2];
    if (need_grad[1] || bias_grad) {
      backward_weights(ctx, s, inputs[0], grad_output, inputs[1].desc(), need_grad, grad_inputs);
    }
  }

  [[nodiscard]] dnnl::memory::desc parameter_desc(Context& ctx, std::span<const Tensor> inputs,
                                                  std::size_t input) const override {
    if (input != 1) return Op::parameter_desc(ctx, inputs, input);  // the bias
    const Shapes s = shapes(inputs[0].dims());
    return detail::most_used_weights_desc(*forward_primitive(ctx, s).first, *data_primitive(ctx, s).first,
                                          *weights_primitive(ctx, s).first);
  }

 private:
  // The descriptors every primitive of this op is built from: format_tag::any
  // with the dims of one call.
  struct Shapes {
    dnnl::memory::desc src, weights, bias, dst;
    std::string key;  // cache key suffix: the descriptors and the attributes
  };

  [[nodiscard]] Shapes shapes(const Dims& x) const {
    const Dims w = {options_.out_channels, x.at(1), options_.kernel, options_.kernel_w()};
    const Dims y = output_dims(input_dims(x, w)).at(0);
    Shapes s{any_desc(x),
             any_desc(w),
             options_.bias ? plain_desc({options_.out_channels}) : dnnl::memory::desc(),
             any_desc(y),
             {}};
    s.key = key_of(s.src) + key_of(s.weights) + key_of(s.bias) + key_of(s.dst) + ":k" + kernel_text() + "s" +
            std::to_string(options_.stride) + "p" + padding_text() + (options_.bias ? "b" : "") +
            (options_.relu ? "r" : "");
    return s;
  }

  [[nodiscard]] std::vector<Dims> input_dims(const Dims& x, const Dims& w) const {
    std::vector<Dims> dims = {x, w};
    if (options_.bias) dims.push_back({options_.out_channels});
    return dims;
  }

  [[nodiscard]] dnnl::memory::dims strides() const { return {options_.stride, options_.stride}; }
  [[nodiscard]] dnnl::memory::dims padding() const { return {options_.padding, options_.padding_w()}; }

  // "3", or "1x7" for a rectangular kernel (height x width).
  [[nodiscard]] std::string kernel_text() const {
    return options_.kernel_w() == options_.kernel
               ? std::to_string(options_.kernel)
               : std::to_string(options_.kernel) + "x" + std::to_string(options_.kernel_w());
  }
  // "1", or "0x3": top and bottom x left and right.
  [[nodiscard]] std::string padding_text() const {
    return options_.padding_w() == options_.padding
               ? std::to_string(options_.padding)
               : std::to_string(options_.padding) + "x" + std::to_string(options_.padding_w());
  }

  std::pair<const ConvForwardPd*, const dnnl::convolution_forward*> forward_primitive(Context& ctx,
                                                                                      const Shapes& s) const {
    return ctx.cached<ConvForwardPd, dnnl::convolution_forward>("conv.fwd:" + s.key, [&] {
      const dnnl::convolution_forward::desc d(prop_kind::forward_training, algorithm::convolution_direct, s.src,
                                              s.weights, s.bias, s.dst, strides(), padding(), padding());
      if (!options_.relu) return ConvForwardPd(d, ctx.attr(), ctx.engine());
      // y = max(conv(x), 0) as the primitive writes it: an eltwise post-op.
      dnnl::post_ops relu;
      relu.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      return ConvForwardPd(d, ctx.attr_with(relu), ctx.engine());
    });
  }

  std::pair<const DataPd*, const dnnl::convolution_backward_data*> data_primitive(Context& ctx, const Shapes& s) const {
    return ctx.cached<DataPd, dnnl::convolution_backward_data>("conv.bwd_data:" + s.key, [&] {
      const auto* fwd = forward_primitive(ctx, s).first;
      const dnnl::convolution_backward_data::desc d(algorithm::convolution_direct, s.src, s.weights, s.dst, strides(),
                                                    padding(), padding());
      return DataPd(d, ctx.attr(), ctx.engine(), *fwd);
    });
  }

  std::pair<const WeightsPd*, const dnnl::convolution_backward_weights*> weights_primitive(Context& ctx,
                                                                                           const Shapes& s) const {
    return ctx.cached<WeightsPd, dnnl::convolution_backward_weights>("conv.bwd_weights:" + s.key, [&] {
      const auto* fwd = forward_primitive(ctx, s).first;
      const dnnl::convolution_backward_weights::desc d(algorithm::convolution_direct, s.src, s.weights, s.bias, s.dst,
                                                       strides(), padding(), padding());
      return WeightsPd(d, ctx.attr(), ctx.engine(), *fwd);
    });
  }

  void backward_data(Context& ctx, const Shapes& s, const Tensor& weights, const Tensor& grad_output,
                     Tensor& grad_src) const {
    auto [pd, prim] = data_primitive(ctx, s);
    detail::execute_backward_data(ctx, kernel_name("conv_backward_data"), *prim, *pd, weights, grad_output, grad_src);
  }

  void backward_weights(Context& ctx, const Shapes& s, const Tensor& src_any, const Tensor& grad_output,
                        const dnnl::memory::desc& kept_weights, std::span<const bool> need_grad,
                        std::span<Tensor> grad_inputs) const {
    auto [pd, prim] = weights_primitive(ctx, s);
    const Tensor src = ctx.reorder(src_any, pd->src_desc());
    detail::execute_backward_weights(ctx, kernel_name("conv_backward_weights"), *prim, *pd, src, grad_output,
                                     kept_weights, options_.bias, need_grad, grad_inputs);
  }

  // The kernel's name (nn/dnnl_signature.hpp): its kind and what the
  // argument shapes do not show, the stride and padding ("conv s2p1",
  // "conv s1p0x3").
  [[nodiscard]] std::string kernel_name(const char* kind) const {
    return std::string(kind) + " s" + std::to_string(options_.stride) + "p" + padding_text();
  }

  [[nodiscard]] std::string where() const { return "conv '" + name_ + "'"; }

  std::string name_;
  Conv2dOptions options_;
};

}  // namespace

ValueId conv2d(Graph& g, const std::string& name, ValueId x, const Conv2dOptions& options) {
  auto op = std::make_unique<Conv2d>(name, options);  // validates the options
  const Dims& x_dims = g.value(x).dims;
  detail::check_nchw("conv '" + name + "'", x_dims);
  const std::int64_t in_channels = x_dims[1];
  const std::int64_t fan_in = in_channels * options.kernel * options.kernel_w();
  const Dims weight_dims = {options.out_channels, in_channels, options.kernel, options.kernel_w()};
  const Dims bias_dims = {options.out_channels};
  // Check the shapes before the graph gains parameters nobody would use.
  std::vector<Dims> dims = {x_dims, weight_dims};
  if (options.bias) dims.push_back(bias_dims);
  (void)op->output_dims(dims);
  std::vector<ValueId> inputs = {x, g.parameter(name + ".weight", weight_dims, Init::kaiming_normal, fan_in)};
  if (options.bias) inputs.push_back(g.parameter(name + ".bias", bias_dims, Init::uniform_fan_in, fan_in));
  return g.add1(name, std::move(op), std::move(inputs));
}

}  // namespace cachedarrays::nn
