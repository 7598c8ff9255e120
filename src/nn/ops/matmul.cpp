// Batched matrix product y = scale * a op(b) over the last two axes, the
// leading ones (at most three) a batch of equal dims in a, b and y: a
// transformer's attention scores q k^T / sqrt(d) and their product with the
// values, as torch.matmul. All three tensors are plain row-major.
//
// Transposes are never copies: op(b) = b^T is b read through a descriptor
// that swaps the strides of its last two axes (KernelArg::view), and so are
// the transposes the gradients take,
//
//   da = scale * dy op(b)^T,
//   db = scale * a^T dy             (y = a b),
//   db = scale * dy^T a             (y = a b^T, so db is [N, K] as b is),
//
// each one more matmul primitive; oneDNN's GEMM-based matmul reads either
// operand transposed at no extra cost. `scale` is the primitive's output
// scale, so no element-wise kernel of its own runs. Backward reads a and b,
// never y.
#include <algorithm>
#include <bit>
#include <cmath>
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

using MatmulPd = dnnl::matmul::primitive_desc;

// The dims with the last two axes swapped.
Dims swap_last(Dims d) {
  std::swap(d[d.size() - 2], d[d.size() - 1]);
  return d;
}

// A plain row-major tensor of dims `stored`, seen transposed: dims and
// strides of the last two axes swapped, the storage untouched.
dnnl::memory::desc transposed_view(const Dims& stored) {
  Dims strides(stored.size());
  std::int64_t stride = 1;
  for (std::size_t i = stored.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= stored[i];
  }
  return {swap_last(stored), dnnl::memory::data_type::f32, swap_last(strides)};
}

class Matmul final : public Op {
 public:
  Matmul(std::string name, bool transpose_b, float scale)
      : name_(std::move(name)), transpose_b_(transpose_b), scale_(scale) {
    if (!std::isfinite(scale_)) {
      throw invalid_argument("cachedarrays::nn: " + where() + " has scale " + std::to_string(scale_) +
                             "; it needs a finite one");
    }
  }

  [[nodiscard]] std::string kind() const override { return "matmul"; }

  [[nodiscard]] std::vector<Dims> output_dims(std::span<const Dims> inputs) const override {
    detail::check_input_count(where(), inputs, 2, "a, b");
    const Dims& a = inputs[0];
    const Dims& b = inputs[1];
    const std::string b_shape = transpose_b_ ? "[B..., N, K] (transpose_b)" : "[B..., K, N]";
    if (a.size() < 2 || a.size() > 5 || b.size() != a.size()) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs a [B..., M, K] and b " + b_shape +
                             " of one rank from 2 to 5, got a " + to_string(a) + " and b " + to_string(b));
    }
    const std::size_t r = a.size();
    if (!std::equal(a.begin(), a.end() - 2, b.begin())) {
      throw invalid_argument("cachedarrays::nn: " + where() + " needs a and b of equal batch dims, got a " +
                             to_string(a) + " and b " + to_string(b));
    }
    const std::int64_t b_k = transpose_b_ ? b[r - 1] : b[r - 2];
    if (a[r - 1] != b_k) {
      throw invalid_argument("cachedarrays::nn: " + where() + ": a " + to_string(a) +
                             " has K = " + std::to_string(a[r - 1]) + " but b " + b_shape + " " + to_string(b) +
                             " has K = " + std::to_string(b_k));
    }
    Dims y = a;
    y[r - 1] = transpose_b_ ? b[r - 2] : b[r - 1];
    return {y};
  }

  [[nodiscard]] std::vector<bool> backward_reads_inputs(std::size_t) const override { return {true, true}; }
  [[nodiscard]] std::vector<bool> backward_reads_outputs(std::size_t) const override { return {false}; }

  void forward(Context& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs, std::vector<Tensor>&) override {
    const Tensor a = ctx.reorder(inputs[0], plain_desc(inputs[0].dims()));
    const Tensor b = ctx.reorder(inputs[1], plain_desc(inputs[1].dims()));
    const dnnl::memory::desc b_view = transpose_b_ ? transposed_view(b.dims()) : b.desc();
    outputs[0] = product(ctx, "matmul", a, a.desc(), b, b_view);
  }

  void backward(Context& ctx, std::span<const Tensor> inputs, std::span<const Tensor>,
                std::span<const Tensor> grad_outputs, std::vector<Tensor>&, std::span<const bool> need_grad,
                std::span<Tensor> grad_inputs) override {
    if (!inputs[0] || !inputs[1]) {
      throw invalid_operation("cachedarrays::nn: backward of " + where() + " needs both its forward inputs");
    }
    const Tensor a = ctx.reorder(inputs[0], plain_desc(inputs[0].dims()));
    const Tensor b = ctx.reorder(inputs[1], plain_desc(inputs[1].dims()));
    const Tensor dy = ctx.reorder(grad_outputs[0], plain_desc(grad_outputs[0].dims()));
    if (need_grad[0]) {
      // da [M, K] = dy [M, N] op(b)^T [N, K]: b itself when transposed.
      const dnnl::memory::desc b_view = transpose_b_ ? b.desc() : transposed_view(b.dims());
      grad_inputs[0] = product(ctx, "matmul_backward_a", dy, dy.desc(), b, b_view);
    }
    if (need_grad[1]) {
      grad_inputs[1] = transpose_b_
                           // db [N, K] = dy^T [N, M] a [M, K]
                           ? product(ctx, "matmul_backward_b", dy, transposed_view(dy.dims()), a, a.desc())
                           // db [K, N] = a^T [K, M] dy [M, N]
                           : product(ctx, "matmul_backward_b", a, transposed_view(a.dims()), dy, dy.desc());
    }
  }

 private:
  // scale * src weights as one matmul kernel `kind`, each operand read
  // through its view; the result is a new plain tensor.
  Tensor product(Context& ctx, const std::string& kind, const Tensor& src, const dnnl::memory::desc& src_view,
                 const Tensor& weights, const dnnl::memory::desc& weights_view) const {
    const Dims src_dims = src_view.dims();
    Dims dst_dims = src_dims;
    dst_dims.back() = weights_view.dims().back();
    const dnnl::memory::desc dst_desc = plain_desc(dst_dims);
    const std::string key = "matmul:" + key_of(src_view) + key_of(weights_view) + key_of(dst_desc) + ":" +
                            std::to_string(std::bit_cast<std::uint32_t>(scale_));
    auto [pd, prim] = ctx.cached<MatmulPd, dnnl::matmul>(key, [&] {
      const dnnl::matmul::desc d(src_view, weights_view, dst_desc);
      return MatmulPd(d, attr(ctx), ctx.engine());
    });
    Tensor dst = ctx.make(dst_desc);
    // "bt": b read transposed, which a profile tells apart from b of the
    // same dims read as it lies.
    ctx.execute(transpose_b_ ? kind + " bt" : kind, *prim, pd->scratchpad_desc(),
                {in(DNNL_ARG_SRC, src, src_view), in(DNNL_ARG_WEIGHTS, weights, weights_view), out(DNNL_ARG_DST, dst)});
    return dst;
  }

  // The context's attributes (a user-mode scratchpad) and, unless it is 1,
  // the scale as output scale: a new attribute object, since copies of
  // primitive_attr share one and the context's must stay as it is.
  [[nodiscard]] dnnl::primitive_attr attr(const Context& ctx) const {
    if (scale_ == 1.0f) return ctx.attr();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(0, {scale_});
    return attr;
  }

  [[nodiscard]] std::string where() const { return "matmul '" + name_ + "'"; }

  std::string name_;
  bool transpose_b_;
  float scale_;
};

}  // namespace

ValueId matmul(Graph& g, const std::string& name, ValueId a, ValueId b, bool transpose_b, float scale) {
  return g.add1(name, std::make_unique<Matmul>(name, transpose_b, scale), {a, b});
}

}  // namespace cachedarrays::nn
