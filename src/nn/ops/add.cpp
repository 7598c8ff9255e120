// Element-wise a + b of two tensors of the same shape (residual
// connections). The sum takes a's layout; b is reordered to it if needed.
// Backward reads neither input, so the sum may overwrite a (in_place_input):
// in a residual block a is the last batch norm's output, which nothing else
// reads (nGraph and PyTorch's `out += identity` add in place the same way).
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

class Add final : public Op {
 public:
  explicit Add(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "add"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count("add '" + name_ + "'", inputs, 2);
    if (inputs[0] != inputs[1]) {
      throw invalid_argument("cachedarrays::nn: add '" + name_ + "' needs inputs of the same shape, got " +
                             to_string(inputs[0]) + " and " + to_string(inputs[1]));
    }
    if (inputs[0].empty() || inputs[0].size() > 5) {
      throw invalid_argument("cachedarrays::nn: add '" + name_ + "' needs inputs of rank 1 to 5, got " +
                             to_string(inputs[0]));
    }
    return {inputs[0]};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false, false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }
  [[nodiscard]] int in_place_input() const override { return 0; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor& a = inputs[0];
    const dnnl::memory::desc& desc = a.desc();
    const Tensor b = ctx.reorder(inputs[1], desc);
    auto [pd, prim] = ctx.cached<dnnl::binary::primitive_desc, dnnl::binary>("add.fwd:" + key_of(desc), [&] {
      const dnnl::binary::desc d(dnnl::algorithm::binary_add, desc, desc, desc);
      return dnnl::binary::primitive_desc(d, ctx.attr(), ctx.engine());
    });
    if (detail::writes_in_place(outputs[0], a, pd->dst_desc())) {
      // oneDNN's binary may write over its first source; a is listed as
      // written because its contents are overwritten.
      ctx.execute("add", *prim, pd->scratchpad_desc(),
                  {out(DNNL_ARG_SRC_0, a), in(DNNL_ARG_SRC_1, b), out(DNNL_ARG_DST, outputs[0])});
      return;
    }
    outputs[0] = ctx.make(pd->dst_desc());
    ctx.execute("add", *prim, pd->scratchpad_desc(),
                {in(DNNL_ARG_SRC_0, a), in(DNNL_ARG_SRC_1, b), out(DNNL_ARG_DST, outputs[0])});
  }

  // d(a + b)/da = d(a + b)/db = 1: both gradients are grad_outputs[0]
  // itself, with no kernel and no copy. The two inputs (and the output's
  // gradient slot) then share one tensor handle; the trainer copies a shared
  // handle before it accumulates into it (use_count() > 1), so nobody else's
  // gradient changes.
  void backward(Context&, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    for (std::size_t i = 0; i < 2; ++i) {
      if (need_grad[i]) grad_inputs[i] = grad_outputs[0];
    }
  }

 private:
  std::string name_;
};

}  // namespace

ValueId add(Graph& g, const std::string& name, ValueId a, ValueId b) {
  return g.add1(name, std::make_unique<Add>(name), {a, b});
}

}  // namespace cachedarrays::nn
