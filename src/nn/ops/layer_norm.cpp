// Layer normalisation over the last axis: y = weight * (x - mean) /
// sqrt(variance + epsilon) + bias, the mean and (biased) variance taken over
// the last axis of each row, as torch.nn.LayerNorm(D) on a transformer's
// tokens [N, T, D]. Unlike batch norm it has no running statistics:
// training, recomputation and evaluation all normalise with the row's own,
// so a recomputed forward gives the same values again.
//
// The primitive normalises a plain source (a token tensor is one already;
// any other layout is reordered to it first) and writes a plain output. It
// outputs each row's mean and variance; they go into `saved`, because the
// backward primitive reads them together with the source and the scale.
#include <bit>
#include <cstdint>
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

using dnnl::normalization_flags;
using dnnl::prop_kind;

const normalization_flags flags = normalization_flags::use_scale | normalization_flags::use_shift;

using LayerNormForwardPd = dnnl::layer_normalization_forward::primitive_desc;
using LayerNormBackwardPd = dnnl::layer_normalization_backward::primitive_desc;

class LayerNorm final : public Op {
 public:
  LayerNorm(std::string name, float epsilon) : name_(std::move(name)), epsilon_(epsilon) {
    if (!(epsilon_ > 0.0f)) {
      throw invalid_argument("cachedarrays::nn: " + where() + " has epsilon " + std::to_string(epsilon_) +
                             "; it needs a positive one");
    }
  }

  [[nodiscard]] std::string kind() const override { return "layer_norm"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 3, "x, weight, bias");
    const Dims& x = inputs[0];
    if (x.size() < 2 || x.size() > 5) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs an input of rank 2 to 5, got " + to_string(x));
    }
    const Dims features = {x.back()};
    for (std::size_t i = 1; i < 3; ++i) {
      if (inputs[i] != features) {
        throw invalid_argument("cachedarrays::nn: " + where() + ": the " + (i == 1 ? "weight" : "bias") +
                               " has shape " + to_string(inputs[i]) + " but an input of shape " + to_string(x) +
                               " needs " + to_string(features));
      }
    }
    return {x};
  }

  // Backward needs the source and the scale (the weight) for dx, and the
  // saved statistics; the shift (the bias) only gets a gradient.
  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {true, true, false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs,
               std::vector<Tensor>& saved) override {
    const dnnl::memory::desc desc = plain_desc(inputs[0].dims());
    auto [pd, prim] = forward_primitive(ctx, desc);
    const Tensor src = ctx.reorder(inputs[0], pd->src_desc());
    const Tensor scale = ctx.reorder(inputs[1], pd->weights_desc());
    const Tensor shift = ctx.reorder(inputs[2], pd->weights_desc());
    outputs[0] = ctx.make(pd->dst_desc());
    Tensor mean = ctx.make(pd->mean_desc());
    Tensor variance = ctx.make(pd->variance_desc());
    ctx.execute("layer_norm", *prim, pd->scratchpad_desc(),
                {in(DNNL_ARG_SRC, src), in(DNNL_ARG_SCALE, scale), in(DNNL_ARG_SHIFT, shift),
                 out(DNNL_ARG_DST, outputs[0]), out(DNNL_ARG_MEAN, mean), out(DNNL_ARG_VARIANCE, variance)});
    saved = {std::move(mean), std::move(variance)};
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor>,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>& saved, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (saved.size() != 2) {
      throw invalid_operation("cachedarrays::nn: backward of " + where() +
                              " needs the mean and variance its forward pass saved; run forward first");
    }
    if (!inputs[0] || !inputs[1]) {
      throw invalid_operation("cachedarrays::nn: backward of " + where() + " needs its forward input and weight");
    }
    const dnnl::memory::desc desc = plain_desc(inputs[0].dims());
    auto [pd, prim] =
        ctx.cached<LayerNormBackwardPd, dnnl::layer_normalization_backward>("layer_norm.bwd:" + key(desc), [&] {
          const auto* fwd = forward_primitive(ctx, desc).first;
          const dnnl::layer_normalization_backward::desc d(prop_kind::backward, desc, desc, epsilon_, flags);
          return LayerNormBackwardPd(d, ctx.attr(), ctx.engine(), *fwd);
        });
    const Tensor src = ctx.reorder(inputs[0], pd->src_desc());
    detail::execute_normalization_backward(ctx, "layer_norm_backward", *prim, *pd, src, inputs[1], inputs[2],
                                           grad_outputs[0], saved[0], saved[1], need_grad, grad_inputs);
  }

 private:
  std::pair<const LayerNormForwardPd*, const dnnl::layer_normalization_forward*> forward_primitive(
      Context& ctx, const dnnl::memory::desc& src) const {
    return ctx.cached<LayerNormForwardPd, dnnl::layer_normalization_forward>("layer_norm.fwd:" + key(src), [&] {
      const dnnl::layer_normalization_forward::desc d(prop_kind::forward_training, src, epsilon_, flags);
      return LayerNormForwardPd(d, ctx.attr(), ctx.engine());
    });
  }

  // A cache key: the descriptor and epsilon's bits (its decimal text would
  // round small ones together).
  [[nodiscard]] std::string key(const dnnl::memory::desc& src) const {
    return key_of(src) + ":" + std::to_string(std::bit_cast<std::uint32_t>(epsilon_));
  }

  [[nodiscard]] std::string where() const { return "layer_norm '" + name_ + "'"; }

  std::string name_;
  float epsilon_;
};

}  // namespace

ValueId layer_norm(Graph& g, const std::string& name, ValueId x, float epsilon) {
  auto op = std::make_unique<LayerNorm>(name, epsilon);  // validates epsilon
  const Dims& x_dims = g.value(x).dims;
  if (x_dims.size() < 2 || x_dims.size() > 5) {
    throw invalid_argument("cachedarrays::nn: layer_norm '" + name + "' needs an input of rank 2 to 5, got " +
                           to_string(x_dims));
  }
  const Dims features = {x_dims.back()};
  const ValueId weight = g.parameter(name + ".weight", features, Init::ones);
  const ValueId bias = g.parameter(name + ".bias", features, Init::zeros);
  return g.add1(name, std::move(op), {x, weight, bias});
}

}  // namespace cachedarrays::nn
