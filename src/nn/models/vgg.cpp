// VGG 11/13/16/19 (torchvision configs A, B, D, E without batch norm) and
// the paper's deep VGG 116/416; the construction is documented in models.hpp.
// With ModelConfig::cifar, the CIFAR-10 form of cifar.torch (Zagoruyko's
// 2015 Torch blog post on CIFAR-10: the VGG AutoSwap trains): the same
// stages with batch norm after every convolution, and a 512-wide classifier.
#include <array>
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn/models/model_support.hpp"

namespace cachedarrays::nn::detail {

namespace vgg {
namespace {

constexpr std::array<std::int64_t, 5> stage_channels = {64, 128, 256, 512, 512};
constexpr std::int64_t hidden_features = 4096;
constexpr std::int64_t cifar_hidden_features = 512;
constexpr int linear_layers = 3;

// Convolutions per stage.
std::vector<int> stage_convolutions(int depth) {
  if (depth == 19) return {2, 2, 4, 4, 4};  // config E: not the even split
  // depth - 3 convolutions spread evenly, the remainder to the later stages:
  // this is config A for 11, B for 13 and D for 16.
  const int convs = depth - linear_layers;
  const int stages = static_cast<int>(stage_channels.size());
  std::vector<int> counts(stage_channels.size(), convs / stages);
  for (int i = 0; i < convs % stages; ++i) ++counts[counts.size() - 1 - static_cast<std::size_t>(i)];
  return counts;
}

std::vector<int> depths() { return {11, 13, 16, 19, 116, 416}; }

std::string architecture(const ModelConfig& config) {
  const int depth = config.depth;
  return "(stage convolutions " + list_string(stage_convolutions(depth)) + ", no batch norm)";
}

// Convolutions keep the size; each stage ends in a 2x2/2 max pool.
std::int64_t final_feature_size(std::int64_t image_size) {
  std::int64_t s = image_size;
  for (std::size_t i = 0; i < stage_channels.size(); ++i) s = window_out(s, 2, 2, 0);
  return s;
}

Graph build(const ModelConfig& config) {
  Graph g;
  const auto [images, labels] = add_inputs(g, config);
  // Named by the index of the layer in torchvision's `features` and
  // `classifier` Sequentials, so that parameter names match its state_dict.
  int index = 0;
  const auto next_name = [&index](const char* prefix) { return std::string(prefix) + std::to_string(index++); };
  ValueId x = images;
  const std::vector<int> counts = stage_convolutions(config.depth);
  for (std::size_t stage = 0; stage < counts.size(); ++stage) {
    // Without batch norm between them, each ReLU is fused into its
    // convolution (Conv2dOptions::relu): the same values, and the largest
    // activations (VGG-16's first two, 822 MB each at batch 64) are not
    // read and written again by a kernel of their own. torchvision's index
    // of the ReLU is skipped, so the names still match its state_dict.
    const Conv2dOptions conv{.out_channels = scaled(stage_channels[stage], config.width),
                             .kernel = 3,
                             .stride = 1,
                             .padding = 1,
                             .bias = true,
                             .relu = !config.cifar};
    for (int i = 0; i < counts[stage]; ++i) {
      x = conv2d(g, next_name("features."), x, conv);
      if (config.cifar) {
        x = batch_norm(g, next_name("features."), x);
        x = relu(g, next_name("features."), x);
      } else {
        ++index;  // features.<index> is torchvision's ReLU, fused above
      }
    }
    x = max_pool(g, next_name("features."), x, 2, 2);
  }
  // torchvision's classifier also holds two Dropout layers (indices 2 and
  // 5). Dropout is not an op of this trainer; it has no parameters, so the
  // counts are unaffected. The linear layer flattens its [N, C, H, W] input
  // itself: 512 * 7 * 7 inputs at 224x224.
  if (config.cifar) {
    // cifar.torch's classifier: Dropout, Linear(512, 512), BatchNorm, ReLU,
    // Dropout, Linear(512, classes); the dropouts and that batch norm are
    // not ops here (models.hpp).
    x = relu(g, "classifier.1", linear(g, "classifier.0", x, scaled(cifar_hidden_features, config.width)));
    const ValueId logits = linear(g, "classifier.2", x, config.classes);
    add_loss(g, logits, labels);
    return g;
  }
  const std::int64_t hidden = scaled(hidden_features, config.width);
  x = relu(g, "classifier.1", linear(g, "classifier.0", x, hidden));
  x = relu(g, "classifier.4", linear(g, "classifier.3", x, hidden));
  const ValueId logits = linear(g, "classifier.6", x, config.classes);
  add_loss(g, logits, labels);
  return g;
}

}  // namespace
}  // namespace vgg

const Family vgg_family = {"vgg", vgg::depths, vgg::architecture, vgg::final_feature_size, vgg::build};

}  // namespace cachedarrays::nn::detail
