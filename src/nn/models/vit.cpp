// The Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16
// Words", ICLR 2021: section 3.1, equations 1-4, and table 1's sizes), laid
// out and named as timm's VisionTransformer; see models.hpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/transformer_layers.hpp"
#include "nn/models/model_support.hpp"

namespace cachedarrays::nn {

namespace {

// Table 1 of the paper, with the patch of the sizes its results name.
struct NamedSize {
  const char* name;
  int depth;
  TransformerShape shape;
};
constexpr std::array<NamedSize, 5> named_sizes = {{
    {"Ti16", 12, {16, 192, 3, 4.0}},  // DeiT-Ti, timm's vit_tiny_patch16_224
    {"S16", 12, {16, 384, 6, 4.0}},
    {"B16", 12, {16, 768, 12, 4.0}},
    {"L16", 24, {16, 1024, 16, 4.0}},
    {"H14", 32, {14, 1280, 16, 4.0}},
}};

std::string normalised_size(std::string_view size) {
  std::string s;
  for (char c : size) {
    if (c != '/' && c != '-') s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (s.starts_with("vit")) s.erase(0, 3);
  return s;
}

bool same_shape(const TransformerShape& a, const TransformerShape& b) {
  return a.patch == b.patch && a.dim == b.dim && a.heads == b.heads && a.mlp_ratio == b.mlp_ratio;
}

}  // namespace

ModelConfig vit_size(ModelConfig config, std::string_view size) {
  const std::string wanted = normalised_size(size);
  for (const NamedSize& n : named_sizes) {
    if (normalised_size(n.name) != wanted) continue;
    config.family = "vit";
    config.depth = n.depth;
    config.vit = n.shape;
    return config;
  }
  std::string names;
  for (const NamedSize& n : named_sizes) names += (names.empty() ? "" : ", ") + std::string(n.name);
  throw invalid_argument("cachedarrays::nn: unknown ViT size \"" + std::string(size) + "\"; the sizes are " + names +
                         " (Dosovitskiy et al., table 1; also written B/16 or vit-b16)");
}

std::vector<std::string> vit_sizes() {
  std::vector<std::string> names;
  for (const NamedSize& n : named_sizes) names.emplace_back(n.name);
  return names;
}

namespace detail {

// dim scaled by the width, a multiple of the heads, at least one per head.
std::int64_t vit_dim(const ModelConfig& config) {
  const std::int64_t heads = std::max<std::int64_t>(1, config.vit.heads);
  const auto per_head = std::max<std::int64_t>(
      1, std::llround(static_cast<double>(config.vit.dim) * config.width / static_cast<double>(heads)));
  return config.width == 1.0 ? config.vit.dim : per_head * heads;
}

std::string vit_model_name(const ModelConfig& config) {
  for (const NamedSize& n : named_sizes) {
    if (n.depth == config.depth && same_shape(n.shape, config.vit)) return "vit-" + normalised_size(n.name);
  }
  return fmt::format("vit-p{}-d{}-l{}-h{}", config.vit.patch, config.vit.dim, config.depth, config.vit.heads);
}

namespace vit {
namespace {

constexpr int max_depth = 64;

std::vector<int> depths() {
  std::vector<int> d(max_depth);
  for (int i = 0; i < max_depth; ++i) d[static_cast<std::size_t>(i)] = i + 1;
  return d;
}

std::string architecture(const ModelConfig& config) {
  const TransformerShape& v = config.vit;
  return fmt::format("({} blocks, patch {}, dim {}, {} heads, MLP x{:g}, class token)", config.depth, v.patch,
                     vit_dim(config), v.heads, v.mlp_ratio);
}

// The patches must tile the image exactly; build() says so in its own
// words, as the side alone cannot tell here.
std::int64_t final_feature_size(std::int64_t image_size) { return image_size; }

void validate_shape(const ModelConfig& config) {
  const TransformerShape& v = config.vit;
  const std::string name = vit_model_name(config);
  if (v.patch < 1 || v.heads < 1 || v.dim < 1) {
    throw invalid_argument(
        fmt::format("cachedarrays::nn: {} needs a patch, dim and heads of at least 1, got patch "
                    "{}, dim {}, {} heads",
                    name, v.patch, v.dim, v.heads));
  }
  if (config.image_size % v.patch != 0) {
    throw invalid_argument(
        fmt::format("cachedarrays::nn: {} needs an image side that is a multiple of its patch {} "
                    "(the patches tile the image), got {}x{}",
                    name, v.patch, config.image_size, config.image_size));
  }
  if (vit_dim(config) % v.heads != 0) {
    throw invalid_argument(
        fmt::format("cachedarrays::nn: {} has dim {}, which its {} heads do not divide; use a "
                    "dim that is a multiple of the heads",
                    name, vit_dim(config), v.heads));
  }
  if (!(v.mlp_ratio > 0) || !std::isfinite(v.mlp_ratio) ||
      std::llround(static_cast<double>(vit_dim(config)) * v.mlp_ratio) < 1) {
    throw invalid_argument(
        fmt::format("cachedarrays::nn: {} needs an MLP ratio above 0 that leaves at least one "
                    "hidden feature, got {:g}",
                    name, v.mlp_ratio));
  }
}

Graph build(const ModelConfig& config) {
  validate_shape(config);
  const TransformerShape& v = config.vit;
  const std::int64_t dim = vit_dim(config);
  const std::int64_t hidden = std::llround(static_cast<double>(dim) * v.mlp_ratio);
  Graph g;
  const auto [images, labels] = add_inputs(g, config);
  // Equation 1: the patches' linear projection (a convolution of stride
  // patch), the class token, the position embedding.
  const ValueId patches =
      conv2d(g, "patch_embed.proj", images, {.out_channels = dim, .kernel = v.patch, .stride = v.patch, .bias = true});
  const ValueId class_token = g.parameter("cls_token", {1, 1, dim}, Init::small_normal);
  g.exclude_from_weight_decay(class_token);
  ValueId x = patch_tokens(g, "patch_embed.tokens", patches, class_token);
  x = position_embedding(g, "pos_embed", x);
  // Equations 2 and 3: pre-norm residual blocks.
  for (int i = 0; i < config.depth; ++i) {
    const std::string b = "blocks." + std::to_string(i);
    const ValueId attended = self_attention(g, b + ".attn", layer_norm(g, b + ".norm1", x), v.heads);
    x = add(g, b + ".residual1", x, attended);
    ValueId h = token_linear(g, b + ".mlp.fc1", layer_norm(g, b + ".norm2", x), hidden);
    h = token_linear(g, b + ".mlp.fc2", gelu(g, b + ".mlp.act", h), dim);
    x = add(g, b + ".residual2", x, h);
  }
  // Equation 4: the final LayerNorm of the class token, then the head. The
  // LayerNorm normalises each token by itself, so normalising the class
  // token alone gives timm's values (which normalises all, then picks it).
  const ValueId pooled = layer_norm(g, "norm", select_token(g, "pool", x, 0));
  add_loss(g, linear(g, "head", pooled, config.classes), labels);
  return g;
}

}  // namespace
}  // namespace vit

const Family vit_family = {"vit", vit::depths, vit::architecture, vit::final_feature_size, vit::build};

}  // namespace detail

}  // namespace cachedarrays::nn
