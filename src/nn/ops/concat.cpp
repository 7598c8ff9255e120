// Concatenation along axis 1 (channels) of any number of tensors that agree
// on every other dimension (DenseNet). Forward is oneDNN's concat, which
// takes the inputs in their own layouts and picks the output's. Backward
// splits the output gradient back into per-input slices: the gradient is
// reordered to plain row-major once, where input i's slice of sample n is one
// contiguous run of C_i * H * W floats, and each slice is copied out.
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/op.hpp"

namespace cachedarrays::nn {

namespace {

class Concat final : public Op {
 public:
  explicit Concat(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "concat"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    if (inputs.empty()) throw invalid_argument("cachedarrays::nn: concat '" + name_ + "' needs at least 1 input");
    Dims y = inputs[0];
    if (y.size() < 2 || y.size() > 5) {
      throw invalid_argument("cachedarrays::nn: concat '" + name_ + "' needs inputs of rank 2 to 5, got " +
                             to_string(y));
    }
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      const Dims& x = inputs[i];
      bool fits = x.size() == y.size();
      for (std::size_t d = 0; fits && d < x.size(); ++d) fits = d == 1 || x[d] == y[d];
      if (!fits) {
        throw invalid_argument("cachedarrays::nn: concat '" + name_ + "': input " + std::to_string(i) + " " +
                               to_string(x) + " does not match input 0 " + to_string(inputs[0]) +
                               "; inputs may differ only in dimension 1 (channels)");
      }
      y[1] += x[1];
    }
    return {y};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t inputs) const override {
    return std::vector<bool>(inputs, false);
  }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    std::vector<dnnl::memory::desc> srcs;
    std::string key = "concat.fwd:1";
    input_dims_.clear();
    for (const Tensor& t : inputs) {
      srcs.push_back(t.desc());
      key += ":" + key_of(t.desc());
      input_dims_.push_back(t.dims());
    }
    auto [pd, prim] = ctx.cached<dnnl::concat::primitive_desc, dnnl::concat>(key, [&] {
      return dnnl::concat::primitive_desc(chained_dst_desc(ctx, srcs), 1, srcs, ctx.engine(), ctx.attr());
    });
    outputs[0] = ctx.make(pd->dst_desc());
    std::vector<KernelArg> args;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      args.push_back(in(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), inputs[i]));
    }
    args.push_back(out(DNNL_ARG_DST, outputs[0]));
    ctx.execute("concat", *prim, pd->scratchpad_desc(), args);
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    if (input_dims_.size() != grad_inputs.size()) {
      throw invalid_operation("cachedarrays::nn: concat '" + name_ + "': backward before forward");
    }
    const Dims dims = grad_outputs[0].dims();
    const Tensor diff_dst = ctx.reorder(grad_outputs[0], plain_desc(dims));
    std::int64_t inner = 1;  // elements per channel
    for (std::size_t d = 2; d < dims.size(); ++d) inner *= dims[d];
    const std::int64_t batch = dims[0];
    const std::int64_t dst_stride = dims[1] * inner;

    std::vector<KernelArg> args{in(DNNL_ARG_DIFF_DST, diff_dst)};
    std::vector<std::int64_t> offsets;  // of each produced slice within a sample
    std::vector<std::int64_t> lengths;
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < input_dims_.size(); ++i) {
      const std::int64_t length = input_dims_[i][1] * inner;
      if (need_grad[i]) {
        grad_inputs[i] = ctx.make_plain(input_dims_[i]);
        args.push_back(out(DNNL_ARG_DIFF_SRC, grad_inputs[i]));
        offsets.push_back(offset);
        lengths.push_back(length);
      }
      offset += length;
    }
    if (offsets.empty()) return;
    ctx.run("concat_backward", args, [&](std::span<float* const> p) {
      const float* src = p[0];
      for (std::size_t k = 0; k < offsets.size(); ++k) {
        const auto bytes = static_cast<std::size_t>(lengths[k]) * sizeof(float);
        for (std::int64_t n = 0; n < batch; ++n) {
          std::memcpy(p[k + 1] + n * lengths[k], src + n * dst_stride + offsets[k], bytes);
        }
      }
    });
  }

 private:
  // The output's layout: the one oneDNN gives the last of a chain of
  // two-input concatenations, concat(concat(concat(x0, x1), x2), ...). Left
  // to itself, oneDNN picks the output layout from the first input, and
  // where channel counts are not multiples of its vector block (narrow test
  // networks) an n-input concat and the chain differ (plain vs blocked). The
  // chain's layout is that of DenseNet's running form, concat(previous,
  // new), rather than one n-input concat (models.hpp); keeping it keeps
  // the batch norm after it summing in the same order, so the losses stay
  // bit-identical to that form.
  static dnnl::memory::desc chained_dst_desc(Context& ctx, const std::vector<dnnl::memory::desc>& srcs) {
    dnnl::memory::desc dst = srcs.front();
    for (std::size_t i = 1; i < srcs.size(); ++i) {
      dst = dnnl::concat::primitive_desc(1, {dst, srcs[i]}, ctx.engine(), ctx.attr()).dst_desc();
    }
    return dst;
  }

  std::string name_;
  std::vector<Dims> input_dims_;  // of the last forward pass
};

}  // namespace

ValueId concat(Graph& g, const std::string& name, const std::vector<ValueId>& xs) {
  return g.add1(name, std::make_unique<Concat>(name), xs);
}

}  // namespace cachedarrays::nn
