// Softmax over the last axis: y_i = exp(x_i - max x) / sum_j exp(x_j - max x),
// as torch.softmax(x, dim=-1) over a transformer's attention scores, on
// oneDNN's softmax primitive in whatever layout x has.
//
// Backward reads y only: dx = y * (dy - sum_j dy_j y_j). Because nothing
// reads x afterwards, the output may take x's storage (in_place_input), and
// dx may take dy's; oneDNN's softmax runs in place both ways. The attention
// scores are a ViT's largest activations, so neither a second copy of them
// nor of their gradient need exist while the kernel runs.
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

using SoftmaxForwardPd = dnnl::softmax_forward::primitive_desc;
using SoftmaxBackwardPd = dnnl::softmax_backward::primitive_desc;

// The last axis of a descriptor's dims.
int last_axis(const dnnl::memory::desc& desc) { return desc.data.ndims - 1; }

class Softmax final : public Op {
 public:
  explicit Softmax(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "softmax"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 1, "x");
    if (inputs[0].size() < 2 || inputs[0].size() > 5) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs an input of rank 2 to 5, got " +
                             to_string(inputs[0]));
    }
    return {inputs[0]};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {true}; }
  [[nodiscard]] int in_place_input() const override { return 0; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor& src = inputs[0];
    auto [pd, prim] = forward_primitive(ctx, src.desc());
    detail::execute_in_place_or_new(ctx, "softmax", *prim, *pd, src, outputs[0]);
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor> outputs,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    const Tensor& dst = outputs[0];
    if (!dst) {
      throw invalid_operation("cachedarrays::nn: backward of " + where() + " needs its forward output");
    }
    const dnnl::memory::desc& desc = dst.desc();  // the source's layout too
    auto [pd, prim] = ctx.cached<SoftmaxBackwardPd, dnnl::softmax_backward>("softmax.bwd:" + key_of(desc), [&] {
      const auto* fwd = forward_primitive(ctx, desc).first;
      const dnnl::softmax_backward::desc d(desc, desc, last_axis(desc));
      return SoftmaxBackwardPd(d, ctx.attr(), ctx.engine(), *fwd);
    });
    grad_inputs[0] =
        detail::execute_backward_over_grad(ctx, "softmax_backward", *prim, *pd, DNNL_ARG_DST, dst, grad_outputs[0]);
  }

 private:
  static std::pair<const SoftmaxForwardPd*, const dnnl::softmax_forward*> forward_primitive(
      Context& ctx, const dnnl::memory::desc& src) {
    return ctx.cached<SoftmaxForwardPd, dnnl::softmax_forward>("softmax.fwd:" + key_of(src), [&] {
      const dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_training, src, last_axis(src));
      return SoftmaxForwardPd(d, ctx.attr(), ctx.engine());
    });
  }

  [[nodiscard]] std::string where() const { return "softmax '" + name_ + "'"; }

  std::string name_;
};

}  // namespace

ValueId softmax(Graph& g, const std::string& name, ValueId x) {
  return g.add1(name, std::make_unique<Softmax>(name), {x});
}

}  // namespace cachedarrays::nn
