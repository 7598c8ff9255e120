// Pieces the ops in this folder share, private to them: the shape checks
// whose error messages must read the same for every op, and the execution
// of the oneDNN primitives that convolution and inner product have in
// common (an optional bias on the forward pass and on the weight gradient,
// parameter gradients handed back in the layouts the parameters are kept
// in, the weights' layout chosen, a token-wise inner product's activations
// seen as matrices). Templates take the primitive descriptor,
// which differs between the two ops while its accessors do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/context.hpp"
#include "cachedarrays/nn/tensor.hpp"

namespace cachedarrays::nn::detail {

// Dims with format_tag::any: the primitive picks the layout (blocked for
// convolution, whatever fits the source for inner product).
inline dnnl::memory::desc any_desc(const Dims& dims) {
  return {dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any};
}

// Every op rejects a wrong number of inputs the same way, naming itself
// (`where`, e.g. "conv 'c1'") and, when given, what the inputs are.
inline void check_input_count(const std::string& where, std::span<const Dims> inputs, std::size_t expected,
                              const std::string& names = "") {
  if (inputs.size() == expected) return;
  throw invalid_argument("cachedarrays::nn: " + where + " takes " + std::to_string(expected) +
                         (expected == 1 ? " input" : " inputs") + (names.empty() ? "" : " (" + names + ")") + ", got " +
                         std::to_string(inputs.size()));
}

// Convolution, batch normalisation and pooling take NCHW only; the op and
// its builder both check, with this one message.
inline void check_nchw(const std::string& where, const Dims& x) {
  if (x.size() != 4) {
    throw invalid_argument("cachedarrays::nn: " + where + " needs an NCHW input of rank 4, got " + to_string(x));
  }
}

// The bias of a convolution or linear layer has one element per output channel.
inline void check_bias_dims(const std::string& where, const Dims& bias, std::int64_t out_channels) {
  if (bias != Dims{out_channels}) {
    throw invalid_argument("cachedarrays::nn: " + where + ": the bias has shape " + to_string(bias) + " but needs " +
                           to_string({out_channels}));
  }
}

// Whether a forward pass writes its result into `output`, the storage of
// its input `src` that the trainer offered (Op::in_place_input): only when
// one was offered, it is `src` itself and it has the output's layout.
// Otherwise the offer is dropped and the op makes a new output.
inline bool writes_in_place(Tensor& output, const Tensor& src, const dnnl::memory::desc& dst_desc) {
  if (output && src && output.id() == src.id() && output.desc() == dst_desc) return true;
  output.reset();
  return false;
}

// Runs a forward primitive of one source whose output may take that
// source's storage (Op::in_place_input: ReLU, softmax): over the source when
// the trainer offered it and the layouts agree (detail::writes_in_place;
// oneDNN runs these in place, and the source is listed as written because
// its contents are overwritten), else into a new output of the primitive's
// layout.
template <typename ForwardPd>
void execute_in_place_or_new(Context& ctx, const std::string& name, const dnnl::primitive& prim, const ForwardPd& pd,
                             const Tensor& src, Tensor& output) {
  if (writes_in_place(output, src, pd.dst_desc())) {
    ctx.execute(name, prim, pd.scratchpad_desc(), {out(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, output)});
    return;
  }
  output = ctx.make(pd.dst_desc());
  ctx.execute(name, prim, pd.scratchpad_desc(), {in(DNNL_ARG_SRC, src), out(DNNL_ARG_DST, output)});
}

// What backward reads of a weighted primitive's inputs (src, weights[,
// bias]): the source for the weight gradient and the weights for the source
// gradient, never the bias, so the trainer may retire the bias after forward.
inline std::vector<bool> weighted_backward_reads_inputs(std::size_t inputs) {
  std::vector<bool> reads(inputs, false);
  reads.at(0) = true;  // src: the weight gradient
  reads.at(1) = true;  // weights: the source gradient
  return reads;
}

// ReLU's algorithm: its backward reads y (the output), not x (relu.cpp says
// why), and dx = dy where y > 0 is the same mask as x > 0.
inline constexpr dnnl::algorithm relu_algorithm = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;

// The ReLU forward primitive for a source of this layout.
inline std::pair<const dnnl::eltwise_forward::primitive_desc*, const dnnl::eltwise_forward*> relu_forward_primitive(
    Context& ctx, const dnnl::memory::desc& src) {
  return ctx.cached<dnnl::eltwise_forward::primitive_desc, dnnl::eltwise_forward>("relu.fwd:" + key_of(src), [&] {
    const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training, relu_algorithm, src);
    return dnnl::eltwise_forward::primitive_desc(d, ctx.attr(), ctx.engine());
  });
}

// dx of an element-wise op's backward primitive (ReLU, GELU, softmax) that
// reads `kept` (its forward source or output, in role `kept_role`) and dy
// (`grad_output`). In place over dy when the op holds dy's only handle
// (Op::backward) in the layout dx has too: oneDNN's eltwise and softmax
// backward run in place, and no second gradient of the activation's size
// exists while it does (dy is listed as written, its contents overwritten).
template <typename BackwardPd>
Tensor execute_backward_over_grad(Context& ctx, const std::string& name, const dnnl::primitive& prim,
                                  const BackwardPd& pd, int kept_role, const Tensor& kept, const Tensor& grad_output) {
  if (grad_output.use_count() == 1 && grad_output.desc() == pd.diff_dst_desc() &&
      pd.diff_src_desc() == pd.diff_dst_desc()) {
    ctx.execute(name, prim, pd.scratchpad_desc(),
                {in(kept_role, kept), out(DNNL_ARG_DIFF_DST, grad_output), out(DNNL_ARG_DIFF_SRC, grad_output)});
    return grad_output;
  }
  const Tensor diff_dst = ctx.reorder(grad_output, pd.diff_dst_desc());
  Tensor grad_src = ctx.make(pd.diff_src_desc());
  ctx.execute(name, prim, pd.scratchpad_desc(),
              {in(kept_role, kept), in(DNNL_ARG_DIFF_DST, diff_dst), out(DNNL_ARG_DIFF_SRC, grad_src)});
  return grad_src;
}

// dx of a ReLU from its output `dst` and dy (`grad_output`), one
// "relu_backward" kernel: the ReLU op's backward, and the first half of a
// convolution's whose ReLU is fused into it (Conv2dOptions::relu); in place
// over dy where it may (execute_backward_over_grad).
inline Tensor relu_backward(Context& ctx, const Tensor& dst, const Tensor& grad_output) {
  const dnnl::memory::desc& desc = dst.desc();  // the source's layout too
  auto [pd, prim] =
      ctx.cached<dnnl::eltwise_backward::primitive_desc, dnnl::eltwise_backward>("relu.bwd:" + key_of(desc), [&] {
        const auto* fwd = relu_forward_primitive(ctx, desc).first;
        const dnnl::eltwise_backward::desc d(relu_algorithm, desc, desc);
        return dnnl::eltwise_backward::primitive_desc(d, ctx.attr(), ctx.engine(), *fwd);
      });
  return execute_backward_over_grad(ctx, "relu_backward", *prim, *pd, DNNL_ARG_DST, dst, grad_output);
}

// The layout a weighted primitive's weights are kept in (Op::parameter_desc):
// the one most of its three primitives use, the forward's when all differ.
// Each primitive whose layout it is not reorders the weights (forward,
// backward data) or the gradient (backward weights) every iteration. Plain
// when that layout pads the weights (channels no multiple of the block): the
// weights, their momentum and gradient would be larger for the whole run,
// while a reorder's padded copy lives for one kernel.
template <typename ForwardPd, typename DataPd, typename WeightsPd>
dnnl::memory::desc most_used_weights_desc(const ForwardPd& forward_pd, const DataPd& data_pd,
                                          const WeightsPd& weights_pd) {
  const dnnl::memory::desc forward = forward_pd.weights_desc();
  const dnnl::memory::desc backward_data = data_pd.weights_desc();
  const dnnl::memory::desc backward_weights = weights_pd.diff_weights_desc();
  const dnnl::memory::desc& most_used =
      forward != backward_data && backward_data == backward_weights ? backward_data : forward;
  const dnnl::memory::desc plain = plain_desc(most_used.dims());
  return most_used.get_size() > plain.get_size() ? plain : most_used;
}

// How a weighted primitive sees its activations (source, destination and
// their gradients): as the tensors lie (`tokens` false), or, for a
// token-wise linear layer, each plain [N, T, C] tensor as the plain matrix
// [N T, C] its inner product was made for, the same storage through a view
// (KernelArg::view). `primitive_desc` is the primitive's descriptor of that
// argument, which must outlive the kernel.
inline KernelArg activation(int dnnl_arg, Access access, const Tensor& t, const dnnl::memory::desc& primitive_desc,
                            bool tokens) {
  return {dnnl_arg, &t, access, tokens ? &primitive_desc : nullptr};
}

// An activation (`primitive_desc` the primitive's descriptor of it) in the
// layout the primitive reads: reordered to that descriptor, or, for a
// token-wise layer, to plain [N, T, C], which the primitive's [N T, C] views.
inline Tensor activation_in(Context& ctx, const Tensor& t, const dnnl::memory::desc& primitive_desc, bool tokens) {
  return ctx.reorder(t, tokens ? plain_desc(t.dims()) : primitive_desc);
}

// The forward pass of a weighted primitive (convolution, inner product) with
// or without a bias: the trainer keeps the bias plain, so when there is one
// (`bias_plain` not null) it is reordered to the primitive's layout first.
// `src` and `weights` are already in the primitive's layouts (activations
// as `tokens` says), `dst` made.
template <typename ForwardPd>
void execute_forward(Context& ctx, const std::string& name, const dnnl::primitive& prim, const ForwardPd& pd,
                     const Tensor& src, const Tensor& weights, const Tensor* bias_plain, const Tensor& dst,
                     bool tokens = false) {
  const dnnl::memory::desc src_desc = pd.src_desc();
  const dnnl::memory::desc dst_desc = pd.dst_desc();
  const KernelArg src_arg = activation(DNNL_ARG_SRC, Access::read, src, src_desc, tokens);
  const KernelArg dst_arg = activation(DNNL_ARG_DST, Access::write, dst, dst_desc, tokens);
  if (bias_plain != nullptr) {
    const Tensor bias = ctx.reorder(*bias_plain, pd.bias_desc());
    ctx.execute(name, prim, pd.scratchpad_desc(),
                {src_arg, in(DNNL_ARG_WEIGHTS, weights), in(DNNL_ARG_BIAS, bias), dst_arg});
  } else {
    ctx.execute(name, prim, pd.scratchpad_desc(), {src_arg, in(DNNL_ARG_WEIGHTS, weights), dst_arg});
  }
}

// The source gradient of a weighted primitive: the weights (in the layout
// the trainer keeps them in) and the output gradient are reordered to the
// primitive's layouts; `grad_src` is made in the layout the primitive picked
// (plain [N, T, C] for a token-wise layer, `tokens`).
template <typename DataPd>
void execute_backward_data(Context& ctx, const std::string& name, const dnnl::primitive& prim, const DataPd& pd,
                           const Tensor& kept_weights, const Tensor& grad_output, Tensor& grad_src,
                           bool tokens = false) {
  const dnnl::memory::desc diff_dst_desc = pd.diff_dst_desc();
  const dnnl::memory::desc diff_src_desc = pd.diff_src_desc();
  const Tensor weights = ctx.reorder(kept_weights, pd.weights_desc());
  const Tensor diff_dst = activation_in(ctx, grad_output, diff_dst_desc, tokens);
  if (tokens) {
    Dims src_dims = grad_output.dims();
    src_dims.back() = diff_src_desc.dims().back();
    grad_src = ctx.make_plain(src_dims);
  } else {
    grad_src = ctx.make(diff_src_desc);
  }
  ctx.execute(
      name, prim, pd.scratchpad_desc(),
      {in(DNNL_ARG_WEIGHTS, weights), activation(DNNL_ARG_DIFF_DST, Access::read, diff_dst, diff_dst_desc, tokens),
       activation(DNNL_ARG_DIFF_SRC, Access::write, grad_src, diff_src_desc, tokens)});
}

// The weight (and, with `bias`, bias) gradients of a weighted primitive
// whose inputs are (src, weights[, bias]). oneDNN computes both in one call
// whenever the primitive was made with a bias, so the bias gradient is
// always produced then; only the ones need_grad asks for are handed back,
// in grad_inputs[1] and [2], in the layouts the trainer keeps the weights
// (`kept_weights`) and the bias (plain) in, because the optimiser updates
// each parameter element by element with its gradient in its own layout.
// `src` is in the primitive's layout (activations as `tokens` says).
template <typename WeightsPd>
void execute_backward_weights(Context& ctx, const std::string& name, const dnnl::primitive& prim, const WeightsPd& pd,
                              const Tensor& src, const Tensor& grad_output, const dnnl::memory::desc& kept_weights,
                              bool bias, std::span<const bool> need_grad, std::span<Tensor> grad_inputs,
                              bool tokens = false) {
  const dnnl::memory::desc src_desc = pd.src_desc();
  const dnnl::memory::desc diff_dst_desc = pd.diff_dst_desc();
  const Tensor diff_dst = activation_in(ctx, grad_output, diff_dst_desc, tokens);
  const KernelArg src_arg = activation(DNNL_ARG_SRC, Access::read, src, src_desc, tokens);
  const KernelArg diff_dst_arg = activation(DNNL_ARG_DIFF_DST, Access::read, diff_dst, diff_dst_desc, tokens);
  Tensor diff_weights = ctx.make(pd.diff_weights_desc());
  if (bias) {
    Tensor diff_bias = ctx.make(pd.diff_bias_desc());
    ctx.execute(name, prim, pd.scratchpad_desc(),
                {src_arg, diff_dst_arg, out(DNNL_ARG_DIFF_WEIGHTS, diff_weights), out(DNNL_ARG_DIFF_BIAS, diff_bias)});
    if (need_grad[2]) grad_inputs[2] = ctx.reorder(diff_bias, plain_desc(diff_bias.dims()));
  } else {
    ctx.execute(name, prim, pd.scratchpad_desc(), {src_arg, diff_dst_arg, out(DNNL_ARG_DIFF_WEIGHTS, diff_weights)});
  }
  if (need_grad[1]) grad_inputs[1] = ctx.reorder(diff_weights, kept_weights);
}

// The backward pass of a normalisation with a learned scale and shift
// (batch and layer normalisation share oneDNN's argument list): dx, and
// the scale's and shift's gradients handed back plain, because the
// optimiser updates the plain parameters element by element. `src` is in
// the primitive's layout; the rest is reordered to it. oneDNN 2.6 refuses to
// run a use_shift normalisation's backward primitive without a shift
// argument ("could not execute a primitive"), although no result depends on
// its values; backward does not ask the trainer to keep the shift, so when
// it is gone (`shift` empty) a zero stand-in takes its place.
template <typename BackwardPd>
void execute_normalization_backward(Context& ctx, const std::string& name, const dnnl::primitive& prim,
                                    const BackwardPd& pd, const Tensor& src, const Tensor& scale_kept,
                                    const Tensor& shift_kept, const Tensor& grad_output, const Tensor& mean_saved,
                                    const Tensor& variance_saved, std::span<const bool> need_grad,
                                    std::span<Tensor> grad_inputs) {
  const Tensor scale = ctx.reorder(scale_kept, pd.weights_desc());
  Tensor shift;
  if (shift_kept) {
    shift = ctx.reorder(shift_kept, pd.weights_desc());
  } else {
    shift = ctx.make(pd.weights_desc());
    ctx.fill(shift, 0.0f);
  }
  const Tensor diff_dst = ctx.reorder(grad_output, pd.diff_dst_desc());
  const Tensor mean = ctx.reorder(mean_saved, pd.mean_desc());
  const Tensor variance = ctx.reorder(variance_saved, pd.variance_desc());
  Tensor diff_src = ctx.make(pd.diff_src_desc());
  Tensor diff_scale = ctx.make(pd.diff_weights_desc());
  Tensor diff_shift = ctx.make(pd.diff_weights_desc());
  ctx.execute(
      name, prim, pd.scratchpad_desc(),
      {in(DNNL_ARG_SRC, src), in(DNNL_ARG_MEAN, mean), in(DNNL_ARG_VARIANCE, variance), in(DNNL_ARG_DIFF_DST, diff_dst),
       in(DNNL_ARG_SCALE, scale), in(DNNL_ARG_SHIFT, shift), out(DNNL_ARG_DIFF_SRC, diff_src),
       out(DNNL_ARG_DIFF_SCALE, diff_scale), out(DNNL_ARG_DIFF_SHIFT, diff_shift)});
  if (need_grad[0]) grad_inputs[0] = std::move(diff_src);
  if (need_grad[1]) grad_inputs[1] = ctx.reorder(diff_scale, plain_desc(diff_scale.dims()));
  if (need_grad[2]) grad_inputs[2] = ctx.reorder(diff_shift, plain_desc(diff_shift.dims()));
}

}  // namespace cachedarrays::nn::detail
