// Inception v4 (Szegedy, Ioffe, Vanhoucke and Alemi, "Inception-v4,
// Inception-ResNet and the Impact of Residual Connections on Learning",
// AAAI 2017, figures 3-9), laid out and named as timm's inception_v4 (after
// Cadene's port of Google's TensorFlow model); see models.hpp.
#include <string>
#include <vector>

#include "cachedarrays/nn/layers.hpp"
#include "nn/models/model_support.hpp"

namespace cachedarrays::nn::detail {

namespace inception {
namespace {

std::vector<int> depths() { return {4}; }

std::string architecture(const ModelConfig&) {
  return "(stem, 4 Inception-A, Reduction-A, 7 Inception-B, Reduction-B, 3 Inception-C)";
}

// The stem's 3x3/2, 3x3 and 3x3/2 (Mixed-3a), 3x3 (Mixed-4a) and 3x3/2
// (Mixed-5a), then the two reductions' 3x3/2, all unpadded: 299 -> 8.
std::int64_t final_feature_size(std::int64_t image_size) {
  std::int64_t s = window_out(window_out(image_size, 3, 2, 0), 3, 1, 0);  // the third stem conv keeps the size
  s = window_out(s, 3, 2, 0);                                             // Mixed-3a
  s = window_out(s, 3, 1, 0);                                             // Mixed-4a
  s = window_out(s, 3, 2, 0);                                             // Mixed-5a
  s = window_out(s, 3, 2, 0);                                             // Reduction-A
  return window_out(s, 3, 2, 0);                                          // Reduction-B
}

// The network's building block (timm's ConvNormAct, Cadene's BasicConv2d):
// convolution without bias, batch norm, ReLU. The batch norm and ReLU are
// recomputed in the backward pass from the convolution's output, which
// batch norm's backward keeps anyway (memory-efficient DenseNet's "shared
// storage", Pleiss et al. 2017, applied to every layer): kept, the ReLU's
// output would sit beside its copy in each concatenation, and beside the
// convolution output in every layer, for one extra batch norm and ReLU per
// layer in the backward pass.
struct ConvBn {
  Graph& g;
  double width;

  // A kernel of kh x kw with padding (ph, pw) and `stride`.
  ValueId operator()(const std::string& name, ValueId x, std::int64_t channels, std::int64_t kh, std::int64_t kw,
                     std::int64_t stride = 1, std::int64_t ph = 0, std::int64_t pw = 0) const {
    const ValueId y = conv2d(g, name + ".conv", x,
                             {.out_channels = scaled(channels, width),
                              .kernel = kh,
                              .stride = stride,
                              .padding = ph,
                              .bias = false,
                              .kernel_width = kw,
                              .padding_width = pw});
    const ValueId normalised = batch_norm(g, name + ".bn", y);
    const ValueId out = relu(g, name + ".relu", normalised);
    g.recompute_in_backward(normalised);
    g.recompute_in_backward(out);
    return out;
  }
  // Square kernels.
  ValueId square(const std::string& name, ValueId x, std::int64_t channels, std::int64_t k, std::int64_t stride = 1,
                 std::int64_t padding = 0) const {
    return (*this)(name, x, channels, k, k, stride, padding, padding);
  }
  // 1x7 (padding 0, 3) and 7x1 (padding 3, 0), and their 3-wide kin.
  ValueId row(const std::string& name, ValueId x, std::int64_t channels, std::int64_t k) const {
    return (*this)(name, x, channels, 1, k, 1, 0, k / 2);
  }
  ValueId column(const std::string& name, ValueId x, std::int64_t channels, std::int64_t k) const {
    return (*this)(name, x, channels, k, 1, 1, k / 2, 0);
  }
};

// The average-pool branch's pool: as large as the block's input, which the
// other branches' convolutions keep anyway, and cheap to make again from
// it, so recomputed in the backward pass rather than kept for the 1x1
// convolution after it.
ValueId pooled(const ConvBn& c, const std::string& name, ValueId x) {
  const ValueId y = avg_pool(c.g, name, x, 3, 1, 1);
  c.g.recompute_in_backward(y);
  return y;
}

// Figure 3, the stem: 299x299x3 -> 35x35x384.
ValueId stem(const ConvBn& c, ValueId images) {
  Graph& g = c.g;
  ValueId x = c.square("features.0", images, 32, 3, 2);
  x = c.square("features.1", x, 32, 3);
  x = c.square("features.2", x, 64, 3, 1, 1);
  // Mixed-3a: max pool 3x3/2 beside conv 3x3/2.
  x = concat(g, "features.3.concat",
             {max_pool(g, "features.3.maxpool", x, 3, 2), c.square("features.3.conv", x, 96, 3, 2)});
  // Mixed-4a: 1x1, 3x3 beside 1x1, 1x7, 7x1, 3x3.
  const ValueId a = c.square("features.4.branch0.1", c.square("features.4.branch0.0", x, 64, 1), 96, 3);
  ValueId b = c.square("features.4.branch1.0", x, 64, 1);
  b = c.row("features.4.branch1.1", b, 64, 7);
  b = c.column("features.4.branch1.2", b, 64, 7);
  b = c.square("features.4.branch1.3", b, 96, 3);
  x = concat(g, "features.4.concat", {a, b});
  // Mixed-5a: conv 3x3/2 beside max pool 3x3/2.
  return concat(g, "features.5.concat",
                {c.square("features.5.conv", x, 192, 3, 2), max_pool(g, "features.5.maxpool", x, 3, 2)});
}

// Figure 4: 35x35x384 -> 35x35x384.
ValueId inception_a(const ConvBn& c, const std::string& n, ValueId x) {
  const ValueId b0 = c.square(n + ".branch0", x, 96, 1);
  const ValueId b1 = c.square(n + ".branch1.1", c.square(n + ".branch1.0", x, 64, 1), 96, 3, 1, 1);
  ValueId b2 = c.square(n + ".branch2.0", x, 64, 1);
  b2 = c.square(n + ".branch2.1", b2, 96, 3, 1, 1);
  b2 = c.square(n + ".branch2.2", b2, 96, 3, 1, 1);
  const ValueId b3 = c.square(n + ".branch3.1", pooled(c, n + ".branch3.0", x), 96, 1);
  return concat(c.g, n + ".concat", {b0, b1, b2, b3});
}

// Figure 7 (k, l, m, n = 192, 224, 256, 384): 35x35x384 -> 17x17x1024.
ValueId reduction_a(const ConvBn& c, const std::string& n, ValueId x) {
  Graph& g = c.g;
  const ValueId b0 = c.square(n + ".branch0", x, 384, 3, 2);
  ValueId b1 = c.square(n + ".branch1.0", x, 192, 1);
  b1 = c.square(n + ".branch1.1", b1, 224, 3, 1, 1);
  b1 = c.square(n + ".branch1.2", b1, 256, 3, 2);
  return concat(c.g, n + ".concat", {b0, b1, max_pool(g, n + ".branch2", x, 3, 2)});
}

// Figure 5: 17x17x1024 -> 17x17x1024.
ValueId inception_b(const ConvBn& c, const std::string& n, ValueId x) {
  const ValueId b0 = c.square(n + ".branch0", x, 384, 1);
  ValueId b1 = c.square(n + ".branch1.0", x, 192, 1);
  b1 = c.row(n + ".branch1.1", b1, 224, 7);
  b1 = c.column(n + ".branch1.2", b1, 256, 7);
  ValueId b2 = c.square(n + ".branch2.0", x, 192, 1);
  b2 = c.column(n + ".branch2.1", b2, 192, 7);
  b2 = c.row(n + ".branch2.2", b2, 224, 7);
  b2 = c.column(n + ".branch2.3", b2, 224, 7);
  b2 = c.row(n + ".branch2.4", b2, 256, 7);
  const ValueId b3 = c.square(n + ".branch3.1", pooled(c, n + ".branch3.0", x), 128, 1);
  return concat(c.g, n + ".concat", {b0, b1, b2, b3});
}

// Figure 8: 17x17x1024 -> 8x8x1536.
ValueId reduction_b(const ConvBn& c, const std::string& n, ValueId x) {
  Graph& g = c.g;
  const ValueId b0 = c.square(n + ".branch0.1", c.square(n + ".branch0.0", x, 192, 1), 192, 3, 2);
  ValueId b1 = c.square(n + ".branch1.0", x, 256, 1);
  b1 = c.row(n + ".branch1.1", b1, 256, 7);
  b1 = c.column(n + ".branch1.2", b1, 320, 7);
  b1 = c.square(n + ".branch1.3", b1, 320, 3, 2);
  return concat(c.g, n + ".concat", {b0, b1, max_pool(g, n + ".branch2", x, 3, 2)});
}

// Figure 6: 8x8x1536 -> 8x8x1536. Two branches end in a 1x3 and a 3x1
// side by side over the same input.
ValueId inception_c(const ConvBn& c, const std::string& n, ValueId x) {
  const ValueId b0 = c.square(n + ".branch0", x, 256, 1);
  const ValueId b1 = c.square(n + ".branch1_0", x, 384, 1);
  const ValueId b1_ab = concat(c.g, n + ".branch1_concat",
                               {c.row(n + ".branch1_1a", b1, 256, 3), c.column(n + ".branch1_1b", b1, 256, 3)});
  ValueId b2 = c.square(n + ".branch2_0", x, 384, 1);
  b2 = c.column(n + ".branch2_1", b2, 448, 3);
  b2 = c.row(n + ".branch2_2", b2, 512, 3);
  const ValueId b2_ab = concat(c.g, n + ".branch2_concat",
                               {c.row(n + ".branch2_3a", b2, 256, 3), c.column(n + ".branch2_3b", b2, 256, 3)});
  const ValueId b3 = c.square(n + ".branch3.1", pooled(c, n + ".branch3.0", x), 256, 1);
  return concat(c.g, n + ".concat", {b0, b1_ab, b2_ab, b3});
}

Graph build(const ModelConfig& config) {
  Graph g;
  const ConvBn c{g, config.width};
  const auto [images, labels] = add_inputs(g, config);
  ValueId x = stem(c, images);
  int block = 6;  // features.6 onwards, as timm numbers its Sequential
  const auto next = [&] { return "features." + std::to_string(block++); };
  for (int i = 0; i < 4; ++i) x = inception_a(c, next(), x);
  x = reduction_a(c, next(), x);
  for (int i = 0; i < 7; ++i) x = inception_b(c, next(), x);
  x = reduction_b(c, next(), x);
  for (int i = 0; i < 3; ++i) x = inception_c(c, next(), x);
  x = global_avg_pool(g, "global_pool", x);
  add_loss(g, linear(g, "last_linear", x, config.classes), labels);
  return g;
}

}  // namespace
}  // namespace inception

const Family inception_family = {"inception", inception::depths, inception::architecture, inception::final_feature_size,
                                 inception::build};

}  // namespace cachedarrays::nn::detail
