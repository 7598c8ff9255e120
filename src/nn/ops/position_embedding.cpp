// The learned position embedding: y = x + E for tokens x [N, T, D] and the
// parameter E [1, T, D] (timm's x + self.pos_embed), one oneDNN binary add
// broadcasting E over the batch. Backward reads no forward tensor, so the sum
// may overwrite x (in_place_input), as add's does: x is the patch tokens,
// which nothing else reads.
//
// dx = dy is handed over as it is (add.cpp says why that is safe), and dE,
// the sum of dy over the batch, one pass over dy (embedding_gradient).
#include <algorithm>
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

// "position_embedding 'pos_embed'": the layer in messages.
std::string where(const std::string& name) { return "position_embedding '" + name + "'"; }

// Tokens have rank 3; the builder checks before it makes the parameter,
// whose shape depends on them, and the op checks again.
void check_tokens(const std::string& name, const Dims& x) {
  if (x.size() != 3) {
    throw invalid_argument("cachedarrays::nn: " + where(name) + " needs tokens [N, T, D] of rank 3, got " +
                           to_string(x));
  }
}

class PositionEmbedding final : public Op {
 public:
  explicit PositionEmbedding(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "position_embedding"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(name_), inputs, 2, "x, embedding");
    const Dims& x = inputs[0];
    check_tokens(name_, x);
    const Dims e = {1, x[1], x[2]};
    if (inputs[1] != e) {
      throw invalid_argument("cachedarrays::nn: " + where(name_) + ": the embedding has shape " + to_string(inputs[1]) +
                             " but tokens " + to_string(x) + " need " + to_string(e));
    }
    return {x};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false, false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }
  [[nodiscard]] int in_place_input() const override { return 0; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Dims x_dims = inputs[0].dims();
    const Dims e_dims = {1, x_dims[1], x_dims[2]};
    // Plain, so that the broadcast source lines up with every sample.
    const Tensor x = ctx.reorder(inputs[0], plain_desc(x_dims));
    const Tensor e = ctx.reorder(inputs[1], plain_desc(e_dims));
    const dnnl::memory::desc& desc = x.desc();
    auto [pd, prim] =
        ctx.cached<dnnl::binary::primitive_desc, dnnl::binary>("position_embedding.fwd:" + key_of(desc), [&] {
          const dnnl::binary::desc d(dnnl::algorithm::binary_add, desc, e.desc(), desc);
          return dnnl::binary::primitive_desc(d, ctx.attr(), ctx.engine());
        });
    if (detail::writes_in_place(outputs[0], x, pd->dst_desc())) {
      // oneDNN's binary may write over its first source; x is listed as
      // written because its contents are overwritten.
      ctx.execute("position_embedding", *prim, pd->scratchpad_desc(),
                  {out(DNNL_ARG_SRC_0, x), in(DNNL_ARG_SRC_1, e), out(DNNL_ARG_DST, outputs[0])});
      return;
    }
    outputs[0] = ctx.make(pd->dst_desc());
    ctx.execute("position_embedding", *prim, pd->scratchpad_desc(),
                {in(DNNL_ARG_SRC_0, x), in(DNNL_ARG_SRC_1, e), out(DNNL_ARG_DST, outputs[0])});
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    const Tensor& dy = grad_outputs[0];
    if (need_grad[1]) grad_inputs[1] = embedding_gradient(ctx, dy);
    if (need_grad[0]) grad_inputs[0] = dy;
  }

 private:
  // dE = the sum of dy over the batch, plain [1, T, D]: one pass over dy,
  // sample after sample, each row added into dE with unit strides. (oneDNN's
  // reduction primitive takes several times longer here, and refuses a
  // batch of 1.)
  static Tensor embedding_gradient(Context& ctx, const Tensor& grad_output) {
    const Dims y_dims = grad_output.dims();
    const Tensor dy = ctx.reorder(grad_output, plain_desc(y_dims));
    Tensor de = ctx.make_plain({1, y_dims[1], y_dims[2]});
    const auto samples = static_cast<std::size_t>(y_dims[0]);
    const auto row = static_cast<std::size_t>(y_dims[1] * y_dims[2]);
    const KernelArg args[] = {in(DNNL_ARG_SRC, dy), out(DNNL_ARG_DST, de)};
    ctx.run("position_embedding_backward", args, [&](std::span<float* const> p) {
      std::copy(p[0], p[0] + row, p[1]);
      for (std::size_t n = 1; n < samples; ++n) {
        const float* sample = p[0] + n * row;
        for (std::size_t i = 0; i < row; ++i) p[1][i] += sample[i];
      }
    });
    return de;
  }

  std::string name_;
};

}  // namespace

ValueId position_embedding(Graph& g, const std::string& name, ValueId x) {
  const Dims& x_dims = g.value(x).dims;
  check_tokens(name, x_dims);
  const ValueId e = g.parameter(name, {1, x_dims[1], x_dims[2]}, Init::small_normal);
  g.exclude_from_weight_decay(e);  // timm's no_weight_decay() lists pos_embed
  // The node (and its output) is "<name>.add": the name itself is the
  // parameter's, as a checkpoint knows it.
  return g.add1(name + ".add", std::make_unique<PositionEmbedding>(name), {x, e});
}

}  // namespace cachedarrays::nn
