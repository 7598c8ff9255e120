// ResNet 18/34 (basic blocks) and 50/101/152/200 (bottleneck blocks),
// torchvision's v1.5 layout; see models.hpp.
#include <array>
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn/models/model_support.hpp"

namespace cachedarrays::nn::detail {

namespace resnet {
namespace {

constexpr std::array<std::int64_t, 4> stage_planes = {64, 128, 256, 512};
constexpr std::int64_t stem_channels = 64;

struct Layout {
  int depth;
  bool bottleneck;
  std::array<int, 4> blocks;
};

constexpr std::array<Layout, 6> layouts = {{
    {18, false, {2, 2, 2, 2}},
    {34, false, {3, 4, 6, 3}},
    {50, true, {3, 4, 6, 3}},
    {101, true, {3, 4, 23, 3}},
    {152, true, {3, 8, 36, 3}},
    {200, true, {3, 24, 36, 3}},
}};

const Layout& layout(int depth) { return layout_for(layouts, depth); }

std::vector<int> depths() { return depths_of(layouts); }

std::string architecture(const ModelConfig& config) {
  const int depth = config.depth;
  const Layout& l = layout(depth);
  return std::string("(") + (l.bottleneck ? "bottleneck" : "basic") + " blocks " + list_string(l.blocks) + ")";
}

Conv2dOptions conv(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride) {
  return {.out_channels = out_channels, .kernel = kernel, .stride = stride, .padding = kernel / 2, .bias = false};
}

// Stem conv 7x7/2 and max pool 3x3/2, then a stride-2 3x3 convolution in
// each of stages 2-4 (the 1x1 stride-2 projection gives the same size).
std::int64_t final_feature_size(std::int64_t image_size) {
  std::int64_t s = window_out(window_out(image_size, 7, 2, 3), 3, 2, 1);
  for (std::size_t stage = 1; stage < stage_planes.size(); ++stage) s = window_out(s, 3, 2, 1);
  return s;
}

// conv -> batch norm [-> ReLU]
ValueId conv_bn(Graph& g, const std::string& block, int i, ValueId x, const Conv2dOptions& options, bool with_relu) {
  const std::string n = std::to_string(i);
  x = batch_norm(g, block + ".bn" + n, conv2d(g, block + ".conv" + n, x, options));
  return with_relu ? relu(g, block + ".relu" + n, x) : x;
}

// One residual block; `out_channels` = planes * expansion.
ValueId block(Graph& g, const std::string& name, ValueId x, bool bottleneck, std::int64_t planes,
              std::int64_t out_channels, std::int64_t stride) {
  ValueId y;
  if (bottleneck) {  // v1.5: the stride is on the 3x3 convolution
    y = conv_bn(g, name, 1, x, conv(planes, 1, 1), true);
    y = conv_bn(g, name, 2, y, conv(planes, 3, stride), true);
    y = conv_bn(g, name, 3, y, conv(out_channels, 1, 1), false);
  } else {
    y = conv_bn(g, name, 1, x, conv(planes, 3, stride), true);
    y = conv_bn(g, name, 2, y, conv(out_channels, 3, 1), false);
  }
  ValueId shortcut = x;
  if (stride != 1 || g.value(x).dims.at(1) != out_channels) {
    shortcut = conv2d(g, name + ".downsample.0", x, conv(out_channels, 1, stride));
    shortcut = batch_norm(g, name + ".downsample.1", shortcut);
  }
  return relu(g, name + ".relu", add(g, name + ".add", y, shortcut));
}

Graph build(const ModelConfig& config) {
  const Layout& l = layout(config.depth);
  const std::int64_t expansion = l.bottleneck ? 4 : 1;
  Graph g;
  const auto [images, labels] = add_inputs(g, config);
  ValueId x = conv2d(g, "conv1", images, conv(scaled(stem_channels, config.width), 7, 2));
  x = relu(g, "relu", batch_norm(g, "bn1", x));
  x = max_pool(g, "maxpool", x, 3, 2, 1);
  for (std::size_t stage = 0; stage < stage_planes.size(); ++stage) {
    const std::int64_t planes = scaled(stage_planes[stage], config.width);
    for (int b = 0; b < l.blocks[stage]; ++b) {
      const std::int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      x = block(g, name, x, l.bottleneck, planes, planes * expansion, stride);
    }
  }
  x = global_avg_pool(g, "avgpool", x);
  add_loss(g, linear(g, "fc", x, config.classes), labels);
  return g;
}

}  // namespace
}  // namespace resnet

const Family resnet_family = {"resnet", resnet::depths, resnet::architecture, resnet::final_feature_size,
                              resnet::build};

}  // namespace cachedarrays::nn::detail
