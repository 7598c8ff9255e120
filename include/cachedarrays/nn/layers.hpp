// Graph builders for the layers the models use: each adds its node and its
// parameters (named "<name>.weight", "<name>.bias", ...) to the graph and
// returns the output value. Shapes are NCHW for images, NC for features.
// Each throws invalid_argument, naming the layer, for input shapes or
// options the layer cannot take.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/nn/graph.hpp"

namespace cachedarrays::nn {

/// The shape of a conv2d() layer: output channels, square kernel, stride,
/// symmetric padding, bias and a fused ReLU.
struct Conv2dOptions {
  std::int64_t out_channels = 0;  ///< output channels, at least 1
  std::int64_t kernel = 3;        ///< side of the square kernel; its height with kernel_width
  std::int64_t stride = 1;        ///< in both directions
  std::int64_t padding = 0;       ///< zeros on each side, in both directions (see padding_width)
  bool bias = false;              ///< add a learned bias per output channel (`<name>.bias`)
  /// y = max(conv(x), 0) in the one kernel (a oneDNN post-op), instead of a
  /// ReLU op after it: the activation is written once, not written, read and
  /// written again. Backward computes ReLU's gradient from y first, as the
  /// ReLU op does; the values are the same as conv then relu.
  bool relu = false;
  /// Width of the kernel when it differs from its height `kernel` (0: the
  /// kernel is square): kernel 1 with kernel_width 7 is Inception's 1x7.
  std::int64_t kernel_width = 0;
  /// Zeros on the left and on the right when they differ from `padding`,
  /// which then pads the top and the bottom only (-1: `padding` everywhere).
  std::int64_t padding_width = -1;

  /// The kernel's width: kernel_width, or `kernel` for a square one.
  [[nodiscard]] std::int64_t kernel_w() const { return kernel_width > 0 ? kernel_width : kernel; }
  /// The padding on the left and on the right: padding_width, or `padding`.
  [[nodiscard]] std::int64_t padding_w() const { return padding_width >= 0 ? padding_width : padding; }
};
/// 2-d convolution of the NCHW value `x` with a Kaiming-normal weight
/// `<name>.weight` [out_channels, C, kernel, kernel_w()] (and `<name>.bias`).
/// Like every builder here, it adds its node and parameters to `g`, returns
/// the output, and throws invalid_argument naming the layer for input shapes
/// or options it cannot take.
ValueId conv2d(Graph& g, const std::string& name, ValueId x, const Conv2dOptions& options);
/// Training-mode batch normalisation over N, H, W (batch statistics),
/// learnable scale ("weight") and shift ("bias"), epsilon 1e-5; it keeps
/// running statistics as buffers for evaluation (Op::buffers).
ValueId batch_norm(Graph& g, const std::string& name, ValueId x);
/// y = max(x, 0), element-wise; computes in place when it may.
ValueId relu(Graph& g, const std::string& name, ValueId x);
/// Max pooling over square `kernel` windows with `stride` and symmetric
/// `padding`.
ValueId max_pool(Graph& g, const std::string& name, ValueId x, std::int64_t kernel, std::int64_t stride,
                 std::int64_t padding = 0);
/// Average pooling; padding is excluded from the average (as PyTorch's
/// count_include_pad=False would; the models use padding 0).
ValueId avg_pool(Graph& g, const std::string& name, ValueId x, std::int64_t kernel, std::int64_t stride,
                 std::int64_t padding = 0);
/// Global average pooling: [N, C, H, W] -> [N, C, 1, 1].
ValueId global_avg_pool(Graph& g, const std::string& name, ValueId x);
/// Fully connected: x is [N, C] or [N, C, H, W] (flattened), output [N, out]
/// with `out` = `out_features`; weight and bias start uniform in
/// +-1/sqrt(fan_in).
ValueId linear(Graph& g, const std::string& name, ValueId x, std::int64_t out_features, bool bias = true);
/// Element-wise a + b (same shape): residual connections.
ValueId add(Graph& g, const std::string& name, ValueId a, ValueId b);
/// Concatenation along channels (axis 1): DenseNet.
ValueId concat(Graph& g, const std::string& name, const std::vector<ValueId>& xs);
/// Mean over the batch of -log softmax(logits)[label]; labels hold class
/// indices as floats, shape [N]. Output shape [1]. Sets nothing on the graph:
/// call g.set_loss on the result.
ValueId softmax_cross_entropy(Graph& g, const std::string& name, ValueId logits, ValueId labels);

}  // namespace cachedarrays::nn
