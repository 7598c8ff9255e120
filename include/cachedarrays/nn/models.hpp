// The CNNs of the paper's evaluation (Table III: VGG 116/416, ResNet 200,
// DenseNet 264) and their published relatives, built as training graphs.
// Building a graph records shapes only: no tensor memory is allocated, so
// even the 500 GB configurations of Table III build on any machine.
//
// With width 1 every network has exactly torchvision's layers and parameter
// count (ResNet-50: 25,557,032; VGG-16: 138,357,544; DenseNet-121:
// 7,978,856), and parameters are named as in torchvision's state_dict
// ("layer1.0.conv1.weight", "features.denseblock1.denselayer1.norm1.bias").
//
// VGG (11, 13, 16, 19; configs A, B, D, E of Simonyan & Zisserman,
// torchvision's vgg11/vgg13/vgg16/vgg19 without batch norm): 3x3
// convolutions (padding 1, with bias) + ReLU (fused into the convolution,
// Conv2dOptions::relu) in five stages of 64, 128, 256,
// 512, 512 channels, each stage ending in a 2x2/2 max pool, then
// Linear(512*7*7 -> 4096) + ReLU, Linear(4096 -> 4096) + ReLU,
// Linear(4096 -> classes). Dropout is left out (it is not an op of this
// trainer; it has no parameters). torchvision's
// adaptive 7x7 average pool is the identity at 224x224 and is left out too:
// at another image size S the first linear layer takes 512*(S/32)^2 inputs.
//
// VGG 116 and 416 (the paper: "essentially a greatly extended VGG 16"; it
// gives no layer list, so this is our construction): VGG-16's five stages,
// channels, pools and classifier, with depth - 3 convolutions (depth counts
// weight layers, the 3 linear ones included) spread over the stages as
// evenly as possible, the remainder going to the later stages:
//   VGG-116: [22, 22, 23, 23, 23] convolutions per stage,
//   VGG-416: [82, 82, 83, 83, 83].
// The same rule gives VGG-11's [1, 1, 2, 2, 2], VGG-13's [2, 2, 2, 2, 2] and
// VGG-16's [2, 2, 3, 3, 3].
//
// ResNet (18, 34: basic blocks; 50, 101, 152, 200: bottleneck blocks with
// expansion 4), torchvision's ResNet v1.5 (the stride sits on the
// bottleneck's 3x3 convolution): stem conv 7x7/2 (padding 3, no bias), batch
// norm, ReLU, max pool 3x3/2 (padding 1); four stages of 64, 128, 256, 512
// base channels with block counts 18: [2,2,2,2], 34 and 50: [3,4,6,3], 101:
// [3,4,23,3], 152: [3,8,36,3], 200: [3,24,36,3] (He et al., "Identity
// Mappings"; torchvision has no ResNet-200, its layout is the same); a 1x1
// convolution + batch norm projects the shortcut where the shape changes;
// global average pool; linear.
//
// DenseNet (121, 169, 201, 264; growth rate 32, bottleneck width 4x growth,
// blocks 121: [6,12,24,16], 169: [6,12,32,32], 201: [6,12,48,32], 264:
// [6,12,64,48]) as torchvision: stem conv 7x7/2 to 64 channels, BN, ReLU,
// max pool 3x3/2; dense layers BN-ReLU-conv1x1(128)-BN-ReLU-conv3x3(32)
// whose output joins all earlier features; transitions BN-ReLU-conv1x1
// (halving the channels)-avg pool 2x2/2; final BN, ReLU, global average
// pool, linear. As in torchvision, each dense layer reads the concatenation
// of the block's input and every earlier layer's new features (one n-input
// concat; the transition reads the block's last one). The trainer does not
// keep these concatenations, nor the batch norm and ReLU over them, for the
// backward pass: they are marked Node::recompute and made again, one layer
// at a time, when the backward pass reaches the layer (memory-efficient
// DenseNet, Pleiss et al. 2017: "shared storage" for the concatenation and
// the first batch norm). Kept, they would grow quadratically with the
// block's depth; recomputed, each layer keeps only its bottleneck
// activations and its 32 new channels, for one more concat, batch norm and
// ReLU per layer (measure_footprint measures either form). The losses are
// bit-identical to keeping them, and to the running form
// concat(previous, new) (Concat gives its output that form's layout).
//
// Inception v4 (family "inception", depth 4; "inception-v4" names it too;
// Szegedy et al. 2016, figures 3-9), as timm's inception_v4 (Cadene's port
// of Google's TensorFlow model), names included ("features.4.branch1.1.conv.
// weight", "last_linear"): the stem (figure 3: 3x3/2, 3x3, 3x3; Mixed-3a,
// -4a, -5a), 4 Inception-A (figure 4), Reduction-A (figure 7, k, l, m, n =
// 192, 224, 256, 384), 7 Inception-B (figure 5), Reduction-B (figure 8), 3
// Inception-C (figure 6), global average pool and a linear classifier over
// 1536 features. Every convolution is conv (no bias) + batch norm + ReLU;
// the 1x7/7x1 and 1x3/3x1 ones are rectangular kernels
// (Conv2dOptions::kernel_width). Branches join in one n-input concat. Only
// the convolutions' outputs and the concatenations are kept for the
// backward pass: every batch norm and ReLU, and the average-pool branches'
// pools, are recomputed from them when the backward pass reaches them
// (Node::recompute; memory-efficient DenseNet's shared storage applied to
// every layer), one batch norm and ReLU more per layer for about 0.55x the
// memory of keeping them. The branches' 3x3 average pools exclude their
// padding (count_include_pad False). The paper's dropout (keep 0.8) before the classifier is left out:
// it is not an op of this trainer and has no parameters. 299x299 images
// shrink to 8x8 before the pool; the smallest image is 75x75. At 1000
// classes it has timm's 42,679,816 parameters.
//
// Vision Transformer (family "vit"; Dosovitskiy et al. 2021, section 3.1 and
// table 1; laid out and named as timm's VisionTransformer with its
// defaults: class token, learned position embedding, pre-norm blocks, no
// dropout): a convolution of kernel and stride `patch` makes the patches'
// embeddings ("patch_embed.proj"); the learned class token ("cls_token") is
// prepended and the position embedding ("pos_embed") added; `depth` blocks
// ("blocks.N") each compute x + attention(LayerNorm(x)) and then x +
// MLP(LayerNorm(x)) (fc1, exact GELU, fc2, "mlp.fc1"/"mlp.fc2"), with
// multi-head self-attention over all tokens ("attn.qkv", "attn.proj"); a
// final LayerNorm ("norm"); the classification head ("head") reads the class
// token, as timm's global_pool="token" and the paper do. LayerNorm epsilon
// is 1e-6. The shape is ModelConfig::vit (patch, dim, heads, MLP ratio) and
// the number of blocks is `depth`; the image side must be a multiple of the
// patch. vit_size() names the paper's sizes: ViT-B/16 (86,567,656
// parameters at 224 px and 1000 classes, timm's vit_base_patch16_224) and
// ViT-L/16 (304,326,632, vit_large_patch16_224). For a ViT, `width`
// multiplies dim (rounded to a multiple of the heads).
//
// `width` multiplies every layer's channel count (and VGG's hidden linear
// features), rounded, at least 1: width 0.125 at 32x32 with batch 2 gives
// networks small enough for tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/nn/graph.hpp"

namespace cachedarrays::nn {

/// The shape of a Vision Transformer besides its depth (see the file
/// comment); the defaults suit 28x28 Fashion-MNIST (49 patches).
struct TransformerShape {
  std::int64_t patch = 4;  ///< side of the square patches, a divisor of the image side
  std::int64_t dim = 128;  ///< features per token (the embedding width), a multiple of `heads`
  std::int64_t heads = 4;  ///< attention heads
  double mlp_ratio = 2.0;  ///< the MLP's hidden features per token feature (4 in the paper's sizes)
};

/// Which network build_model() builds (see the file comment), and for what
/// batch and images.
struct ModelConfig {
  std::string family;  ///< "vgg" | "resnet" | "densenet" | "inception" ("inception-v4": inception, depth 4) | "vit"
  int depth = 0;       ///< e.g. 16, 50, 121, 4; a ViT's number of blocks; available_depths(family) lists them
  std::int64_t batch = 32;        ///< samples per batch (data parallel: one rank's shard)
  std::int64_t image_size = 224;  ///< square images, S x S
  std::int64_t channels = 3;      ///< channels of the input images
  std::int64_t classes = 1000;    ///< outputs of the last layer
  double width = 1.0;             ///< multiplies every layer's channel count (tiny test versions)
  /// VGG only: the CIFAR-10 form AutoSwap (SmartPool/AutoSwap, its reference 4) and
  /// SmartPool train, Zagoruyko's cifar.torch VGG: batch norm after every
  /// convolution and a classifier of Linear(512, 512), ReLU, Linear(512,
  /// classes) for 32x32 images. Its dropout layers, and the batch norm of its
  /// hidden linear layer (100 x 512 floats at batch 100), are not ops of this
  /// trainer and are left out. Another family throws invalid_argument.
  bool cifar = false;
  /// ViT only: its patch, width, heads and MLP ratio (the blocks are `depth`).
  TransformerShape vit = {};
};

/// `config` made the named Vision Transformer of Dosovitskiy et al.'s table
/// 1: "Ti16", "S16", "B16", "L16", "H14" (also written "B/16", "vit-b16",
/// any case): family "vit", its depth, patch, dim, heads and MLP ratio 4;
/// the batch, images and classes stay as they were. Throws invalid_argument
/// naming the sizes for another name.
[[nodiscard]] ModelConfig vit_size(ModelConfig config, std::string_view size);
/// The names vit_size() takes, smallest first: "Ti16", "S16", "B16", "L16", "H14".
[[nodiscard]] std::vector<std::string> vit_sizes();

/// The training graph: input "images" [batch, channels, S, S], label "labels"
/// [batch] (class indices as floats), the network ending in the logits
/// [batch, classes] (torchvision's name for the last layer: "fc",
/// "classifier", "classifier.6"), and the softmax cross-entropy "loss", set
/// as the graph's loss.
/// Throws invalid_argument, saying what is valid, for an unknown family or
/// depth, an image too small for the network's downsampling, width <= 0,
/// a batch, channel or class count below 1, or `cifar` for a family other
/// than vgg.
[[nodiscard]] Graph build_model(const ModelConfig& config);

/// `config` with its family's other name resolved: "inception-v4" becomes
/// family "inception", depth 4 (whatever depth it had). build_model() and
/// describe() apply it themselves; a tool that prints or compares the
/// family applies it first.
[[nodiscard]] ModelConfig canonical_model(ModelConfig config);

/// The network's usual name: "resnet-50", "vgg-16", "inception-v4",
/// "vit-b16" (a named size), "vit-p4-d128-l6-h4" (another shape, its patch,
/// dim, depth and heads).
[[nodiscard]] std::string model_name(const ModelConfig& config);

/// The families build_model() knows: "vgg", "resnet", "densenet", "inception", "vit".
[[nodiscard]] std::vector<std::string> model_families();
/// The depths build_model accepts for `family`, ascending; throws
/// invalid_argument for an unknown family.
[[nodiscard]] std::vector<int> available_depths(std::string_view family);
/// One line for logs and reports, e.g. "resnet-50 (bottleneck blocks [3, 4,
/// 6, 3]), batch 32, 3x224x224 images, 1000 classes". Validates like
/// build_model.
[[nodiscard]] std::string describe(const ModelConfig& config);

}  // namespace cachedarrays::nn
