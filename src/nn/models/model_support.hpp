// Private to src/nn/models: what the model families share (input and
// loss nodes, channel scaling, spatial arithmetic) and the table through
// which build_model reaches each family.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/nn/models.hpp"

namespace cachedarrays::nn::detail {

// round(channels * width), at least 1.
[[nodiscard]] std::int64_t scaled(std::int64_t channels, double width);

// Output size of a window (convolution or pooling, floor mode) over `size`
// input positions; 0 when the padded input is smaller than the window.
[[nodiscard]] constexpr std::int64_t window_out(std::int64_t size, std::int64_t kernel, std::int64_t stride,
                                                std::int64_t padding) {
  const std::int64_t padded = size + 2 * padding;
  return padded < kernel ? 0 : (padded - kernel) / stride + 1;
}

// The entry of a family's layout table for `depth` (tables have a `depth`
// member; build_model has already checked that the depth is listed).
template <typename Layout, std::size_t N>
[[nodiscard]] const Layout& layout_for(const std::array<Layout, N>& table, int depth) {
  for (const Layout& l : table) {
    if (l.depth == depth) return l;
  }
  return table.front();  // unreachable: build_model checked the depth
}

// The depths a layout table lists, in table order.
template <typename Layout, std::size_t N>
[[nodiscard]] std::vector<int> depths_of(const std::array<Layout, N>& table) {
  std::vector<int> d;
  for (const Layout& l : table) d.push_back(l.depth);
  return d;
}

// "[2, 2, 3, 3, 3]"
[[nodiscard]] std::string list_string(std::span<const int> values);

struct ModelInputs {
  ValueId images;
  ValueId labels;
};
// "images" [batch, channels, S, S] and "labels" [batch].
ModelInputs add_inputs(Graph& g, const ModelConfig& config);
// "loss" = softmax_cross_entropy(logits, labels), set as the graph's loss.
void add_loss(Graph& g, ValueId logits, ValueId labels);

// One model family. build() gets a config that build_model has validated
// (known depth, image large enough, positive sizes and width).
struct Family {
  std::string_view name;
  std::vector<int> (*depths)();
  // "(stage convolutions [2, 2, 3, 3, 3])" for describe(), from a validated config.
  std::string (*architecture)(const ModelConfig& config);
  // Side of the last feature map for an S x S image (< 1: too small).
  std::int64_t (*final_feature_size)(std::int64_t image_size);
  Graph (*build)(const ModelConfig& config);
};

extern const Family vgg_family;
extern const Family resnet_family;
extern const Family densenet_family;
extern const Family inception_family;
extern const Family vit_family;

// "vit-b16" for a named size, else "vit-p4-d128-l6-h4".
[[nodiscard]] std::string vit_model_name(const ModelConfig& config);

}  // namespace cachedarrays::nn::detail
