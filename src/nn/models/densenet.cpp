// DenseNet 121/169/201/264 as torchvision (growth 32, bottleneck 4x growth,
// compression 0.5), with memory-efficient DenseNet's recomputed
// concatenations; see models.hpp.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn/models/model_support.hpp"

namespace cachedarrays::nn::detail {

namespace densenet {
namespace {

constexpr std::int64_t growth_rate = 32;
constexpr std::int64_t bottleneck_factor = 4;  // torchvision's bn_size
constexpr std::int64_t initial_features = 64;

struct Layout {
  int depth;
  std::array<int, 4> layers;  // dense layers per block
};

constexpr std::array<Layout, 4> layouts = {{
    {121, {6, 12, 24, 16}},
    {169, {6, 12, 32, 32}},
    {201, {6, 12, 48, 32}},
    {264, {6, 12, 64, 48}},
}};

const Layout& layout(int depth) { return layout_for(layouts, depth); }

std::vector<int> depths() { return depths_of(layouts); }

std::string architecture(const ModelConfig& config) {
  const int depth = config.depth;
  return "(dense blocks " + list_string(layout(depth).layers) + ", growth rate 32)";
}

// Stem conv 7x7/2 and max pool 3x3/2, then a 2x2/2 average pool in each of
// the three transitions.
std::int64_t final_feature_size(std::int64_t image_size) {
  std::int64_t s = window_out(window_out(image_size, 7, 2, 3), 3, 2, 1);
  for (int transition = 0; transition < 3; ++transition) s = window_out(s, 2, 2, 0);
  return s;
}

Conv2dOptions conv(std::int64_t out_channels, std::int64_t kernel) {
  return {.out_channels = out_channels, .kernel = kernel, .stride = 1, .padding = kernel / 2, .bias = false};
}

// The concatenation of a block's features so far (the block's input and
// each earlier layer's new features), as torchvision's dense layers make it.
// It is marked for recomputation, and so are the batch norm and ReLU over it
// in the next layer: memory-efficient DenseNet (Pleiss et al. 2017, section
// 4, "shared storage"). Kept for the backward pass, these three tensors
// would grow with every layer, O(layers^2) per block; instead only the new
// features (32 channels each) are kept, and the concatenation, batch norm
// and ReLU are remade, one layer at a time, when the backward pass reaches
// the layer. The values do not change: concat copies, and the recomputed
// batch norm sees the same input and batch.
ValueId features_so_far(Graph& g, const std::string& name, const std::vector<ValueId>& features) {
  if (features.size() == 1) return features.front();
  const ValueId x = concat(g, name, features);
  g.recompute_in_backward(x);
  return x;
}

// BN-ReLU-conv1x1-BN-ReLU-conv3x3 over the concatenation of `features`;
// returns the new features.
ValueId dense_layer(Graph& g, const std::string& name, const std::vector<ValueId>& features, std::int64_t growth,
                    std::int64_t bottleneck) {
  const ValueId x = features_so_far(g, name + ".concat", features);
  const ValueId normalised = batch_norm(g, name + ".norm1", x);
  ValueId y = relu(g, name + ".relu1", normalised);
  g.recompute_in_backward(normalised);
  g.recompute_in_backward(y);
  y = conv2d(g, name + ".conv1", y, conv(bottleneck, 1));
  y = relu(g, name + ".relu2", batch_norm(g, name + ".norm2", y));
  return conv2d(g, name + ".conv2", y, conv(growth, 3));
}

Graph build(const ModelConfig& config) {
  const Layout& l = layout(config.depth);
  const std::int64_t growth = scaled(growth_rate, config.width);
  const std::int64_t bottleneck = scaled(bottleneck_factor * growth_rate, config.width);
  Graph g;
  const auto [images, labels] = add_inputs(g, config);
  ValueId x = conv2d(
      g, "features.conv0", images,
      {.out_channels = scaled(initial_features, config.width), .kernel = 7, .stride = 2, .padding = 3, .bias = false});
  x = relu(g, "features.relu0", batch_norm(g, "features.norm0", x));
  x = max_pool(g, "features.pool0", x, 3, 2, 1);
  for (std::size_t b = 0; b < l.layers.size(); ++b) {
    const std::string block = "features.denseblock" + std::to_string(b + 1);
    std::vector<ValueId> features = {x};
    for (int i = 0; i < l.layers[b]; ++i) {
      features.push_back(dense_layer(g, block + ".denselayer" + std::to_string(i + 1), features, growth, bottleneck));
    }
    x = features_so_far(g, block + ".concat", features);
    if (b + 1 == l.layers.size()) break;
    const std::string transition = "features.transition" + std::to_string(b + 1);
    const std::int64_t channels = g.value(x).dims.at(1);
    x = relu(g, transition + ".relu", batch_norm(g, transition + ".norm", x));
    x = conv2d(g, transition + ".conv", x, conv(std::max<std::int64_t>(1, channels / 2), 1));  // floor, as torchvision
    x = avg_pool(g, transition + ".pool", x, 2, 2);
  }
  x = relu(g, "features.relu5", batch_norm(g, "features.norm5", x));
  x = global_avg_pool(g, "avgpool", x);
  add_loss(g, linear(g, "classifier", x, config.classes), labels);
  return g;
}

}  // namespace
}  // namespace densenet

const Family densenet_family = {"densenet", densenet::depths, densenet::architecture, densenet::final_feature_size,
                                densenet::build};

}  // namespace cachedarrays::nn::detail
