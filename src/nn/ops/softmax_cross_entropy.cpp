// The training loss: mean over the batch of -log softmax(z_n)[label_n], for
// logits z [N, K] and labels [N] holding class indices as floats. Computed
// in one hand-written kernel with the max-shifted log-sum-exp, so large
// logits neither overflow nor lose the small probabilities. The forward pass
// keeps softmax(z) (plain [N, K]) for the backward pass:
//   dLoss/dz_nk = g * (softmax(z_n)_k - [k == label_n]) / N.
#include <algorithm>
#include <cmath>
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

class SoftmaxCrossEntropy final : public Op {
 public:
  explicit SoftmaxCrossEntropy(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "softmax_cross_entropy"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 2, "logits, labels");
    const Dims& z = inputs[0];
    const Dims& labels = inputs[1];
    if (z.size() != 2) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs logits of shape [N, K], got " + to_string(z));
    }
    if (labels != Dims{z[0]}) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs labels of shape [" + std::to_string(z[0]) +
                             "] for logits " + to_string(z) + ", got " + to_string(labels));
    }
    return {Dims{1}};
  }

  // The saved probabilities replace the logits; the labels pick the class.
  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false, true}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs,
               std::vector<Tensor>& saved) override {
    const Dims dims = inputs[0].dims();
    const Tensor z = ctx.reorder(inputs[0], plain_desc(dims));
    const Tensor labels = ctx.reorder(inputs[1], plain_desc(inputs[1].dims()));
    outputs[0] = ctx.make_plain({1});
    saved.assign(1, ctx.make_plain(dims));
    const auto n = static_cast<std::size_t>(dims[0]);
    const auto k = static_cast<std::size_t>(dims[1]);
    const KernelArg args[] = {in(DNNL_ARG_SRC, z), in(DNNL_ARG_SRC_1, labels), out(DNNL_ARG_DST, outputs[0]),
                              out(DNNL_ARG_WORKSPACE, saved[0])};
    ctx.run(kind(), args, [&](std::span<float* const> p) {
      const float* logits = p[0];
      const float* label = p[1];
      float* prob = p[3];
      double total = 0;
      for (std::size_t row = 0; row < n; ++row) {
        const std::size_t target = class_of(label[row], row, k);
        const float* zr = logits + row * k;
        float* pr = prob + row * k;
        const float shift = *std::max_element(zr, zr + k);
        double sum = 0;
        for (std::size_t c = 0; c < k; ++c) sum += std::exp(static_cast<double>(zr[c] - shift));
        const double log_sum = std::log(sum);
        for (std::size_t c = 0; c < k; ++c) {
          pr[c] = static_cast<float>(std::exp(static_cast<double>(zr[c] - shift) - log_sum));
        }
        total += log_sum - static_cast<double>(zr[target] - shift);
      }
      p[2][0] = static_cast<float>(total / static_cast<double>(n));
    });
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor>,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>& saved, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    // Labels are data: they never get a gradient, whatever need_grad says.
    if (!need_grad[0]) return;
    if (saved.size() != 1) {
      throw invalid_operation("cachedarrays::nn: " + where() + ": backward without the forward probabilities");
    }
    const Tensor& prob = saved[0];
    const Dims dims = prob.dims();
    const Tensor labels = ctx.reorder(inputs[1], plain_desc(inputs[1].dims()));
    const Tensor scale = ctx.reorder(grad_outputs[0], plain_desc({1}));
    grad_inputs[0] = ctx.make_plain(dims);
    const auto n = static_cast<std::size_t>(dims[0]);
    const auto k = static_cast<std::size_t>(dims[1]);
    const KernelArg args[] = {in(DNNL_ARG_WORKSPACE, prob), in(DNNL_ARG_SRC_1, labels), in(DNNL_ARG_DIFF_DST, scale),
                              out(DNNL_ARG_DIFF_SRC, grad_inputs[0])};
    // Appended, not `kind() + "_backward"`: GCC 12 reports a false
    // -Wstringop-overflow for that inlined concatenation here.
    std::string backward_kind = kind();
    backward_kind += "_backward";
    ctx.run(backward_kind, args, [&](std::span<float* const> p) {
      const float* pr = p[0];
      const float* label = p[1];
      const float g = p[2][0] / static_cast<float>(n);
      float* diff = p[3];
      for (std::size_t row = 0; row < n; ++row) {
        const std::size_t target = class_of(label[row], row, k);
        for (std::size_t c = 0; c < k; ++c) {
          diff[row * k + c] = g * (pr[row * k + c] - (c == target ? 1.0f : 0.0f));
        }
      }
    });
  }

 private:
  [[nodiscard]] std::string where() const { return "softmax_cross_entropy '" + name_ + "'"; }

  // The class a label names; throws unless it is a whole number in [0, k).
  [[nodiscard]] std::size_t class_of(float label, std::size_t row, std::size_t k) const {
    if (!(label >= 0.0f && label < static_cast<float>(k)) || label != std::floor(label)) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": row " + std::to_string(row) + " has label " +
                             std::to_string(label) + "; labels must be class indices 0 to " + std::to_string(k - 1));
    }
    return static_cast<std::size_t>(label);
  }

  std::string name_;
};

}  // namespace

ValueId softmax_cross_entropy(Graph& g, const std::string& name, ValueId logits, ValueId labels) {
  return g.add1(name, std::make_unique<SoftmaxCrossEntropy>(name), {logits, labels});
}

}  // namespace cachedarrays::nn
