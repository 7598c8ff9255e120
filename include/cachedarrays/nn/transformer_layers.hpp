// Graph builders for the layers of a Vision Transformer (Dosovitskiy et al.
// 2021, section 3.1, as timm's vision_transformer.py builds it): layer
// normalisation, GELU, softmax, token-wise linear layers, batched matrix
// products, the split of a QKV projection into heads and their merge,
// multi-head self-attention made of those, the patch embedding with its
// class token, the learned position embedding, and the classification head's
// pick of the class token. Token tensors are [N, T, D]: batch, tokens,
// features, plain row-major. Every op runs on oneDNN primitives where one
// exists (layer_normalization, eltwise_gelu_erf, softmax, matmul, reorder,
// binary, reduction) and emits its hints through Context::execute like
// every other op; parameters are named as in timm's state_dict
// ("blocks.0.attn.qkv.weight"). Each builder throws invalid_argument, naming
// the layer, for shapes or options it cannot take.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "cachedarrays/nn/graph.hpp"

namespace cachedarrays::nn {

/// Layer normalisation over the last axis of `x` (any rank 2 to 5), with a
/// learned scale "<name>.weight" (ones) and shift "<name>.bias" (zeros) of
/// the last axis' size, as torch.nn.LayerNorm; `epsilon` 1e-6 as timm's ViT.
/// Backward reads the input and the saved mean and variance.
ValueId layer_norm(Graph& g, const std::string& name, ValueId x, float epsilon = 1e-6f);

/// y = x * Phi(x) element-wise, the exact (erf) GELU of torch.nn.GELU()'s
/// default (oneDNN's eltwise_gelu_erf). Backward reads the input.
ValueId gelu(Graph& g, const std::string& name, ValueId x);

/// Softmax over the last axis of `x` (rank 2 to 5). Backward reads the
/// output.
ValueId softmax(Graph& g, const std::string& name, ValueId x);

/// Token-wise linear layer y = x W^T + b over the last axis of `x` [N, T,
/// in] (torch.nn.Linear on a 3-d input): output [N, T, out_features],
/// weight "<name>.weight" [out_features, in] drawn N(0, 0.02^2)
/// (Init::small_normal) and bias "<name>.bias" zeros, as timm's ViT starts
/// them.
ValueId token_linear(Graph& g, const std::string& name, ValueId x, std::int64_t out_features);

/// Batched matrix product y = scale * a op(b): a [B..., M, K] and b
/// [B..., K, N] (or [B..., N, K] with `transpose_b`, read transposed where
/// it lies, no copy) of equal batch dims, rank 2 to 5; y [B..., M, N]. The
/// attention scores are matmul(q, k, true, 1/sqrt(head_dim)), the
/// attention's output matmul(p, v). Backward reads both inputs.
ValueId matmul(Graph& g, const std::string& name, ValueId a, ValueId b, bool transpose_b = false, float scale = 1.0f);

/// The queries, keys and values of `heads` heads from a QKV projection
/// `qkv` [N, T, 3 D] (D divisible by `heads`), as timm's
/// qkv.reshape(N, T, 3, H, D/H).permute(2, 0, 3, 1, 4): three outputs q, k,
/// v, each [N, H, T, D/H]. Backward reads nothing.
std::array<ValueId, 3> split_heads(Graph& g, const std::string& name, ValueId qkv, std::int64_t heads);

/// The heads' outputs `x` [N, H, T, Dh] side by side again, [N, T, H Dh]
/// (timm's x.transpose(1, 2).reshape(N, T, C)). Backward reads nothing.
ValueId merge_heads(Graph& g, const std::string& name, ValueId x);

/// Multi-head self-attention over `x` [N, T, D] with `heads` heads, as
/// timm's Attention: qkv = token_linear("<name>.qkv", x, 3 D), split_heads,
/// scores = matmul(q, k^T) / sqrt(D / heads), softmax over the keys, matmul
/// with v, merge_heads, token_linear("<name>.proj", D). Returns [N, T, D].
ValueId self_attention(Graph& g, const std::string& name, ValueId x, std::int64_t heads);

/// The tokens of a patch embedding's feature map `x` [N, D, h, w] (the
/// output of a convolution of kernel and stride `patch`, "patch_embed.proj"
/// in timm): [N, h w, D] in row-major patch order, with the learned
/// `class_token` parameter [1, 1, D] prepended as token 0 when it is not -1
/// (then [N, 1 + h w, D]); a parameter class token is kept out of weight
/// decay, as timm's no_weight_decay() keeps cls_token. `x` may come in any
/// layout (a convolution's blocked one); its gradient goes back
/// channels-last (nhwc). Backward reads nothing.
ValueId patch_tokens(Graph& g, const std::string& name, ValueId x, ValueId class_token = -1);

/// x + E for a learned position embedding E, the parameter `name` [1, T, D]
/// (timm's "pos_embed"), drawn N(0, 0.02^2) and kept out of weight decay;
/// the node is "<name>.add".
/// Backward reads nothing.
ValueId position_embedding(Graph& g, const std::string& name, ValueId x);

/// Token `index` of every sample of `x` [N, T, D]: [N, D]. With index 0 it
/// is the classification head's input on the class token (timm's
/// global_pool="token"). Backward reads nothing.
ValueId select_token(Graph& g, const std::string& name, ValueId x, std::int64_t index = 0);

}  // namespace cachedarrays::nn
