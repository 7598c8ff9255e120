// GELU: y = x * Phi(x), the exact form with the error function that
// torch.nn.GELU() computes by default (oneDNN's eltwise_gelu_erf, not the
// tanh approximation), on whatever layout x has.
//
// Unlike ReLU's, GELU's derivative is no function of y alone (y is not
// monotonic in x below zero), so backward reads x, the input, and the output
// may not take x's storage. The source gradient may take dy's: oneDNN's
// eltwise backward runs in place, so no second gradient of the activation's
// size exists while it does.
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/op.hpp"
#include "cachedarrays/nn/transformer_layers.hpp"
#include "op_support.hpp"

namespace cachedarrays::nn {

namespace {

constexpr dnnl::algorithm gelu_algorithm = dnnl::algorithm::eltwise_gelu_erf;

using GeluForwardPd = dnnl::eltwise_forward::primitive_desc;
using GeluBackwardPd = dnnl::eltwise_backward::primitive_desc;

class Gelu final : public Op {
 public:
  explicit Gelu(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "gelu"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 1, "x");
    if (inputs[0].empty() || inputs[0].size() > 5) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs an input of rank 1 to 5, got " +
                             to_string(inputs[0]));
    }
    return {inputs[0]};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {true}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor& src = inputs[0];
    auto [pd, prim] = forward_primitive(ctx, src.desc());
    outputs[0] = ctx.make(pd->dst_desc());
    ctx.execute("gelu", *prim, pd->scratchpad_desc(), {in(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, outputs[0])});
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor>,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    const Tensor& src = inputs[0];
    if (!src) {
      throw invalid_operation("cachedarrays::nn: backward of " + where() + " needs its forward input");
    }
    const dnnl::memory::desc& desc = src.desc();
    auto [pd, prim] = ctx.cached<GeluBackwardPd, dnnl::eltwise_backward>("gelu.bwd:" + key_of(desc), [&] {
      const auto* fwd = forward_primitive(ctx, desc).first;
      const dnnl::eltwise_backward::desc d(gelu_algorithm, desc, desc);
      return GeluBackwardPd(d, ctx.attr(), ctx.engine(), *fwd);
    });
    grad_inputs[0] =
        detail::execute_backward_over_grad(ctx, "gelu_backward", *prim, *pd, DNNL_ARG_SRC, src, grad_outputs[0]);
  }

 private:
  static std::pair<const GeluForwardPd*, const dnnl::eltwise_forward*> forward_primitive(
      Context& ctx, const dnnl::memory::desc& src) {
    return ctx.cached<GeluForwardPd, dnnl::eltwise_forward>("gelu.fwd:" + key_of(src), [&] {
      const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training, gelu_algorithm, src);
      return GeluForwardPd(d, ctx.attr(), ctx.engine());
    });
  }

  [[nodiscard]] std::string where() const { return "gelu '" + name_ + "'"; }

  std::string name_;
};

}  // namespace

ValueId gelu(Graph& g, const std::string& name, ValueId x) { return g.add1(name, std::make_unique<Gelu>(name), {x}); }

}  // namespace cachedarrays::nn
