// 2-d pooling over NCHW: max pooling, average pooling (padding excluded from
// the average) and global average pooling ([N, C, H, W] -> [N, C, 1, 1]).
// The source keeps its layout; the destination takes the layout oneDNN
// picks for it (the source's own for the usual plain and blocked ones).
//
// Backward needs no activation: max pooling remembers where each maximum
// was in its workspace (kept in `saved`), average pooling needs nothing but
// the shapes. The source's descriptor is kept in the op for the backward
// primitive, so the source itself can be retired after the forward pass.
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

class Pooling final : public Op {
 public:
  // kernel, stride and padding are {height, width}; padding is symmetric.
  Pooling(std::string kind, std::string name, algorithm alg, Dims kernel, Dims stride, Dims padding)
      : kind_(std::move(kind)),
        name_(std::move(name)),
        alg_(alg),
        kernel_(std::move(kernel)),
        stride_(std::move(stride)),
        padding_(std::move(padding)) {
    for (std::size_t i = 0; i < 2; ++i) {
      if (kernel_[i] < 1 || stride_[i] < 1 || padding_[i] < 0 || 2 * padding_[i] > kernel_[i]) {
        throw invalid_argument("cachedarrays::nn: " + where() + " has kernel " + to_string(kernel_) + ", stride " +
                               to_string(stride_) + " and padding " + to_string(padding_) +
                               "; kernel and stride must be at least 1 and padding between 0 and half the kernel");
      }
    }
  }

  [[nodiscard]] std::string kind() const override { return kind_; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 1);
    const Dims& x = inputs[0];
    detail::check_nchw(where(), x);
    Dims y = {x[0], x[1], 0, 0};
    for (std::size_t i = 0; i < 2; ++i) {
      const std::int64_t padded = x[2 + i] + 2 * padding_[i];
      if (padded < kernel_[i]) {
        throw invalid_argument("cachedarrays::nn: " + where() + ": the window " + to_string(kernel_) + " (padding " +
                               to_string(padding_) + ") is larger than the input " + to_string(x));
      }
      y[2 + i] = (padded - kernel_[i]) / stride_[i] + 1;
    }
    return {y};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs,
               std::vector<Tensor>& saved) override {
    const Tensor& src = inputs[0];
    src_desc_ = src.desc();
    auto [pd, prim] = forward_primitive(ctx);
    outputs[0] = ctx.make(pd->dst_desc());
    saved.clear();
    if (alg_ == algorithm::pooling_max) {
      saved.push_back(ctx.make(pd->workspace_desc()));
      ctx.execute(kernel_name(kind_), *prim, pd->scratchpad_desc(),
                  {in(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, outputs[0]), out(DNNL_ARG_WORKSPACE, saved[0])});
    } else {
      ctx.execute(kernel_name(kind_), *prim, pd->scratchpad_desc(),
                  {in(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, outputs[0])});
    }
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>& saved, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    if (src_desc_.is_zero()) {
      throw invalid_operation("cachedarrays::nn: " + where() + ": backward before forward");
    }
    const std::string key = kind_ + ".bwd:" + attributes() + key_of(src_desc_);
    auto [pd, prim] = ctx.cached<dnnl::pooling_backward::primitive_desc, dnnl::pooling_backward>(key, [&] {
      const auto* fwd = forward_primitive(ctx).first;
      const dnnl::pooling_backward::desc d(alg_, src_desc_, fwd->dst_desc(), stride_, kernel_, padding_, padding_);
      return dnnl::pooling_backward::primitive_desc(d, ctx.attr(), ctx.engine(), *fwd);
    });
    const Tensor diff_dst = ctx.reorder(grad_outputs[0], pd->diff_dst_desc());
    grad_inputs[0] = ctx.make(pd->diff_src_desc());
    const std::string name = kernel_name(kind_ + "_backward");
    if (alg_ == algorithm::pooling_max) {
      if (saved.size() != 1) {
        throw invalid_operation("cachedarrays::nn: " + where() + ": backward without the forward workspace");
      }
      ctx.execute(
          name, *prim, pd->scratchpad_desc(),
          {in(DNNL_ARG_DIFF_DST, diff_dst), in(DNNL_ARG_WORKSPACE, saved[0]), out(DNNL_ARG_DIFF_SRC, grad_inputs[0])});
    } else {
      ctx.execute(name, *prim, pd->scratchpad_desc(),
                  {in(DNNL_ARG_DIFF_DST, diff_dst), out(DNNL_ARG_DIFF_SRC, grad_inputs[0])});
    }
  }

 private:
  [[nodiscard]] std::string where() const { return kind_ + " '" + name_ + "'"; }

  // The kernel's name (nn/dnnl_signature.hpp): its kind and the window,
  // which the argument shapes do not show ("max_pool k3s2p1"; a window that
  // is not square lists both sides, "k3x2").
  [[nodiscard]] std::string kernel_name(const std::string& kind) const {
    const auto sides = [](const Dims& d) {
      return d.at(0) == d.at(1) ? std::to_string(d[0]) : std::to_string(d[0]) + "x" + std::to_string(d[1]);
    };
    return kind + " k" + sides(kernel_) + "s" + sides(stride_) + "p" + sides(padding_);
  }

  // Everything besides the source descriptor that the primitive depends on.
  [[nodiscard]] std::string attributes() const {
    return std::to_string(static_cast<int>(alg_)) + ":k" + to_string(kernel_) + "s" + to_string(stride_) + "p" +
           to_string(padding_) + ":";
  }

  std::pair<const dnnl::pooling_forward::primitive_desc*, const dnnl::pooling_forward*> forward_primitive(
      Context& ctx) const {
    const Dims dst_dims = output_dims(std::vector<Dims>{src_desc_.dims()}).at(0);
    const dnnl::memory::desc dst(dst_dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
    const std::string key = kind_ + ".fwd:" + attributes() + key_of(src_desc_) + ">" + key_of(dst);
    return ctx.cached<dnnl::pooling_forward::primitive_desc, dnnl::pooling_forward>(key, [&] {
      // Symmetric padding: oneDNN's output size (in + pl + pr - k) / s + 1
      // then rounds down as output_dims does.
      const dnnl::pooling_forward::desc d(prop_kind::forward_training, alg_, src_desc_, dst, stride_, kernel_, padding_,
                                          padding_);
      return dnnl::pooling_forward::primitive_desc(d, ctx.attr(), ctx.engine());
    });
  }

  std::string kind_;
  std::string name_;
  algorithm alg_;
  Dims kernel_;
  Dims stride_;
  Dims padding_;
  dnnl::memory::desc src_desc_;  // of the last forward pass
};

}  // namespace

ValueId max_pool(Graph& g, const std::string& name, ValueId x, std::int64_t kernel, std::int64_t stride,
                 std::int64_t padding) {
  return g.add1(name,
                std::make_unique<Pooling>("max_pool", name, algorithm::pooling_max, Dims{kernel, kernel},
                                          Dims{stride, stride}, Dims{padding, padding}),
                {x});
}

ValueId avg_pool(Graph& g, const std::string& name, ValueId x, std::int64_t kernel, std::int64_t stride,
                 std::int64_t padding) {
  return g.add1(name,
                std::make_unique<Pooling>("avg_pool", name, algorithm::pooling_avg_exclude_padding,
                                          Dims{kernel, kernel}, Dims{stride, stride}, Dims{padding, padding}),
                {x});
}

ValueId global_avg_pool(Graph& g, const std::string& name, ValueId x) {
  if (x < 0 || static_cast<std::size_t>(x) >= g.value_count()) {
    throw invalid_argument("cachedarrays::nn: global_avg_pool '" + name + "' names value " + std::to_string(x) +
                           ", which this graph does not have");
  }
  const Dims& dims = g.value(x).dims;
  detail::check_nchw("global_avg_pool '" + name + "'", dims);
  return g.add1(name,
                std::make_unique<Pooling>("global_avg_pool", name, algorithm::pooling_avg_exclude_padding,
                                          Dims{dims[2], dims[3]}, Dims{1, 1}, Dims{0, 0}),
                {x});
}

}  // namespace cachedarrays::nn
