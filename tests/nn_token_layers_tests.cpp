// The transformer's token layers that move data rather than compute
// (split_heads, merge_heads, patch_tokens, position_embedding,
// select_token): forward against naive loops over plain row-major arrays
// (patch_tokens also from blocked feature maps), the round trip of
// split_heads and merge_heads, finite-difference gradients of every input,
// repeatable forward passes, and the refusals of bad shapes with messages
// naming the layer.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/nn/transformer_layers.hpp"
#include "nn_gradcheck.hpp"
#include "nn_test_support.hpp"
#include "test_support.hpp"

namespace {

namespace nn = cachedarrays::nn;
using test::count, test::tensor;

// One forward pass of `op` into `outputs` fresh outputs.
std::vector<nn::Tensor> run_forward(nn::Context& ctx, nn::Op& op, const std::vector<nn::Tensor>& ins,
                                    std::size_t outputs = 1) {
  std::vector<nn::Tensor> outs(outputs);
  std::vector<nn::Tensor> saved;
  op.forward(ctx, ins, outs, saved);
  return outs;
}

// One backward pass of `op` (every input's gradient asked for unless `need`
// says otherwise); backward reads no forward tensor in these ops, so none is
// handed over.
std::vector<nn::Tensor> run_backward(nn::Context& ctx, nn::Op& op, std::size_t inputs, std::size_t outputs,
                                     const std::vector<nn::Tensor>& grad_outs, std::vector<bool> need = {}) {
  if (need.empty()) need.assign(inputs, true);
  std::unique_ptr<bool[]> flags(new bool[inputs]);
  for (std::size_t i = 0; i < inputs; ++i) flags[i] = need[i];
  const std::vector<nn::Tensor> ins(inputs), outs(outputs);
  std::vector<nn::Tensor> saved;
  std::vector<nn::Tensor> grads(inputs);
  op.backward(ctx, ins, outs, grad_outs, saved, std::span<const bool>(flags.get(), inputs), grads);
  return grads;
}

// timm's qkv.reshape(N, T, 3, H, Dh).permute(2, 0, 3, 1, 4)[s], by loops.
std::vector<float> reference_head_slice(const std::vector<float>& qkv, std::int64_t n, std::int64_t t, std::int64_t d,
                                        std::int64_t heads, std::int64_t s) {
  const std::int64_t dh = d / heads;
  std::vector<float> y;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t h = 0; h < heads; ++h) {
      for (std::int64_t j = 0; j < t; ++j) {
        for (std::int64_t e = 0; e < dh; ++e) {
          y.push_back(qkv[static_cast<std::size_t>((i * t + j) * 3 * d + s * d + h * dh + e)]);
        }
      }
    }
  }
  return y;
}

// timm's x.transpose(1, 2).reshape(N, T, H Dh), by loops.
std::vector<float> reference_merge(const std::vector<float>& x, const nn::Dims& dims) {
  const std::int64_t n = dims[0], heads = dims[1], t = dims[2], dh = dims[3];
  std::vector<float> y;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < t; ++j) {
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t e = 0; e < dh; ++e) {
          y.push_back(x[static_cast<std::size_t>(((i * heads + h) * t + j) * dh + e)]);
        }
      }
    }
  }
  return y;
}

// timm's patch tokens: x.flatten(2).transpose(1, 2), after the class token
// when `cls` is not empty, by loops over a plain [N, D, h, w].
std::vector<float> reference_patch_tokens(const std::vector<float>& x, const nn::Dims& dims,
                                          const std::vector<float>& cls) {
  const std::int64_t n = dims[0], d = dims[1], hw = dims[2] * dims[3];
  std::vector<float> y;
  for (std::int64_t i = 0; i < n; ++i) {
    y.insert(y.end(), cls.begin(), cls.end());
    for (std::int64_t p = 0; p < hw; ++p) {
      for (std::int64_t c = 0; c < d; ++c) y.push_back(x[static_cast<std::size_t>((i * d + c) * hw + p)]);
    }
  }
  return y;
}

// The only node of `g` (the layer under test).
nn::Op& only_op(nn::Graph& g) { return *g.nodes().back().op; }

}  // namespace

TEST_CASE("nn token layers: split_heads forward matches timm's reshape and permute") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::int64_t n = 2, t = 3, d = 8, heads = 2;
  nn::Graph g;
  const auto qkv = nn::split_heads(g, "blocks.0.attn.split_heads", g.input("qkv", {n, t, 3 * d}), heads);
  for (nn::ValueId v : qkv) CHECK(g.value(v).dims == nn::Dims{n, heads, t, d / heads});
  nn::Op& op = only_op(g);
  CHECK(op.kind() == "split_heads");
  CHECK(op.backward_reads_inputs(1) == std::vector<bool>{false});
  CHECK(op.backward_reads_outputs(3) == std::vector<bool>{false, false, false});
  const std::vector<float> values = test::random_values(count({n, t, 3 * d}), 51);
  const std::vector<nn::Tensor> outs = run_forward(ctx, op, {tensor(ctx, nn::plain_desc({n, t, 3 * d}), values)}, 3);
  for (std::int64_t s = 0; s < 3; ++s) {
    CAPTURE(s);
    CHECK(outs[static_cast<std::size_t>(s)].desc() == nn::plain_desc({n, heads, t, d / heads}));
    CHECK(ctx.read(outs[static_cast<std::size_t>(s)]) == reference_head_slice(values, n, t, d, heads, s));
  }
}

TEST_CASE("nn token layers: split_heads backward writes all of dqkv from dq, dk and dv") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::int64_t n = 2, t = 5, d = 12, heads = 3;
  nn::Graph g;
  nn::split_heads(g, "attn", g.input("qkv", {n, t, 3 * d}), heads);
  nn::Op& op = only_op(g);
  // dqkv is a permutation of (dq, dk, dv): split_heads of it gives them back.
  const nn::Dims head{n, heads, t, d / heads};
  std::vector<nn::Tensor> grad_outs;
  std::vector<std::vector<float>> r;
  for (std::uint64_t s = 0; s < 3; ++s) {
    r.push_back(test::random_values(count(head), 52 + s));
    // dk comes [N, T, H, Dh] in memory (a matmul may pick such a layout):
    // each gradient is read in its own.
    const dnnl::memory::desc layout =
        s == 1 ? dnnl::memory::desc(head, dnnl::memory::data_type::f32, dnnl::memory::format_tag::acbd)
               : nn::plain_desc(head);
    grad_outs.push_back(tensor(ctx, layout, r.back()));
  }
  const std::vector<nn::Tensor> grads = run_backward(ctx, op, 1, 3, grad_outs);
  REQUIRE(grads[0].dims() == nn::Dims{n, t, 3 * d});
  const std::vector<float> dqkv = ctx.read(grads[0]);
  for (std::int64_t s = 0; s < 3; ++s) {
    CHECK(reference_head_slice(dqkv, n, t, d, heads, s) == r[static_cast<std::size_t>(s)]);
  }
}

TEST_CASE("nn token layers: merge_heads forward matches a transpose and undoes split_heads") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::int64_t n = 2, t = 4, d = 6, heads = 3;
  nn::Graph g;
  const auto qkv = nn::split_heads(g, "attn.split_heads", g.input("qkv", {n, t, 3 * d}), heads);
  const nn::ValueId merged = nn::merge_heads(g, "attn.merge_heads", qkv[1]);
  CHECK(g.value(merged).dims == nn::Dims{n, t, d});
  nn::Op& split = *g.nodes()[0].op;
  nn::Op& merge = *g.nodes()[1].op;
  CHECK(merge.kind() == "merge_heads");
  CHECK(merge.backward_reads_inputs(1) == std::vector<bool>{false});
  CHECK(merge.backward_reads_outputs(1) == std::vector<bool>{false});

  // Against loops, from a plain input.
  const nn::Dims head{n, heads, t, d / heads};
  const std::vector<float> x = test::random_values(count(head), 55);
  const std::vector<nn::Tensor> y = run_forward(ctx, merge, {tensor(ctx, nn::plain_desc(head), x)});
  CHECK(y[0].desc() == nn::plain_desc({n, t, d}));
  CHECK(ctx.read(y[0]) == reference_merge(x, head));
  // From an input in any layout, here [N, T, H, Dh] in memory.
  const dnnl::memory::desc transposed(head, dnnl::memory::data_type::f32, dnnl::memory::format_tag::acbd);
  CHECK(ctx.read(run_forward(ctx, merge, {tensor(ctx, transposed, x)})[0]) == reference_merge(x, head));

  // merge_heads(split_heads(qkv)[s]) is qkv's columns s D to (s + 1) D.
  const std::vector<float> values = test::random_values(count({n, t, 3 * d}), 56);
  const std::vector<nn::Tensor> heads_out =
      run_forward(ctx, split, {tensor(ctx, nn::plain_desc({n, t, 3 * d}), values)}, 3);
  for (std::size_t s = 0; s < 3; ++s) {
    CAPTURE(s);
    std::vector<float> want;
    for (std::int64_t row = 0; row < n * t; ++row) {
      const auto at = values.begin() + row * 3 * d + static_cast<std::int64_t>(s) * d;
      want.insert(want.end(), at, at + d);
    }
    CHECK(ctx.read(run_forward(ctx, merge, {heads_out[s]})[0]) == want);
  }
}

TEST_CASE("nn token layers: merge_heads backward is the inverse permutation") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims head{2, 2, 3, 4};
  nn::Graph g;
  nn::merge_heads(g, "m", g.input("x", head));
  nn::Op& op = only_op(g);
  const std::vector<float> x = test::random_values(count(head), 57);
  const nn::Tensor y = run_forward(ctx, op, {tensor(ctx, nn::plain_desc(head), x)})[0];
  // The gradient of y = merge(x) with dy = merge(x) is x itself.
  const std::vector<nn::Tensor> grads = run_backward(ctx, op, 1, 1, {y});
  CHECK(grads[0].dims() == head);
  CHECK(ctx.read(grads[0]) == x);
}

TEST_CASE("nn token layers: gradient check of split_heads and merge_heads") {
  SUBCASE("split_heads") {
    nn::Graph g;
    nn::split_heads(g, "attn", g.input("qkv", {2, 3, 12}), 2);
    test::gradcheck(only_op(g), {{2, 3, 12}}, {test::random_values(72, 58)});
  }
  SUBCASE("merge_heads") {
    nn::Graph g;
    nn::merge_heads(g, "attn", g.input("x", {2, 3, 2, 4}));
    test::gradcheck(only_op(g), {{2, 3, 2, 4}}, {test::random_values(48, 59)});
  }
}

TEST_CASE("nn token layers: patch_tokens forward from plain and blocked feature maps") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  // 5 channels pad nChw16c's block; 16 fill it.
  for (const std::int64_t d : {std::int64_t{5}, std::int64_t{16}}) {
    const nn::Dims dims{2, d, 3, 2};
    const std::vector<float> x = test::random_values(count(dims), 60);
    const std::vector<float> cls = test::random_values(static_cast<std::size_t>(d), 61);
    for (const bool with_cls : {false, true}) {
      nn::Graph g;
      const nn::ValueId xv = g.input("x", dims);
      const nn::ValueId y =
          with_cls ? nn::patch_tokens(g, "patch_embed", xv, g.parameter("cls_token", {1, 1, d}, nn::Init::zeros))
                   : nn::patch_tokens(g, "patch_embed", xv);
      CHECK(g.value(y).dims == nn::Dims{2, (with_cls ? 1 : 0) + 6, d});
      nn::Op& op = only_op(g);
      CHECK(op.kind() == "patch_tokens");
      CHECK(op.backward_reads_inputs(with_cls ? 2 : 1) == std::vector<bool>(with_cls ? 2 : 1, false));
      CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
      const std::vector<float> want = reference_patch_tokens(x, dims, with_cls ? cls : std::vector<float>{});
      for (const dnnl::memory::desc& layout :
           {nn::plain_desc(dims), test::blocked(dims),
            dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc)}) {
        CAPTURE(d);
        CAPTURE(with_cls);
        std::vector<nn::Tensor> ins{tensor(ctx, layout, x)};
        if (with_cls) ins.push_back(tensor(ctx, nn::plain_desc({1, 1, d}), cls));
        const nn::Tensor out = run_forward(ctx, op, ins)[0];
        CHECK(out.desc() == nn::plain_desc(g.value(y).dims));
        CHECK(ctx.read(out) == want);
      }
    }
  }
}

TEST_CASE("nn token layers: patch_tokens backward hands back dx and the class token's batch sum") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const nn::Dims dims{3, 4, 2, 2};
  nn::Graph g;
  const nn::ValueId cls = g.parameter("cls_token", {1, 1, 4}, nn::Init::zeros);
  CHECK(g.value(cls).weight_decay);  // rank 3: decays unless excluded
  nn::patch_tokens(g, "patch_embed", g.input("x", dims), cls);
  CHECK_FALSE(g.value(cls).weight_decay);  // timm keeps cls_token out of weight decay
  nn::Op& op = only_op(g);
  (void)run_forward(ctx, op,
                    {tensor(ctx, test::blocked(dims), test::random_values(count(dims), 62)),
                     tensor(ctx, nn::plain_desc({1, 1, 4}), test::random_values(4, 63))});
  const nn::Dims y_dims{3, 5, 4};
  const std::vector<float> r = test::random_values(count(y_dims), 64);
  const std::vector<nn::Tensor> grads = run_backward(ctx, op, 2, 1, {tensor(ctx, nn::plain_desc(y_dims), r)});
  REQUIRE(grads[0].dims() == dims);
  REQUIRE(grads[1].dims() == nn::Dims{1, 1, 4});
  // dx in plain nchw: dx[i, c, p] = dy[i, 1 + p, c].
  std::vector<float> want_dx;
  for (std::int64_t i = 0; i < 3; ++i) {
    for (std::int64_t c = 0; c < 4; ++c) {
      for (std::int64_t p = 0; p < 4; ++p) want_dx.push_back(r[static_cast<std::size_t>((i * 5 + 1 + p) * 4 + c)]);
    }
  }
  CHECK(ctx.read(grads[0]) == want_dx);
  std::vector<float> want_cls(4, 0.0f);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t c = 0; c < 4; ++c) want_cls[c] += r[i * 20 + c];
  }
  test::check_close(ctx.read(grads[1]), want_cls, 1e-6f);

  // Only the class token's gradient.
  const std::vector<nn::Tensor> only_cls =
      run_backward(ctx, op, 2, 1, {tensor(ctx, nn::plain_desc(y_dims), r)}, {false, true});
  CHECK_FALSE(only_cls[0]);
  test::check_close(ctx.read(only_cls[1]), want_cls, 1e-6f);
}

TEST_CASE("nn token layers: gradient check of patch_tokens") {
  const nn::Dims dims{2, 3, 2, 3};
  SUBCASE("without a class token") {
    nn::Graph g;
    nn::patch_tokens(g, "patch_embed", g.input("x", dims));
    test::gradcheck(only_op(g), {dims}, {test::random_values(count(dims), 65)});
  }
  SUBCASE("with a class token") {
    nn::Graph g;
    nn::patch_tokens(g, "patch_embed", g.input("x", dims), g.parameter("cls_token", {1, 1, 3}, nn::Init::zeros));
    test::gradcheck(only_op(g), {dims, {1, 1, 3}}, {test::random_values(count(dims), 66), test::random_values(3, 67)});
  }
}

TEST_CASE("nn token layers: position_embedding adds a learned embedding kept out of weight decay") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::int64_t n = 3, t = 4, d = 5;
  nn::Graph g;
  const nn::ValueId y = nn::position_embedding(g, "pos_embed", g.input("x", {n, t, d}));
  CHECK(g.value(y).dims == nn::Dims{n, t, d});
  const std::vector<nn::ValueId> params = g.values_with_role(nn::ValueRole::parameter);
  REQUIRE(params.size() == 1);
  const nn::ValueInfo& e = g.value(params[0]);
  CHECK(e.name == "pos_embed");
  CHECK(e.dims == nn::Dims{1, t, d});
  CHECK(e.init == nn::Init::small_normal);
  CHECK_FALSE(e.weight_decay);
  nn::Op& op = only_op(g);
  CHECK(op.kind() == "position_embedding");
  CHECK(op.backward_reads_inputs(2) == std::vector<bool>{false, false});
  CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});

  const std::vector<float> x = test::random_values(count({n, t, d}), 68);
  const std::vector<float> emb = test::random_values(count({1, t, d}), 69);
  std::vector<float> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] + emb[i % emb.size()];
  const std::vector<nn::Tensor> ins{tensor(ctx, nn::plain_desc({n, t, d}), x),
                                    tensor(ctx, nn::plain_desc({1, t, d}), emb)};
  const nn::Tensor out = run_forward(ctx, op, ins)[0];
  CHECK(ctx.read(out) == want);
  CHECK(ctx.read(ins[0]) == x);  // not offered in place: x is left alone

  // In place over x when the trainer offers it.
  std::vector<nn::Tensor> outs{ins[0]};
  std::vector<nn::Tensor> saved;
  CHECK(op.in_place_input() == 0);
  op.forward(ctx, ins, outs, saved);
  CHECK(outs[0].id() == ins[0].id());
  CHECK(ctx.read(outs[0]) == want);
}

TEST_CASE("nn token layers: position_embedding backward hands dy to x and sums it over the batch for E") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{3}}) {
    CAPTURE(n);
    const std::int64_t t = 2, d = 3;
    nn::Graph g;
    nn::position_embedding(g, "pos_embed", g.input("x", {n, t, d}));
    nn::Op& op = only_op(g);
    const std::vector<float> r = test::random_values(count({n, t, d}), 70);
    const nn::Tensor dy = tensor(ctx, nn::plain_desc({n, t, d}), r);
    const std::vector<nn::Tensor> grads = run_backward(ctx, op, 2, 1, {dy});
    CHECK(grads[0].id() == dy.id());  // dx = dy, no copy
    REQUIRE(grads[1].dims() == nn::Dims{1, t, d});
    CHECK(grads[1].id() != dy.id());
    std::vector<float> want(static_cast<std::size_t>(t * d), 0.0f);
    for (std::size_t i = 0; i < r.size(); ++i) want[i % want.size()] += r[i];
    test::check_close(ctx.read(grads[1]), want, 1e-6f);
  }
}

TEST_CASE("nn token layers: gradient check of position_embedding") {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{2}}) {
    CAPTURE(n);
    nn::Graph g;
    nn::position_embedding(g, "pos_embed", g.input("x", {n, 3, 4}));
    test::gradcheck(only_op(g), {{n, 3, 4}, {1, 3, 4}},
                    {test::random_values(count({n, 3, 4}), 71), test::random_values(12, 72)});
  }
}

TEST_CASE("nn token layers: select_token picks one token and scatters its gradient into zeros") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  const std::int64_t n = 2, t = 4, d = 3;
  for (const std::int64_t index : {std::int64_t{0}, std::int64_t{2}}) {
    CAPTURE(index);
    nn::Graph g;
    const nn::ValueId y = nn::select_token(g, "head_token", g.input("x", {n, t, d}), index);
    CHECK(g.value(y).dims == nn::Dims{n, d});
    nn::Op& op = only_op(g);
    CHECK(op.kind() == "select_token");
    CHECK(op.backward_reads_inputs(1) == std::vector<bool>{false});
    CHECK(op.backward_reads_outputs(1) == std::vector<bool>{false});
    const std::vector<float> x = test::random_values(count({n, t, d}), 73);
    std::vector<float> want;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto at = x.begin() + (i * t + index) * d;
      want.insert(want.end(), at, at + d);
    }
    CHECK(ctx.read(run_forward(ctx, op, {tensor(ctx, nn::plain_desc({n, t, d}), x)})[0]) == want);

    const std::vector<float> r = test::random_values(count({n, d}), 74);
    const std::vector<nn::Tensor> grads = run_backward(ctx, op, 1, 1, {tensor(ctx, nn::plain_desc({n, d}), r)});
    std::vector<float> want_dx(x.size(), 0.0f);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < d; ++c) {
        want_dx[static_cast<std::size_t>((i * t + index) * d + c)] = r[static_cast<std::size_t>(i * d + c)];
      }
    }
    CHECK(ctx.read(grads[0]) == want_dx);
  }
}

TEST_CASE("nn token layers: gradient check of select_token") {
  nn::Graph g;
  nn::select_token(g, "head_token", g.input("x", {2, 3, 4}), 1);
  test::gradcheck(only_op(g), {{2, 3, 4}}, {test::random_values(24, 75)});
}

TEST_CASE("nn token layers: forward twice gives the same values and makes no new primitives") {
  auto rt = test::gradcheck_runtime();
  nn::Context ctx(&rt);
  nn::Graph g;
  const nn::ValueId x = g.input("x", {2, 16, 2, 2});
  const nn::ValueId cls = g.parameter("cls_token", {1, 1, 16}, nn::Init::zeros);
  const nn::ValueId tokens = nn::patch_tokens(g, "patch_embed", x, cls);
  nn::position_embedding(g, "pos_embed", tokens);
  nn::Graph h;
  nn::split_heads(h, "attn.split_heads", h.input("qkv", {2, 5, 48}), 2);
  nn::merge_heads(h, "attn.merge_heads", h.input("o", {2, 2, 5, 8}));
  nn::select_token(h, "head_token", h.input("y", {2, 5, 16}));

  const std::vector<std::pair<nn::Op*, std::vector<nn::Tensor>>> cases{
      {g.nodes()[0].op.get(),
       {tensor(ctx, test::blocked({2, 16, 2, 2}), test::random_values(128, 76)),
        tensor(ctx, nn::plain_desc({1, 1, 16}), test::random_values(16, 77))}},
      {g.nodes()[1].op.get(),
       {tensor(ctx, nn::plain_desc({2, 5, 16}), test::random_values(160, 78)),
        tensor(ctx, nn::plain_desc({1, 5, 16}), test::random_values(80, 79))}},
      {h.nodes()[0].op.get(), {tensor(ctx, nn::plain_desc({2, 5, 48}), test::random_values(480, 80))}},
      {h.nodes()[1].op.get(), {tensor(ctx, nn::plain_desc({2, 2, 5, 8}), test::random_values(160, 81))}},
      {h.nodes()[2].op.get(), {tensor(ctx, nn::plain_desc({2, 5, 16}), test::random_values(160, 82))}},
  };
  for (const auto& c : cases) {
    nn::Op* op = c.first;  // not a structured binding: Clang 14 cannot capture one
    const std::vector<nn::Tensor>& ins = c.second;
    CAPTURE(op->kind());
    const std::size_t outputs = op->kind() == "split_heads" ? 3 : 1;
    const std::vector<nn::Tensor> first = run_forward(ctx, *op, ins, outputs);
    const std::uint64_t created = ctx.primitives_created();
    const std::vector<nn::Tensor> second = run_forward(ctx, *op, ins, outputs);
    CHECK(ctx.primitives_created() == created);
    for (std::size_t j = 0; j < outputs; ++j) CHECK(ctx.read(first[j]) == ctx.read(second[j]));
  }
}

TEST_CASE("nn token layers: refusals name the layer and the shapes") {
  using test::check_contains, test::invalid_argument_of;
  nn::Graph g;
  SUBCASE("split_heads") {
    const std::string not_qkv = invalid_argument_of([&] {
      nn::split_heads(g, "blocks.0.attn", g.input("qkv", {2, 3, 7}), 1);
    });
    check_contains(not_qkv, "split_heads 'blocks.0.attn' needs");
    check_contains(not_qkv, "[2, 3, 7]");
    check_contains(invalid_argument_of([&] { nn::split_heads(g, "a", g.input("flat", {2, 24}), 2); }), "[2, 24]");
    const std::string heads = invalid_argument_of([&] {
      nn::split_heads(g, "blocks.1.attn", g.input("x", {2, 3, 24}), 3);
    });
    check_contains(heads, "split_heads 'blocks.1.attn'");
    check_contains(heads, "D = 8");
    check_contains(heads, "not divisible by 3 heads");
    check_contains(invalid_argument_of([&] {
                     nn::split_heads(g, "a", g.input("y", {2, 3, 24}), 0);
                   }),
                   "needs at least 1 head, got 0");
    CHECK(g.nodes().empty());
  }
  SUBCASE("merge_heads") {
    const std::string rank = invalid_argument_of([&] { nn::merge_heads(g, "attn", g.input("x", {2, 3, 4})); });
    check_contains(rank, "merge_heads 'attn' needs");
    check_contains(rank, "[2, 3, 4]");
  }
  SUBCASE("patch_tokens") {
    const std::string rank = invalid_argument_of([&] { nn::patch_tokens(g, "patch_embed", g.input("x", {2, 8, 4})); });
    check_contains(rank, "patch_tokens 'patch_embed' needs a feature map");
    check_contains(rank, "[2, 8, 4]");
    const nn::ValueId cls = g.parameter("cls_token", {1, 1, 7}, nn::Init::zeros);
    const std::string token = invalid_argument_of([&] {
      nn::patch_tokens(g, "patch_embed", g.input("y", {2, 8, 2, 2}), cls);
    });
    check_contains(token, "patch_tokens 'patch_embed': the class token has shape [1, 1, 7]");
    check_contains(token, "needs [1, 1, 8]");
    CHECK(g.value(cls).weight_decay);  // a refused layer changes nothing
  }
  SUBCASE("position_embedding") {
    const std::string rank = invalid_argument_of([&] { nn::position_embedding(g, "pos_embed", g.input("x", {2, 8})); });
    check_contains(rank, "position_embedding 'pos_embed' needs tokens");
    check_contains(rank, "[2, 8]");
    CHECK(g.values_with_role(nn::ValueRole::parameter).empty());  // refused before its parameter
    nn::position_embedding(g, "pos_embed", g.input("y", {2, 5, 8}));
    const nn::Op& op = only_op(g);
    const std::string emb = invalid_argument_of([&] {
      (void)op.output_dims(std::vector<nn::Dims>{{2, 5, 8}, {1, 4, 8}});
    });
    check_contains(emb, "the embedding has shape [1, 4, 8]");
    check_contains(emb, "need [1, 5, 8]");
    check_contains(invalid_argument_of([&] {
                     (void)op.output_dims(std::vector<nn::Dims>{{2, 5, 8}});
                   }),
                   "takes 2 inputs");
  }
  SUBCASE("select_token") {
    const std::string range = invalid_argument_of([&] {
      nn::select_token(g, "head_token", g.input("x", {2, 5, 8}), 5);
    });
    check_contains(range, "select_token 'head_token': token index 5 is out of range");
    check_contains(range, "[2, 5, 8]");
    check_contains(invalid_argument_of([&] {
                     nn::select_token(g, "t", g.input("y", {2, 5, 8}), -1);
                   }),
                   "select_token 't' needs a token index of at least 0, got -1");
    check_contains(invalid_argument_of([&] { nn::select_token(g, "t", g.input("z", {2, 8})); }), "[2, 8]");
  }
}

namespace {

// The kinds of the kernels a context runs, in order (the first word of each
// signature, as traces record them).
struct KindRecorder final : nn::KernelObserver {
  void on_kernel(const std::string& signature, std::span<const nn::KernelArg>) override {
    kinds.push_back(signature.substr(0, signature.find(' ')));
  }
  std::vector<std::string> kinds;
};

}  // namespace

TEST_CASE("nn token layers: a shape-only pass runs every op and names its kernels after it") {
  // The trainer's first walk is shape-only (Context::ShapeOnly): no storage,
  // no kernel body, only descriptors and the kernels' signatures.
  nn::Context ctx(nullptr);
  KindRecorder recorder;
  ctx.set_observer(&recorder);
  nn::Graph g;
  const nn::ValueId cls = g.parameter("cls_token", {1, 1, 8}, nn::Init::zeros);
  const nn::ValueId tokens = nn::patch_tokens(g, "patch_embed", g.input("x", {2, 8, 2, 2}), cls);
  const nn::ValueId pos = nn::position_embedding(g, "pos_embed", tokens);
  const nn::ValueId qkv = g.input("qkv", {2, 5, 24});
  const auto heads = nn::split_heads(g, "attn.split_heads", qkv, 2);
  nn::merge_heads(g, "attn.merge_heads", heads[0]);
  nn::select_token(g, "head_token", pos);
  const std::vector<std::vector<std::string>> want{
      {"patch_tokens", "patch_tokens_backward"}, {"position_embedding", "position_embedding_backward"},
      {"split_heads", "split_heads_backward"},   {"merge_heads", "merge_heads_backward"},
      {"select_token", "select_token_backward"},
  };
  REQUIRE(g.nodes().size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const nn::Node& node = g.nodes()[k];
    CAPTURE(node.name);
    std::vector<nn::Tensor> ins;
    for (nn::ValueId v : node.inputs) {
      const nn::Dims& dims = g.value(v).dims;
      ins.push_back(ctx.make(dims.size() == 4 ? test::blocked(dims) : nn::plain_desc(dims)));
    }
    std::vector<nn::Tensor> outs(node.outputs.size());
    std::vector<nn::Tensor> saved;
    recorder.kinds.clear();
    node.op->forward(ctx, ins, outs, saved);
    std::vector<nn::Tensor> grad_outs;
    for (std::size_t j = 0; j < outs.size(); ++j) {
      CHECK(outs[j].dims() == g.value(node.outputs[j]).dims);
      grad_outs.push_back(ctx.make(outs[j].desc()));
    }
    std::unique_ptr<bool[]> need(new bool[ins.size()]);
    for (std::size_t i = 0; i < ins.size(); ++i) need[i] = true;
    std::vector<nn::Tensor> grads(ins.size());
    node.op->backward(ctx, ins, outs, grad_outs, saved, std::span<const bool>(need.get(), ins.size()), grads);
    for (std::size_t i = 0; i < ins.size(); ++i) CHECK(grads[i].dims() == ins[i].dims());
    CHECK(recorder.kinds == want[k]);
  }
}

TEST_CASE("nn token layers: a patch-embedding classifier trains end to end on two tiers") {
  // A blocked convolution output into patch_tokens, nhwc gradients back into
  // the convolution, the embedding and class token updated by the trainer,
  // with data moving between tiers under a policy.
  namespace ca = cachedarrays;
  const std::int64_t n = 4;
  nn::Graph g;
  const nn::ValueId images = g.input("images", {n, 3, 8, 8});
  const nn::ValueId labels = g.label("labels", {n});
  const nn::ValueId patches =
      nn::conv2d(g, "patch_embed.proj", images, {.out_channels = 16, .kernel = 4, .stride = 4, .padding = 0});
  const nn::ValueId cls = g.parameter("cls_token", {1, 1, 16}, nn::Init::small_normal);
  const nn::ValueId tokens = nn::position_embedding(g, "pos_embed", nn::patch_tokens(g, "patch_embed", patches, cls));
  const nn::ValueId logits = nn::linear(g, "head", nn::select_token(g, "head_token", tokens), 3);
  g.set_loss(nn::softmax_cross_entropy(g, "loss", logits, labels));

  ca::Runtime rt({ca::dram(8 << 20, "fast"), ca::dax_file({}, 64 << 20, "slow")},
                 ca::policy::Registry::builtin().make("ca-lm"));
  nn::TrainerOptions options;
  options.sgd.weight_decay = 0.0f;  // SGD's L2 penalty would move every row
  nn::Trainer trainer(&rt, std::move(g), options);
  const std::vector<float> cls_before = trainer.parameter("cls_token");
  const std::vector<float> pos_before = trainer.parameter("pos_embed");
  auto data = nn::synthetic_dataset({3, 8, 8}, 3, 13);
  std::vector<float> x(static_cast<std::size_t>(n * 3 * 8 * 8));
  std::vector<float> y(static_cast<std::size_t>(n));
  for (int step = 0; step < 3; ++step) {
    data->next_batch(x, y);
    CHECK(std::isfinite(trainer.step(x, y)));
    rt.collect();
  }
  CHECK(trainer.parameter("cls_token") != cls_before);
  // Only token 0 reaches the head, so only the embedding's row 0 learns.
  const std::vector<float> pos_after = trainer.parameter("pos_embed");
  REQUIRE(pos_after.size() == 5 * 16);
  CHECK(std::vector<float>(pos_after.begin(), pos_after.begin() + 16) !=
        std::vector<float>(pos_before.begin(), pos_before.begin() + 16));
  CHECK(std::vector<float>(pos_after.begin() + 16, pos_after.end()) ==
        std::vector<float>(pos_before.begin() + 16, pos_before.end()));
}
