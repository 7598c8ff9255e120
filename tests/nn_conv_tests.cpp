// nn op conv: forward against a naive reference (plain and blocked inputs),
// finite-difference gradients, plain parameter gradients, the builder's
// parameters, primitive reuse, the shape-only dry run. Shape validation is
// in nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using dnnl::memory;
using test::check_close, test::count, test::tensor;

// A kernel of k x kw (kw 0: square) with padding pad on the top and the
// bottom and pw on the left and the right (pw -1: pad), as Conv2dOptions.
struct Conv2dCase {
  std::int64_t n, c, h, w, out, k, stride, pad;
  bool bias;
  std::int64_t kw = 0, pw = -1;

  [[nodiscard]] std::int64_t kernel_w() const { return kw > 0 ? kw : k; }
  [[nodiscard]] std::int64_t pad_w() const { return pw >= 0 ? pw : pad; }
};

nn::Dims x_dims(const Conv2dCase& c) { return {c.n, c.c, c.h, c.w}; }
nn::Dims w_dims(const Conv2dCase& c) { return {c.out, c.c, c.k, c.kernel_w()}; }
nn::Dims y_dims(const Conv2dCase& c) {
  return {c.n, c.out, (c.h + 2 * c.pad - c.k) / c.stride + 1, (c.w + 2 * c.pad_w() - c.kernel_w()) / c.stride + 1};
}

// The op of a one-node graph built by nn::conv2d.
nn::Op& build_conv(nn::Graph& g, const Conv2dCase& c) {
  nn::conv2d(g, "conv", g.input("x", x_dims(c)),
             {.out_channels = c.out,
              .kernel = c.k,
              .stride = c.stride,
              .padding = c.pad,
              .bias = c.bias,
              .kernel_width = c.kw,
              .padding_width = c.pw});
  return *g.nodes().back().op;
}

// Direct loops over plain NCHW / OIHW.
std::vector<float> reference_conv(const Conv2dCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& b) {
  const nn::Dims yd = y_dims(c);
  std::vector<float> y(count(yd));
  for (std::int64_t n = 0; n < c.n; ++n)
    for (std::int64_t o = 0; o < c.out; ++o)
      for (std::int64_t oh = 0; oh < yd[2]; ++oh)
        for (std::int64_t ow = 0; ow < yd[3]; ++ow) {
          double acc = c.bias ? b[static_cast<std::size_t>(o)] : 0.0;
          for (std::int64_t i = 0; i < c.c; ++i)
            for (std::int64_t kh = 0; kh < c.k; ++kh)
              for (std::int64_t kw = 0; kw < c.kernel_w(); ++kw) {
                const std::int64_t ih = oh * c.stride - c.pad + kh;
                const std::int64_t iw = ow * c.stride - c.pad_w() + kw;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                acc += static_cast<double>(x[static_cast<std::size_t>(((n * c.c + i) * c.h + ih) * c.w + iw)]) *
                       w[static_cast<std::size_t>(((o * c.c + i) * c.k + kh) * c.kernel_w() + kw)];
              }
          y[static_cast<std::size_t>(((n * c.out + o) * yd[2] + oh) * yd[3] + ow)] = static_cast<float>(acc);
        }
  return y;
}

}  // namespace

TEST_CASE("nn conv: forward matches a naive reference") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const Conv2dCase cases[] = {
      {2, 3, 6, 6, 4, 3, 1, 1, true},    // same padding, bias
      {2, 3, 6, 6, 4, 3, 2, 0, false},   // strided, no padding
      {1, 16, 5, 7, 8, 3, 2, 1, true},   // non-square image, odd output
      {2, 4, 4, 4, 16, 1, 1, 0, false},  // 1x1
      {1, 2, 3, 3, 3, 5, 1, 1, true},    // kernel larger than the image, fits with padding
  };
  for (const Conv2dCase& c : cases) {
    CAPTURE(c.c);
    CAPTURE(c.k);
    CAPTURE(c.stride);
    nn::Graph g;
    nn::Op& op = build_conv(g, c);
    CHECK(op.kind() == "conv");
    const auto x = test::random_values(count(x_dims(c)), 1);
    const auto w = test::random_values(count(w_dims(c)), 2, 0.3f);
    const auto b = test::random_values(static_cast<std::size_t>(c.out), 3);
    std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(x_dims(c)), x), tensor(ctx, nn::plain_desc(w_dims(c)), w)};
    if (c.bias) ins.push_back(tensor(ctx, nn::plain_desc({c.out}), b));
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    CHECK(outs[0].dims() == y_dims(c));
    CHECK(saved.empty());
    check_close(ctx.read(outs[0]), reference_conv(c, x, w, b));
  }
}

TEST_CASE("nn conv: a blocked input gives the same result as a plain one") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const Conv2dCase c{2, 16, 5, 5, 16, 3, 1, 1, true};
  nn::Graph g;
  nn::Op& op = build_conv(g, c);
  const auto x = test::random_values(count(x_dims(c)), 4);
  const auto w = test::random_values(count(w_dims(c)), 5, 0.2f);
  const auto b = test::random_values(16, 6);
  const std::vector<float> want = reference_conv(c, x, w, b);
  for (const auto tag :
       {memory::format_tag::nchw, memory::format_tag::nhwc, memory::format_tag::nChw16c, memory::format_tag::nChw8c}) {
    CAPTURE(static_cast<int>(tag));
    const std::vector<nn::Tensor> ins{tensor(ctx, memory::desc(x_dims(c), memory::data_type::f32, tag), x),
                                      tensor(ctx, nn::plain_desc(w_dims(c)), w), tensor(ctx, nn::plain_desc({16}), b)};
    std::vector<nn::Tensor> outs(1);
    std::vector<nn::Tensor> saved;
    op.forward(ctx, ins, outs, saved);
    check_close(ctx.read(outs[0]), want);
  }
}

TEST_CASE("nn conv: rectangular kernels match a naive reference, 1x7 and 7x1 each its own primitive") {
  // One context for all: a 1x7 and a 7x1 over the same square input have
  // the same input and output shapes, and must not share a primitive.
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const Conv2dCase cases[] = {
      {2, 16, 7, 7, 16, 1, 1, 0, false, 7, 3},  // Inception's 1x7, padding (0, 3); blocked channels
      {2, 16, 7, 7, 16, 7, 1, 3, false, 1, 0},  // its 7x1, padding (3, 0)
      {1, 3, 5, 8, 4, 1, 1, 0, true, 3, 1},     // 1x3 on a non-square image
      {1, 3, 9, 7, 5, 3, 2, 1, true, 2, 0},     // 3x2, stride 2: a different output height and width
  };
  for (const Conv2dCase& c : cases) {
    CAPTURE(c.k);
    CAPTURE(c.kw);
    CAPTURE(c.stride);
    nn::Graph g;
    nn::Op& op = build_conv(g, c);
    CHECK(g.value(g.values_with_role(nn::ValueRole::parameter).front()).dims == w_dims(c));
    const auto x = test::random_values(count(x_dims(c)), 41);
    const auto w = test::random_values(count(w_dims(c)), 42, 0.3f);
    const auto b = test::random_values(static_cast<std::size_t>(c.out), 43);
    std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(x_dims(c)), x), tensor(ctx, nn::plain_desc(w_dims(c)), w)};
    if (c.bias) ins.push_back(tensor(ctx, nn::plain_desc({c.out}), b));
    const nn::Tensor y = test::forward(ctx, op, ins);
    CHECK(y.dims() == y_dims(c));
    check_close(ctx.read(y), reference_conv(c, x, w, b));
  }
  // The reference's shapes: (9 + 2 * 1 - 3) / 2 + 1 rows, (7 - 2) / 2 + 1 columns.
  CHECK(y_dims(cases[3]) == nn::Dims{1, 5, 5, 3});
}

namespace {

void conv_gradcheck(const Conv2dCase& c) {
  CAPTURE(c.k);
  CAPTURE(c.kw);
  CAPTURE(c.stride);
  CAPTURE(c.pad);
  CAPTURE(c.bias);
  nn::Graph g;
  nn::Op& op = build_conv(g, c);
  std::vector<nn::Dims> dims{x_dims(c), w_dims(c)};
  std::vector<std::vector<float>> values{test::random_values(count(dims[0]), 10),
                                         test::random_values(count(dims[1]), 11, 0.5f)};
  if (c.bias) {
    dims.push_back({c.out});
    values.push_back(test::random_values(static_cast<std::size_t>(c.out), 12));
  }
  test::gradcheck(op, dims, values);
}

}  // namespace

TEST_CASE("nn conv: gradient check, stride 1 padding 1, with and without bias") {
  conv_gradcheck({2, 3, 6, 6, 4, 3, 1, 1, true});
  conv_gradcheck({2, 3, 6, 6, 4, 3, 1, 1, false});
}

TEST_CASE("nn conv: gradient check, stride 2 padding 0, with and without bias") {
  conv_gradcheck({2, 3, 6, 6, 4, 3, 2, 0, true});
  conv_gradcheck({2, 3, 6, 6, 4, 3, 2, 0, false});
}

TEST_CASE("nn conv: gradient check, padding on a strided non-square image") {
  conv_gradcheck({1, 2, 5, 4, 3, 2, 2, 1, true});
}

TEST_CASE("nn conv: gradient check, Inception's 1x7 with padding (0, 3) and 7x1 with padding (3, 0)") {
  // Non-square images, so that a height and width swapped anywhere shows.
  conv_gradcheck({2, 3, 5, 8, 4, 1, 1, 0, false, 7, 3});
  conv_gradcheck({2, 3, 8, 5, 4, 7, 1, 3, false, 1, 0});
}

TEST_CASE("nn conv: gradient check, Inception's 1x3 with padding (0, 1) and 3x1 with padding (1, 0)") {
  conv_gradcheck({2, 3, 4, 6, 4, 1, 1, 0, true, 3, 1});
  conv_gradcheck({2, 3, 6, 4, 4, 3, 1, 1, true, 1, 0});
}

TEST_CASE("nn conv: gradient check, a rectangular kernel with stride 2 and padding on one axis") {
  conv_gradcheck({1, 2, 7, 6, 3, 3, 2, 1, true, 2, 0});
  conv_gradcheck({1, 2, 6, 9, 3, 1, 2, 0, false, 5, 2});
}

TEST_CASE("nn conv: gradient check without the input's gradient (the first layer)") {
  const Conv2dCase c{2, 3, 6, 6, 4, 3, 1, 1, true};
  nn::Graph g;
  nn::Op& op = build_conv(g, c);
  test::GradCheckOptions o;
  o.skip_inputs = {true, false, false};
  test::gradcheck(op, {x_dims(c), w_dims(c), {4}},
                  {test::random_values(216, 13), test::random_values(108, 14, 0.5f), test::random_values(4, 15)}, o);
}

TEST_CASE("nn conv: a fused ReLU gives the values and gradients of conv then ReLU, bit for bit") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const Conv2dCase c{2, 16, 6, 6, 32, 3, 1, 1, true};  // blocked layouts, as in VGG
  nn::Graph g;
  const nn::ValueId x = g.input("x", x_dims(c));
  const nn::ValueId conv_out = nn::conv2d(g, "conv", x, {c.out, c.k, c.stride, c.pad, c.bias});
  nn::relu(g, "relu", conv_out);
  nn::conv2d(
      g, "fused", x,
      {.out_channels = c.out, .kernel = c.k, .stride = c.stride, .padding = c.pad, .bias = c.bias, .relu = true});
  nn::Op& conv = *g.nodes()[0].op;
  nn::Op& relu = *g.nodes()[1].op;
  nn::Op& fused = *g.nodes()[2].op;
  CHECK(fused.backward_reads_outputs(1) == std::vector<bool>{true});  // ReLU's gradient is taken from y
  CHECK(conv.backward_reads_outputs(1) == std::vector<bool>{false});

  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(x_dims(c)), test::random_values(count(x_dims(c)), 30)),
                                    tensor(ctx, nn::plain_desc(w_dims(c)), test::random_values(count(w_dims(c)), 31)),
                                    tensor(ctx, nn::plain_desc({32}), test::random_values(32, 32))};
  std::vector<nn::Tensor> saved;
  std::vector<nn::Tensor> pre(1);
  conv.forward(ctx, ins, pre, saved);
  std::vector<nn::Tensor> post(1);
  relu.forward(ctx, pre, post, saved);
  std::vector<nn::Tensor> y(1);
  fused.forward(ctx, ins, y, saved);
  const std::vector<float> unfused_y = ctx.read(post[0]);
  CHECK(ctx.read(y[0]) == unfused_y);
  CHECK(std::count(unfused_y.begin(), unfused_y.end(), 0.0f) > 0);  // the ReLU did cut something

  // A second handle on dy: shared, so neither backward may overwrite it.
  const nn::Tensor dy = tensor(ctx, y[0].desc(), test::random_values(count(y_dims(c)), 33));
  const std::vector<float> dy_values = ctx.read(dy);
  const std::vector<nn::Tensor> grad_outs{dy};
  const bool need[] = {true, true, true};
  std::vector<nn::Tensor> grad_pre(1);
  const bool need_x[] = {true};
  relu.backward(ctx, pre, post, grad_outs, saved, need_x, grad_pre);
  std::vector<nn::Tensor> unfused_grads(3);
  conv.backward(ctx, ins, pre, grad_pre, saved, need, unfused_grads);
  std::vector<nn::Tensor> fused_grads(3);
  fused.backward(ctx, ins, y, grad_outs, saved, need, fused_grads);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(fused_grads[i]);
    CHECK(ctx.read(fused_grads[i]) == ctx.read(unfused_grads[i]));
  }
  CHECK(ctx.read(dy) == dy_values);  // shared: left alone
  // Handed over (the only handle, as the trainer hands its gradients): ReLU's
  // gradient is taken in place over dy, with the same result.
  std::vector<nn::Tensor> own{ctx.make(dy.desc())};
  ctx.copy(dy, own[0]);
  const std::uint64_t own_id = own[0].id();
  std::vector<nn::Tensor> in_place_grads(3);
  fused.backward(ctx, ins, y, own, saved, need, in_place_grads);
  for (std::size_t i = 0; i < 3; ++i) CHECK(ctx.read(in_place_grads[i]) == ctx.read(unfused_grads[i]));
  CHECK(ctx.read(own[0]) == ctx.read(grad_pre[0]));  // dy now holds the pre-ReLU gradient
  CHECK(own[0].id() == own_id);
  // Without its output the fused backward cannot take ReLU's gradient.
  std::vector<nn::Tensor> none(1);
  std::vector<nn::Tensor> grads(3);
  CHECK_THROWS_AS(fused.backward(ctx, ins, none, grad_outs, saved, need, grads), ca::invalid_operation);
}

TEST_CASE(
    "nn conv: backward gives the weight gradient in the weights' layout and the bias gradient plain, and "
    "reads no output or bias") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const Conv2dCase c{2, 16, 6, 6, 32, 3, 1, 1, true};  // channels that make oneDNN pick blocked layouts
  nn::Graph g;
  nn::Op& op = build_conv(g, c);
  CHECK(op.backward_reads_inputs(3) == std::vector<bool>{true, true, false});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
  std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(x_dims(c)), test::random_values(count(x_dims(c)), 16)),
                              tensor(ctx, nn::plain_desc(w_dims(c)), test::random_values(count(w_dims(c)), 17)),
                              tensor(ctx, nn::plain_desc({32}), test::random_values(32, 18))};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  // The gradient arrives in a layout of its own; the op reorders it.
  const std::vector<float> r = test::random_values(count(y_dims(c)), 19);
  const std::vector<nn::Tensor> grad_outs{
      tensor(ctx, memory::desc(y_dims(c), memory::data_type::f32, memory::format_tag::nhwc), r)};
  const nn::Tensor bias_value = ins[2];
  ins[2].reset();   // backward must not need the bias
  outs[0].reset();  // nor the output
  std::vector<nn::Tensor> grads(3);
  const bool need[] = {true, true, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
  REQUIRE(grads[0]);
  CHECK(grads[0].dims() == x_dims(c));
  CHECK(grads[1].desc() == nn::plain_desc(w_dims(c)));
  CHECK(grads[2].desc() == nn::plain_desc({32}));
  // dL/dbias[o] = sum of r over n, h, w of channel o.
  std::vector<float> want(32, 0.0f);
  for (std::size_t i = 0; i < r.size(); ++i) want[(i / 36) % 32] += r[i];
  check_close(ctx.read(grads[2]), want);

  // Only the weight gradient: no input gradient is made.
  std::vector<nn::Tensor> only_weights(3);
  const bool need_weights[] = {false, true, false};
  op.backward(ctx, ins, outs, grad_outs, saved, need_weights, only_weights);
  CHECK_FALSE(only_weights[0]);
  CHECK(only_weights[1]);
  CHECK_FALSE(only_weights[2]);
  CHECK(ctx.read(only_weights[1]) == ctx.read(grads[1]));

  // Weights kept in the layout the op asks for (Op::parameter_desc, a
  // blocked one here): the gradient comes back in it, with the same values.
  const memory::desc kept = op.parameter_desc(ctx, ins, 1);
  CHECK(kept != nn::plain_desc(w_dims(c)));
  std::vector<nn::Tensor> blocked_ins = ins;
  blocked_ins[1] = ctx.reorder(ins[1], kept);
  std::vector<nn::Tensor> blocked_grads(3);
  op.backward(ctx, blocked_ins, outs, grad_outs, saved, need, blocked_grads);
  CHECK(blocked_grads[1].desc() == kept);
  CHECK(ctx.read(blocked_grads[1]) == ctx.read(grads[1]));
  blocked_ins[2] = bias_value;
  CHECK(op.parameter_desc(ctx, blocked_ins, 2) == nn::plain_desc({32}));  // the bias stays plain
}

TEST_CASE("nn conv: builder adds weight and bias parameters") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3, 8, 8});
  const nn::ValueId y = nn::conv2d(g, "conv1", x, {16, 3, 2, 1, true});
  CHECK(g.value(y).dims == nn::Dims{2, 16, 4, 4});
  CHECK(g.value(y).name == "conv1");
  const auto params = g.values_with_role(nn::ValueRole::parameter);
  REQUIRE(params.size() == 2);
  const nn::ValueInfo& w = g.value(params[0]);
  CHECK(w.name == "conv1.weight");
  CHECK(w.dims == nn::Dims{16, 3, 3, 3});
  CHECK(w.init == nn::Init::kaiming_normal);
  CHECK(w.fan_in == 27);
  const nn::ValueInfo& b = g.value(params[1]);
  CHECK(b.name == "conv1.bias");
  CHECK(b.dims == nn::Dims{16});
  CHECK(b.init == nn::Init::uniform_fan_in);
  CHECK(b.fan_in == 27);
  CHECK(g.parameter_count() == 16 * 27 + 16);
  REQUIRE(g.nodes().size() == 1);
  CHECK(g.nodes()[0].inputs == std::vector<nn::ValueId>{x, params[0], params[1]});

  // Without bias (the default): only the weight; a second conv on the output.
  const nn::ValueId z = nn::conv2d(g, "conv2", y, {8});
  CHECK(g.value(z).dims == nn::Dims{2, 8, 2, 2});
  CHECK(g.values_with_role(nn::ValueRole::parameter).size() == 3);
  CHECK(g.nodes()[1].inputs.size() == 2);
  CHECK(g.parameter_count() == 16 * 27 + 16 + 8 * 16 * 9);
}

TEST_CASE("nn conv: builder shapes a rectangular weight [out, in, height, width] with its fan-in") {
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 3, 9, 9});
  const nn::ValueId y =
      nn::conv2d(g, "row", x, {.out_channels = 16, .kernel = 1, .kernel_width = 7, .padding_width = 3});
  CHECK(g.value(y).dims == nn::Dims{2, 16, 9, 9});
  const nn::ValueId z = nn::conv2d(g, "column", y, {.out_channels = 8, .kernel = 7, .stride = 2, .kernel_width = 1});
  CHECK(g.value(z).dims == nn::Dims{2, 8, 2, 5});  // (9 - 7) / 2 + 1 rows, (9 - 1) / 2 + 1 columns
  const auto params = g.values_with_role(nn::ValueRole::parameter);
  REQUIRE(params.size() == 2);
  CHECK(g.value(params[0]).dims == nn::Dims{16, 3, 1, 7});
  CHECK(g.value(params[0]).fan_in == 3 * 7);
  CHECK(g.value(params[1]).dims == nn::Dims{8, 16, 7, 1});
  CHECK(g.value(params[1]).fan_in == 16 * 7);
  CHECK(g.parameter_count() == 16 * 3 * 7 + 8 * 16 * 7);
}

TEST_CASE("nn conv: forward and backward twice create no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const Conv2dCase c{2, 8, 6, 6, 16, 3, 1, 1, true};
  nn::Graph g;
  nn::Op& op = build_conv(g, c);
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc(x_dims(c)), test::random_values(count(x_dims(c)), 20)),
                                    tensor(ctx, nn::plain_desc(w_dims(c)), test::random_values(count(w_dims(c)), 21)),
                                    tensor(ctx, nn::plain_desc({16}), test::random_values(16, 22))};
  const std::vector<nn::Tensor> grad_outs{
      tensor(ctx, nn::plain_desc(y_dims(c)), test::random_values(count(y_dims(c)), 23))};
  const bool need[] = {true, true, true};
  std::vector<float> first;
  const auto forward = [&] { return test::forward(ctx, op, ins); };
  first = ctx.read(forward());
  const std::uint64_t after_forward = ctx.primitives_created();
  CHECK(after_forward > 0);
  CHECK(ctx.read(forward()) == first);
  CHECK(ctx.primitives_created() == after_forward);

  const auto backward = [&] { test::forward_backward(ctx, op, ins, grad_outs, need); };
  backward();
  const std::uint64_t after_backward = ctx.primitives_created();
  backward();
  CHECK(ctx.primitives_created() == after_backward);
}

TEST_CASE("nn conv: a shape-only dry run records the kernels and runs nothing") {
  nn::Context ctx(nullptr);
  const Conv2dCase c{2, 3, 6, 6, 4, 3, 2, 1, true};
  nn::Graph g;
  nn::Op& op = build_conv(g, c);
  struct Recorder : nn::KernelObserver {
    std::vector<std::string> names;
    void on_kernel(const std::string& signature, std::span<const nn::KernelArg>) override {
      names.emplace_back(ca::plan::kernel_kind(signature));
    }
  } recorder;
  ctx.set_observer(&recorder);
  const std::vector<nn::Tensor> ins{ctx.make_plain(x_dims(c)), ctx.make_plain(w_dims(c)), ctx.make_plain({4})};
  std::vector<nn::Tensor> outs(1);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  CHECK(outs[0].dims() == y_dims(c));
  CHECK(outs[0].array() == nullptr);
  CHECK(std::count(recorder.names.begin(), recorder.names.end(), "conv") == 1);
  const std::vector<nn::Tensor> grad_outs{ctx.make(outs[0].desc())};
  std::vector<nn::Tensor> grads(3);
  const bool need[] = {true, true, true};
  op.backward(ctx, ins, outs, grad_outs, saved, need, grads);
  CHECK(grads[0].dims() == x_dims(c));
  CHECK(grads[1].desc() == nn::plain_desc(w_dims(c)));
  CHECK(std::count(recorder.names.begin(), recorder.names.end(), "conv_backward_data") == 1);
  CHECK(std::count(recorder.names.begin(), recorder.names.end(), "conv_backward_weights") == 1);
}
