// ReLU: y = max(x, 0), on whatever layout x has (a blocked activation stays
// blocked, so no reorder sits between a convolution and its ReLU).
//
// The backward pass reads y (the output), not x: oneDNN's
// eltwise_relu_use_dst_for_bwd computes dx = dy where y > 0, which is the
// same mask as x > 0, so the gradients do not change. Reading y is what lets
// the trainer free x after the forward pass (nGraph and PyTorch's
// inplace=True ReLU do the same; AutoTM's Table 1 footprints assume it): y
// is kept anyway when the next layer's backward reads it (a convolution's
// weight gradient), so x, usually a batch norm's output, need not be.
// Because nothing reads x afterwards the output may even take x's storage
// (in_place_input), so no second activation exists while the kernel runs.
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

using dnnl::algorithm;
using dnnl::prop_kind;

constexpr algorithm relu_algorithm = algorithm::eltwise_relu_use_dst_for_bwd;

class Relu final : public Op {
 public:
  explicit Relu(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "relu"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count("relu '" + name_ + "'", inputs, 1);
    if (inputs[0].empty() || inputs[0].size() > 5) {
      throw invalid_argument("cachedarrays::nn: relu '" + name_ + "' needs an input of rank 1 to 5, got rank " +
                             std::to_string(inputs[0].size()));
    }
    return {inputs[0]};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {true}; }
  [[nodiscard]] int in_place_input() const override { return 0; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs,
               std::vector<Tensor>&) override {
    const Tensor& src = inputs[0];
    auto [pd, prim] = forward_primitive(ctx, src.desc());
    if (detail::writes_in_place(outputs[0], src, pd->dst_desc())) {
      // oneDNN's eltwise runs in place; the source is listed as written
      // because its contents are overwritten.
      ctx.execute("relu", *prim, pd->scratchpad_desc(), {out(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, outputs[0])});
      return;
    }
    outputs[0] = ctx.make(pd->dst_desc());
    ctx.execute("relu", *prim, pd->scratchpad_desc(), {in(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, outputs[0])});
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor> outputs,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    const Tensor& dst = outputs[0];
    if (!dst) {
      throw invalid_operation("cachedarrays::nn: backward of relu '" + name_ + "' needs its forward output");
    }
    const dnnl::memory::desc& desc = dst.desc();  // the source's layout too
    const std::string key = "relu.bwd:" + key_of(desc);
    auto [pd, prim] = ctx.cached<dnnl::eltwise_backward::primitive_desc, dnnl::eltwise_backward>(key, [&] {
      const auto* fwd = forward_primitive(ctx, desc).first;
      const dnnl::eltwise_backward::desc d(relu_algorithm, desc, desc);
      return dnnl::eltwise_backward::primitive_desc(d, ctx.attr(), ctx.engine(), *fwd);
    });
    const Tensor diff_dst = ctx.reorder(grad_outputs[0], pd->diff_dst_desc());
    grad_inputs[0] = ctx.make(pd->diff_src_desc());
    ctx.execute("relu_backward", *prim, pd->scratchpad_desc(),
                {in(DNNL_ARG_DST, dst), in(DNNL_ARG_DIFF_DST, diff_dst), out(DNNL_ARG_DIFF_SRC, grad_inputs[0])});
  }

 private:
  static std::pair<const dnnl::eltwise_forward::primitive_desc*, const dnnl::eltwise_forward*> forward_primitive(
      Context& ctx, const dnnl::memory::desc& src) {
    return ctx.cached<dnnl::eltwise_forward::primitive_desc, dnnl::eltwise_forward>("relu.fwd:" + key_of(src), [&] {
      const dnnl::eltwise_forward::desc d(prop_kind::forward_training, relu_algorithm, src);
      return dnnl::eltwise_forward::primitive_desc(d, ctx.attr(), ctx.engine());
    });
  }

  std::string name_;
};

}  // namespace

ValueId relu(Graph& g, const std::string& name, ValueId x) { return g.add1(name, std::make_unique<Relu>(name), {x}); }

}  // namespace cachedarrays::nn
