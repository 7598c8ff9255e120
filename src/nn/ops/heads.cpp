// The split of a QKV projection into attention heads and the merge of the
// heads' outputs, timm's reshape-and-permute in Attention.forward. Both are
// pure data movement, so each is one kernel of oneDNN reorders between a
// plain tensor and a strided view of the other side (view_reorder.hpp):
//
//   qkv [N, T, 3 D] seen as [N, T, 3, H, Dh]: slice s (q, k or v) is the
//   view [N, H, T, Dh] with strides (3 T D, Dh, 3 D, 1) at offset s D;
//   merged [N, T, H Dh] seen as [N, H, T, Dh]: strides (T H Dh, Dh, H Dh, 1).
//
// Neither backward reads a forward tensor: the gradients move back along
// the same views. The slices of q, k and v tile qkv, so split_heads'
// backward writes all of dqkv with no zeroing.
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
#include "view_reorder.hpp"

namespace cachedarrays::nn {

namespace {

using detail::run_view_reorder;
using detail::strided_desc;
using detail::view_reorder;

// Slice s of a plain qkv [N, T, 3 D] as [N, H, T, Dh] (at offset s D).
dnnl::memory::desc qkv_slice_view(std::int64_t n, std::int64_t heads, std::int64_t tokens, std::int64_t head_dim) {
  const std::int64_t row = 3 * heads * head_dim;  // 3 D
  return strided_desc({n, heads, tokens, head_dim}, {tokens * row, head_dim, row, 1});
}

// A plain [N, T, H Dh] as [N, H, T, Dh].
dnnl::memory::desc merged_view(std::int64_t n, std::int64_t heads, std::int64_t tokens, std::int64_t head_dim) {
  const std::int64_t row = heads * head_dim;  // D
  return strided_desc({n, heads, tokens, head_dim}, {tokens * row, head_dim, row, 1});
}

class SplitHeads final : public Op {
 public:
  SplitHeads(std::string name, std::int64_t heads) : name_(std::move(name)), heads_(heads) {
    if (heads_ < 1) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs at least 1 head, got " + std::to_string(heads_));
    }
  }

  [[nodiscard]] std::string kind() const override { return "split_heads"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 1, "qkv");
    const Dims& x = inputs[0];
    if (x.size() != 3 || x[2] % 3 != 0) {
      throw invalid_argument("cachedarrays::nn: " + where() +
                             " needs a QKV projection [N, T, 3 D] (rank 3, last dimension a multiple of 3), got " +
                             to_string(x));
    }
    const std::int64_t d = x[2] / 3;
    if (d % heads_ != 0) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": D = " + std::to_string(d) + " (a third of the input " +
                             to_string(x) + "'s last dimension) is not divisible by " + std::to_string(heads_) +
                             " heads");
    }
    const Dims head = {x[0], heads_, x[1], d / heads_};
    return {head, head, head};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false, false, false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Dims x = inputs[0].dims();
    const Dims head = output_dims(std::span<const Dims>(&x, 1)).at(0);
    // The view addresses qkv's elements by plain strides.
    const Tensor qkv = ctx.reorder(inputs[0], plain_desc(x));
    const dnnl::memory::desc view = qkv_slice_view(head[0], head[1], head[2], head[3]);
    const dnnl::memory::desc plain = plain_desc(head);
    const dnnl::reorder& prim = view_reorder(ctx, view, plain);
    for (std::size_t s = 0; s < 3; ++s) outputs[s] = ctx.make(plain);
    const KernelArg args[] = {in(DNNL_ARG_SRC, qkv), out(DNNL_ARG_DST, outputs[0]), out(DNNL_ARG_DST, outputs[1]),
                              out(DNNL_ARG_DST, outputs[2])};
    const std::int64_t d = x[2] / 3;
    ctx.run("split_heads", args, [&](std::span<float* const> p) {
      for (std::size_t s = 0; s < 3; ++s) {
        run_view_reorder(ctx, prim, view, p[0] + static_cast<std::int64_t>(s) * d, plain, p[s + 1]);
      }
    });
  }

  // dqkv slice s = dq, dk or dv moved back through the same view; each
  // gradient is read in whatever layout it comes in.
  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    const Dims head = grad_outputs[0].dims();
    const std::int64_t d = head[1] * head[3];
    const dnnl::memory::desc view = qkv_slice_view(head[0], head[1], head[2], head[3]);
    const dnnl::reorder* prims[3];
    for (std::size_t s = 0; s < 3; ++s) prims[s] = &view_reorder(ctx, grad_outputs[s].desc(), view);
    grad_inputs[0] = ctx.make_plain({head[0], head[2], 3 * d});
    const KernelArg args[] = {in(DNNL_ARG_DIFF_DST, grad_outputs[0]), in(DNNL_ARG_DIFF_DST, grad_outputs[1]),
                              in(DNNL_ARG_DIFF_DST, grad_outputs[2]), out(DNNL_ARG_DIFF_SRC, grad_inputs[0])};
    ctx.run("split_heads_backward", args, [&](std::span<float* const> p) {
      for (std::size_t s = 0; s < 3; ++s) {
        run_view_reorder(ctx, *prims[s], grad_outputs[s].desc(), p[s], view, p[3] + static_cast<std::int64_t>(s) * d);
      }
    });
  }

 private:
  [[nodiscard]] std::string where() const { return "split_heads '" + name_ + "'"; }

  std::string name_;
  std::int64_t heads_;
};

class MergeHeads final : public Op {
 public:
  explicit MergeHeads(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string kind() const override { return "merge_heads"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 1);
    const Dims& x = inputs[0];
    if (x.size() != 4) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs the heads' outputs [N, H, T, Dh], got " +
                             to_string(x));
    }
    return {{x[0], x[2], x[1] * x[3]}};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {false}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor& x = inputs[0];
    x_dims_ = x.dims();  // backward's gradient [N, T, D] does not show H
    const dnnl::memory::desc view = merged_view(x_dims_[0], x_dims_[1], x_dims_[2], x_dims_[3]);
    const dnnl::reorder& prim = view_reorder(ctx, x.desc(), view);
    outputs[0] = ctx.make_plain({x_dims_[0], x_dims_[2], x_dims_[1] * x_dims_[3]});
    const KernelArg args[] = {in(DNNL_ARG_SRC, x), out(DNNL_ARG_DST, outputs[0])};
    ctx.run("merge_heads", args,
            [&](std::span<float* const> p) { run_view_reorder(ctx, prim, x.desc(), p[0], view, p[1]); });
  }

  void backward(Context& ctx, std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> grad_outputs,
                std::vector<Tensor>&, std::span<const bool> need_grad, std::span<Tensor> grad_inputs) override {
    if (!need_grad[0]) return;
    if (x_dims_.size() != 4) {
      throw invalid_operation("cachedarrays::nn: " + where() + ": backward before forward");
    }
    // The view addresses dy's elements by plain strides.
    const Tensor dy = ctx.reorder(grad_outputs[0], plain_desc(grad_outputs[0].dims()));
    const dnnl::memory::desc view = merged_view(x_dims_[0], x_dims_[1], x_dims_[2], x_dims_[3]);
    const dnnl::memory::desc plain = plain_desc(x_dims_);
    const dnnl::reorder& prim = view_reorder(ctx, view, plain);
    grad_inputs[0] = ctx.make(plain);
    const KernelArg args[] = {in(DNNL_ARG_DIFF_DST, dy), out(DNNL_ARG_DIFF_SRC, grad_inputs[0])};
    ctx.run("merge_heads_backward", args,
            [&](std::span<float* const> p) { run_view_reorder(ctx, prim, view, p[0], plain, p[1]); });
  }

 private:
  [[nodiscard]] std::string where() const { return "merge_heads '" + name_ + "'"; }

  std::string name_;
  Dims x_dims_;  // of the last forward pass
};

}  // namespace

std::array<ValueId, 3> split_heads(Graph& g, const std::string& name, ValueId qkv, std::int64_t heads) {
  const std::vector<ValueId> out = g.add(name, std::make_unique<SplitHeads>(name, heads), {qkv});
  return {out.at(0), out.at(1), out.at(2)};
}

ValueId merge_heads(Graph& g, const std::string& name, ValueId x) {
  return g.add1(name, std::make_unique<MergeHeads>(name), {x});
}

}  // namespace cachedarrays::nn
