// Multi-head self-attention, timm's Attention (qkv_bias=True, no dropout),
// built from the token layers rather than as an op of its own, so autodiff,
// the hints and recomputation treat each step like any other layer:
//
//   qkv = token_linear(x)          "<name>.qkv"          [N, T, 3 D]
//   q, k, v = split_heads(qkv)     "<name>.split_heads"  [N, H, T, Dh] each
//   s = q k^T / sqrt(Dh)           "<name>.scores"       [N, H, T, T]
//   p = softmax(s) over the keys   "<name>.softmax"
//   o = p v                        "<name>.context"      [N, H, T, Dh]
//   y = proj(merge_heads(o))       "<name>.merge_heads", "<name>.proj"
//
// The parameters are those of the two linear layers, named as timm's
// state_dict names them ("blocks.0.attn.qkv.weight", ".proj.bias").
#include <cmath>
#include <cstdint>
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/transformer_layers.hpp"

namespace cachedarrays::nn {

ValueId self_attention(Graph& g, const std::string& name, ValueId x, std::int64_t heads) {
  // Checked before any layer is added, so that a refusal leaves the graph
  // as it was.
  const Dims& x_dims = g.value(x).dims;
  const std::string where = "self_attention '" + name + "'";
  if (x_dims.size() != 3) {
    throw invalid_argument("cachedarrays::nn: " + where + " needs tokens [N, T, D] of rank 3, got " +
                           to_string(x_dims));
  }
  if (heads < 1) {
    throw invalid_argument("cachedarrays::nn: " + where + " needs at least 1 head, got " + std::to_string(heads));
  }
  const std::int64_t d = x_dims[2];
  if (d % heads != 0) {
    throw invalid_argument("cachedarrays::nn: " + where + ": D = " + std::to_string(d) + " is not divisible by " +
                           std::to_string(heads) + " heads");
  }
  const ValueId qkv = token_linear(g, name + ".qkv", x, 3 * d);
  const auto [q, k, v] = split_heads(g, name + ".split_heads", qkv, heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d / heads));
  const ValueId scores = matmul(g, name + ".scores", q, k, true, scale);
  const ValueId p = softmax(g, name + ".softmax", scores);
  const ValueId o = matmul(g, name + ".context", p, v);
  return token_linear(g, name + ".proj", merge_heads(g, name + ".merge_heads", o), d);
}

}  // namespace cachedarrays::nn
