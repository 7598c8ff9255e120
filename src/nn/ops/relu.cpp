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

using detail::relu_forward_primitive;

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

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor& src = inputs[0];
    auto [pd, prim] = relu_forward_primitive(ctx, src.desc());
    detail::execute_in_place_or_new(ctx, "relu", *prim, *pd, src, outputs[0]);
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor> outputs,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    const Tensor& dst = outputs[0];
    if (!dst) {
      throw invalid_operation("cachedarrays::nn: backward of relu '" + name_ + "' needs its forward output");
    }
    grad_inputs[0] = detail::relu_backward(ctx, dst, grad_outputs[0]);
  }

 private:
  std::string name_;
};

}  // namespace

ValueId relu(Graph& g, const std::string& name, ValueId x) { return g.add1(name, std::make_unique<Relu>(name), {x}); }

}  // namespace cachedarrays::nn
