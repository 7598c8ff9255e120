// One token of every sample: x [N, T, D] to [N, D] (timm's x[:, 0] before
// the head with global_pool="token"). One contiguous row copy per sample;
// backward scatters dy back into a zero dx, reading no forward tensor.
#include <algorithm>
#include <cstdint>
#include <cstring>
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

class SelectToken final : public Op {
 public:
  SelectToken(std::string name, std::int64_t index) : name_(std::move(name)), index_(index) {
    if (index_ < 0) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs a token index of at least 0, got " +
                             std::to_string(index_));
    }
  }

  [[nodiscard]] std::string kind() const override { return "select_token"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 1);
    const Dims& x = inputs[0];
    if (x.size() != 3) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs tokens [N, T, D] of rank 3, got " + to_string(x));
    }
    if (index_ >= x[1]) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": token index " + std::to_string(index_) +
                             " is out of range for tokens " + to_string(x) + " (" + std::to_string(x[1]) + " tokens)");
    }
    return {{x[0], x[2]}};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    x_dims_ = inputs[0].dims();  // backward's gradient [N, D] does not show T
    const std::int64_t n = x_dims_[0], tokens = x_dims_[1], d = x_dims_[2];
    const Tensor x = ctx.reorder(inputs[0], plain_desc(x_dims_));
    outputs[0] = ctx.make_plain({n, d});
    const KernelArg args[] = {in(DNNL_ARG_SRC, x), out(DNNL_ARG_DST, outputs[0])};
    ctx.run("select_token", args, [&](std::span<float* const> p) {
      const auto row = static_cast<std::size_t>(d) * sizeof(float);
      for (std::int64_t i = 0; i < n; ++i) std::memcpy(p[1] + i * d, p[0] + (i * tokens + index_) * d, row);
    });
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    if (x_dims_.size() != 3) {
      throw invalid_operation("cachedarrays::nn: " + where() + ": backward before forward");
    }
    const std::int64_t n = x_dims_[0], tokens = x_dims_[1], d = x_dims_[2];
    const Tensor dy = ctx.reorder(grad_outputs[0], plain_desc({n, d}));
    grad_inputs[0] = ctx.make_plain(x_dims_);
    const KernelArg args[] = {in(DNNL_ARG_DIFF_DST, dy), out(DNNL_ARG_DIFF_SRC, grad_inputs[0])};
    ctx.run("select_token_backward", args, [&](std::span<float* const> p) {
      float* dx = p[1];
      std::fill(dx, dx + n * tokens * d, 0.0f);
      const auto row = static_cast<std::size_t>(d) * sizeof(float);
      for (std::int64_t i = 0; i < n; ++i) std::memcpy(dx + (i * tokens + index_) * d, p[0] + i * d, row);
    });
  }

 private:
  [[nodiscard]] std::string where() const { return "select_token '" + name_ + "'"; }

  std::string name_;
  std::int64_t index_;
  Dims x_dims_;  // of the last forward pass
};

}  // namespace

ValueId select_token(Graph& g, const std::string& name, ValueId x, std::int64_t index) {
  return g.add1(name, std::make_unique<SelectToken>(name, index), {x});
}

}  // namespace cachedarrays::nn
