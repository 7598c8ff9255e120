// nn models: published parameter counts (torchvision's figures, timm's
// for Inception v4), the structure of each family (torchvision's and timm's
// parameter names and shapes, the paper's deep VGG construction), the
// inputs and the loss, and tiny versions that train. Bad configurations are
// in nn_negative_tests.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/nn/models.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "nn_test_support.hpp"
#include "wall_clock.hpp"

namespace {

namespace ca = cachedarrays;
namespace nn = cachedarrays::nn;
using test::imagenet_model, test::tiny_model;

// The parameter of that name, or null.
const nn::ValueInfo* find_parameter(const nn::Graph& g, const std::string& name) {
  for (nn::ValueId id : g.values_with_role(nn::ValueRole::parameter)) {
    if (g.value(id).name == name) return &g.value(id);
  }
  return nullptr;
}

nn::Dims parameter_dims(const nn::Graph& g, const std::string& name) {
  const nn::ValueInfo* v = find_parameter(g, name);
  REQUIRE_MESSAGE(v != nullptr, "no parameter " << name);
  return v->dims;
}

int count_nodes(const nn::Graph& g, const std::string& kind) {
  int n = 0;
  for (const nn::Node& node : g.nodes()) n += node.op->kind() == kind ? 1 : 0;
  return n;
}

// The inputs, the logits and the loss every model must have.
void check_training_graph(const nn::Graph& g, const nn::ModelConfig& c) {
  const std::vector<nn::ValueId> inputs = g.values_with_role(nn::ValueRole::input);
  const std::vector<nn::ValueId> labels = g.values_with_role(nn::ValueRole::label);
  REQUIRE(inputs.size() == 1);
  REQUIRE(labels.size() == 1);
  CHECK(g.value(inputs[0]).name == "images");
  CHECK(g.value(inputs[0]).dims == nn::Dims{c.batch, c.channels, c.image_size, c.image_size});
  CHECK(g.value(labels[0]).name == "labels");
  CHECK(g.value(labels[0]).dims == nn::Dims{c.batch});
  REQUIRE(g.loss() >= 0);
  const nn::ValueInfo& loss = g.value(g.loss());
  CHECK(loss.dims == nn::Dims{1});
  REQUIRE(loss.producer >= 0);
  const nn::Node& loss_node = g.nodes().at(static_cast<std::size_t>(loss.producer));
  CHECK(loss_node.op->kind() == "softmax_cross_entropy");
  CHECK(loss.producer + 1 == static_cast<int>(g.nodes().size()));
  REQUIRE(loss_node.inputs.size() == 2);
  CHECK(g.value(loss_node.inputs[0]).dims == nn::Dims{c.batch, c.classes});
  CHECK(loss_node.inputs[1] == labels[0]);
  // Names are unique (parameters are looked up by name).
  std::set<std::string> names;
  for (std::size_t v = 0; v < g.value_count(); ++v) {
    CHECK_MESSAGE(names.insert(g.value(static_cast<nn::ValueId>(v)).name).second,
                  g.value(static_cast<nn::ValueId>(v)).name << " twice");
  }
  // Every activation but the loss feeds a later node: nothing dangles.
  for (std::size_t v = 0; v < g.value_count(); ++v) {
    const auto id = static_cast<nn::ValueId>(v);
    if (id != g.loss()) CHECK_MESSAGE(!g.value(id).consumers.empty(), g.value(id).name << " is never used");
  }
}

struct Published {
  const char* family;
  int depth;
  std::int64_t parameters;
};

}  // namespace

TEST_CASE("nn models: ImageNet configurations have torchvision's parameter counts") {
  const std::vector<Published> published = {
      {"resnet", 18, 11'689'512},   {"resnet", 34, 21'797'672},    {"resnet", 50, 25'557'032},
      {"resnet", 101, 44'549'160},  {"resnet", 152, 60'192'808},   {"vgg", 11, 132'863'336},
      {"vgg", 13, 133'047'848},     {"vgg", 16, 138'357'544},      {"vgg", 19, 143'667'240},
      {"densenet", 121, 7'978'856}, {"densenet", 169, 14'149'480}, {"densenet", 201, 20'013'928},
  };
  for (const Published& p : published) {
    const std::string name = std::string(p.family) + "-" + std::to_string(p.depth);
    CAPTURE(name);
    const nn::ModelConfig config = imagenet_model(p.family, p.depth);
    const nn::Graph g = nn::build_model(config);
    CHECK(g.parameter_count() == p.parameters);
    check_training_graph(g, config);
  }
}

TEST_CASE("nn models: the paper's large networks build fast, with only shapes") {
  // Table III's large configurations: over 500 GB of tensors each if they
  // were allocated; building the graph allocates none of it.
  struct Large {
    const char* family;
    int depth;
    std::int64_t batch;
  };
  for (const Large& l :
       {Large{"densenet", 264, 1536}, Large{"resnet", 200, 2048}, Large{"vgg", 416, 256}, Large{"vgg", 116, 320}}) {
    const std::string name = std::string(l.family) + "-" + std::to_string(l.depth);
    CAPTURE(name);
    nn::ModelConfig config = imagenet_model(l.family, l.depth);
    config.batch = l.batch;
    const auto start = std::chrono::steady_clock::now();
    const nn::Graph g = nn::build_model(config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check_training_graph(g, config);
    CHECK(g.parameter_count() > 0);
    INFO(name << ": " << g.nodes().size() << " nodes, built in " << seconds * 1e3 << " ms");
    CHECK(seconds < test::generous_seconds(1.0));  // shapes alone build quickly: only a runaway fails
  }
}

TEST_CASE("nn models: VGG has torchvision's layers and the paper's deep variants extend VGG-16") {
  SUBCASE("VGG-16 parameters are named and shaped as torchvision's state_dict") {
    const nn::Graph g = nn::build_model(imagenet_model("vgg", 16));
    CHECK(parameter_dims(g, "features.0.weight") == nn::Dims{64, 3, 3, 3});
    CHECK(parameter_dims(g, "features.0.bias") == nn::Dims{64});
    CHECK(parameter_dims(g, "features.28.weight") == nn::Dims{512, 512, 3, 3});
    CHECK(parameter_dims(g, "classifier.0.weight") == nn::Dims{4096, 512, 7, 7});
    CHECK(parameter_dims(g, "classifier.3.weight") == nn::Dims{4096, 4096});
    CHECK(parameter_dims(g, "classifier.6.weight") == nn::Dims{1000, 4096});
    CHECK(parameter_dims(g, "classifier.6.bias") == nn::Dims{1000});
    CHECK(count_nodes(g, "conv") == 13);
    CHECK(count_nodes(g, "max_pool") == 5);
    CHECK(count_nodes(g, "batch_norm") == 0);
    // Each convolution's ReLU is fused into it (Conv2dOptions::relu); the
    // classifier's two stay ops of their own.
    CHECK(count_nodes(g, "relu") == 2);
    int fused = 0;
    for (const nn::Node& node : g.nodes()) {
      if (node.op->kind() == "conv" && node.op->backward_reads_outputs(1) == std::vector<bool>{true}) ++fused;
    }
    CHECK(fused == 13);
  }
  SUBCASE("depth counts weight layers: convolutions + 3 linear") {
    for (int depth : nn::available_depths("vgg")) {
      CAPTURE(depth);
      const nn::Graph g = nn::build_model(tiny_model("vgg", depth));
      CHECK(count_nodes(g, "conv") == depth - 3);
      CHECK(count_nodes(g, "linear") == 3);
      CHECK(count_nodes(g, "max_pool") == 5);
    }
  }
  SUBCASE("the extra convolutions go evenly to the stages, the remainder to the later ones") {
    CHECK(nn::describe(imagenet_model("vgg", 116)).find("[22, 22, 23, 23, 23]") != std::string::npos);
    CHECK(nn::describe(imagenet_model("vgg", 416)).find("[82, 82, 83, 83, 83]") != std::string::npos);
    CHECK(nn::describe(imagenet_model("vgg", 11)).find("[1, 1, 2, 2, 2]") != std::string::npos);
    CHECK(nn::describe(imagenet_model("vgg", 19)).find("[2, 2, 4, 4, 4]") != std::string::npos);
    // VGG-116's last stage: 23 convolutions of 512 -> 512 channels.
    const nn::Graph g = nn::build_model(imagenet_model("vgg", 116));
    const int last_stage_first = 2 * (22 + 22 + 23 + 23) + 4;  // convs and relus, plus 4 pools before it
    const std::string first = "features." + std::to_string(last_stage_first);
    const std::string last = "features." + std::to_string(last_stage_first + 2 * 22);
    CHECK(parameter_dims(g, first + ".weight") == nn::Dims{512, 512, 3, 3});
    CHECK(parameter_dims(g, last + ".weight") == nn::Dims{512, 512, 3, 3});
    CHECK(find_parameter(g, "features." + std::to_string(last_stage_first + 2 * 23) + ".weight") == nullptr);
  }
  SUBCASE("at another image size the first linear layer takes 512 * (S/32)^2 inputs") {
    nn::ModelConfig config = imagenet_model("vgg", 16);
    config.image_size = 64;
    const nn::Graph g = nn::build_model(config);
    CHECK(parameter_dims(g, "classifier.0.weight") == nn::Dims{4096, 512, 2, 2});
    config.image_size = 32;
    CHECK(parameter_dims(nn::build_model(config), "classifier.0.weight") == nn::Dims{4096, 512, 1, 1});
  }
}

TEST_CASE("nn models: VGG's CIFAR form is cifar.torch's: batch norm after every convolution, a 512-wide classifier") {
  nn::ModelConfig config = imagenet_model("vgg", 16);
  config.image_size = 32;
  config.classes = 10;
  config.cifar = true;
  const nn::Graph g = nn::build_model(config);
  CHECK(count_nodes(g, "conv") == 13);
  CHECK(count_nodes(g, "batch_norm") == 13);
  CHECK(count_nodes(g, "relu") == 14);  // batch norm between: nothing fused
  CHECK(count_nodes(g, "linear") == 2);
  CHECK(parameter_dims(g, "features.0.weight") == nn::Dims{64, 3, 3, 3});
  CHECK(parameter_dims(g, "classifier.0.weight") == nn::Dims{512, 512, 1, 1});
  CHECK(parameter_dims(g, "classifier.2.weight") == nn::Dims{10, 512});
  CHECK(nn::describe(config).find("CIFAR form") != std::string::npos);
  // The torchvision form at 32x32 keeps its 4096-wide classifier.
  config.cifar = false;
  CHECK(parameter_dims(nn::build_model(config), "classifier.3.weight") == nn::Dims{4096, 4096});
  // Only VGG has one.
  config.family = "resnet";
  config.depth = 18;
  config.cifar = true;
  test::check_contains(test::invalid_argument_of([&] { (void)nn::build_model(config); }),
                       "only vgg has a CIFAR form (ModelConfig::cifar); resnet has none");
}

TEST_CASE("nn models: ResNet is torchvision's v1.5") {
  const nn::Graph g = nn::build_model(imagenet_model("resnet", 50));
  CHECK(parameter_dims(g, "conv1.weight") == nn::Dims{64, 3, 7, 7});
  CHECK(find_parameter(g, "conv1.bias") == nullptr);
  CHECK(parameter_dims(g, "bn1.weight") == nn::Dims{64});
  CHECK(parameter_dims(g, "layer1.0.conv1.weight") == nn::Dims{64, 64, 1, 1});
  CHECK(parameter_dims(g, "layer1.0.downsample.0.weight") == nn::Dims{256, 64, 1, 1});
  CHECK(parameter_dims(g, "layer1.0.downsample.1.bias") == nn::Dims{256});
  CHECK(find_parameter(g, "layer1.1.downsample.0.weight") == nullptr);
  CHECK(parameter_dims(g, "layer4.2.conv3.weight") == nn::Dims{2048, 512, 1, 1});
  CHECK(parameter_dims(g, "fc.weight") == nn::Dims{1000, 2048, 1, 1});
  CHECK(parameter_dims(g, "fc.bias") == nn::Dims{1000});
  // v1.5: the stride is on the 3x3 convolution, so conv1 of layer2.0 keeps
  // 56x56 and conv2 halves it.
  for (const nn::Node& node : g.nodes()) {
    if (node.name == "layer2.0.conv1") CHECK(g.value(node.outputs[0]).dims == nn::Dims{32, 128, 56, 56});
    if (node.name == "layer2.0.conv2") CHECK(g.value(node.outputs[0]).dims == nn::Dims{32, 128, 28, 28});
    if (node.name == "layer4.2.relu") CHECK(g.value(node.outputs[0]).dims == nn::Dims{32, 2048, 7, 7});
  }
  CHECK(count_nodes(g, "add") == 16);
  CHECK(count_nodes(nn::build_model(tiny_model("resnet", 200)), "add") == 3 + 24 + 36 + 3);
  // Basic blocks: two 3x3 convolutions, a projection only where the shape changes.
  const nn::Graph r18 = nn::build_model(imagenet_model("resnet", 18));
  CHECK(parameter_dims(r18, "layer1.0.conv2.weight") == nn::Dims{64, 64, 3, 3});
  CHECK(find_parameter(r18, "layer1.0.downsample.0.weight") == nullptr);
  CHECK(parameter_dims(r18, "layer2.0.downsample.0.weight") == nn::Dims{128, 64, 1, 1});
  CHECK(parameter_dims(r18, "fc.weight") == nn::Dims{1000, 512, 1, 1});
}

TEST_CASE("nn models: DenseNet is torchvision's, each layer reading one recomputed concatenation") {
  const nn::Graph g = nn::build_model(imagenet_model("densenet", 121));
  CHECK(parameter_dims(g, "features.conv0.weight") == nn::Dims{64, 3, 7, 7});
  CHECK(parameter_dims(g, "features.denseblock1.denselayer1.norm1.weight") == nn::Dims{64});
  CHECK(parameter_dims(g, "features.denseblock1.denselayer1.conv1.weight") == nn::Dims{128, 64, 1, 1});
  CHECK(parameter_dims(g, "features.denseblock1.denselayer1.conv2.weight") == nn::Dims{32, 128, 3, 3});
  CHECK(parameter_dims(g, "features.denseblock1.denselayer6.conv1.weight") == nn::Dims{128, 64 + 5 * 32, 1, 1});
  CHECK(parameter_dims(g, "features.transition1.conv.weight") == nn::Dims{128, 256, 1, 1});
  CHECK(parameter_dims(g, "features.transition3.conv.weight") == nn::Dims{512, 1024, 1, 1});
  CHECK(parameter_dims(g, "features.denseblock4.denselayer16.conv2.weight") == nn::Dims{32, 128, 3, 3});
  CHECK(parameter_dims(g, "features.norm5.weight") == nn::Dims{1024});
  CHECK(parameter_dims(g, "classifier.weight") == nn::Dims{1000, 1024, 1, 1});
  CHECK(count_nodes(g, "concat") == 6 + 12 + 24 + 16);
  CHECK(count_nodes(g, "avg_pool") == 3);
  // Within a block the k-th concatenation joins the block's input and k + 1
  // layers' new features; it and the batch norm and ReLU over it are
  // recomputed in the backward pass, nothing else is.
  std::size_t previous_inputs = 0;
  int recomputed = 0;
  for (const nn::Node& node : g.nodes()) {
    recomputed += node.recompute ? 1 : 0;
    if (node.op->kind() != "concat") continue;
    CHECK(node.recompute);
    CHECK((node.inputs.size() == previous_inputs + 1 || node.inputs.size() == 2));
    previous_inputs = node.inputs.size();
    for (std::size_t i = 1; i < node.inputs.size(); ++i) CHECK(g.value(node.inputs[i]).dims.at(1) == 32);
    for (int consumer : g.value(node.outputs[0]).consumers) {
      const nn::Node& norm = g.nodes().at(static_cast<std::size_t>(consumer));
      CHECK(norm.op->kind() == "batch_norm");
      if (norm.name.find("denselayer") != std::string::npos) CHECK(norm.recompute);
    }
  }
  CHECK(recomputed == (6 + 12 + 24 + 16) + 2 * (6 + 12 + 24 + 16));  // concats; norm1 and relu1 of every layer
  CHECK(count_nodes(nn::build_model(tiny_model("densenet", 264)), "concat") == 6 + 12 + 64 + 48);
}

TEST_CASE("nn models: Inception v4 keeps convolution outputs and concatenations, and recomputes the rest") {
  const nn::ModelConfig config = tiny_model("inception", 4);
  const nn::Graph g = nn::build_model(config);
  // Every batch norm and ReLU, and the average-pool branches' pools, are
  // remade in the backward pass from what is kept: the convolutions'
  // outputs (batch norm's backward reads them) and the concatenations
  // (the next block's convolutions read them).
  int recomputed = 0;
  for (const nn::Node& node : g.nodes()) {
    CAPTURE(node.name);
    const std::string kind = node.op->kind();
    const bool remade = kind == "batch_norm" || kind == "relu" || kind == "avg_pool";
    CHECK(node.recompute == remade);
    recomputed += node.recompute ? 1 : 0;
  }
  CHECK(recomputed == 2 * 149 + 14);  // 149 conv-BN-ReLU layers, 4 + 7 + 3 average pools
}

TEST_CASE("nn models: Inception v4 is timm's inception_v4, with its rectangular kernels and n-way concatenations") {
  nn::ModelConfig config = imagenet_model("inception", 4);
  config.image_size = 299;
  const nn::Graph g = nn::build_model(config);
  check_training_graph(g, config);
  // timm's InceptionV4(num_classes=1000) (huggingface/pytorch-image-models,
  // inception_v4): sum(p.numel() for p in model.parameters()).
  CHECK(g.parameter_count() == 42'679'816);
  // timm's state_dict names, in its order: ConvNormAct's conv and bn, first
  // to last.
  const std::vector<nn::ValueId> parameters = g.values_with_role(nn::ValueRole::parameter);
  REQUIRE(parameters.size() > 3);
  CHECK(g.value(parameters[0]).name == "features.0.conv.weight");
  CHECK(g.value(parameters[1]).name == "features.0.bn.weight");
  CHECK(g.value(parameters[2]).name == "features.0.bn.bias");
  CHECK(g.value(parameters[parameters.size() - 2]).name == "last_linear.weight");
  CHECK(g.value(parameters.back()).name == "last_linear.bias");
  CHECK(parameter_dims(g, "features.0.conv.weight") == nn::Dims{32, 3, 3, 3});
  CHECK(find_parameter(g, "features.0.conv.bias") == nullptr);
  CHECK(parameter_dims(g, "features.3.conv.conv.weight") == nn::Dims{96, 64, 3, 3});  // Mixed-3a
  // Mixed-4a's 1x7 and 7x1: [out, in, height, width].
  CHECK(parameter_dims(g, "features.4.branch1.1.conv.weight") == nn::Dims{64, 64, 1, 7});
  CHECK(parameter_dims(g, "features.4.branch1.2.conv.weight") == nn::Dims{64, 64, 7, 1});
  CHECK(parameter_dims(g, "features.5.conv.conv.weight") == nn::Dims{192, 192, 3, 3});      // Mixed-5a
  CHECK(parameter_dims(g, "features.6.branch3.1.conv.weight") == nn::Dims{96, 384, 1, 1});  // the first Inception-A
  CHECK(parameter_dims(g, "features.10.branch0.conv.weight") == nn::Dims{384, 384, 3, 3});  // Reduction-A
  CHECK(parameter_dims(g, "features.10.branch1.2.conv.weight") == nn::Dims{256, 224, 3, 3});
  CHECK(parameter_dims(g, "features.11.branch1.1.conv.weight") == nn::Dims{224, 192, 1, 7});  // the first Inception-B
  CHECK(parameter_dims(g, "features.11.branch2.1.conv.weight") == nn::Dims{192, 192, 7, 1});
  CHECK(parameter_dims(g, "features.17.branch2.4.conv.weight") == nn::Dims{256, 224, 1, 7});   // the last
  CHECK(parameter_dims(g, "features.18.branch1.2.conv.weight") == nn::Dims{320, 256, 7, 1});   // Reduction-B
  CHECK(parameter_dims(g, "features.21.branch1_1a.conv.weight") == nn::Dims{256, 384, 1, 3});  // the last Inception-C
  CHECK(parameter_dims(g, "features.21.branch1_1b.conv.weight") == nn::Dims{256, 384, 3, 1});
  CHECK(parameter_dims(g, "features.21.branch2_1.conv.weight") == nn::Dims{448, 384, 3, 1});
  CHECK(parameter_dims(g, "features.21.branch2_2.conv.weight") == nn::Dims{512, 448, 1, 3});
  CHECK(parameter_dims(g, "features.21.branch3.1.bn.bias") == nn::Dims{256});
  CHECK(find_parameter(g, "features.22.branch0.conv.weight") == nullptr);
  // The classifier takes the pooled [N, 1536, 1, 1] as ResNet's fc does.
  CHECK(parameter_dims(g, "last_linear.weight") == nn::Dims{1000, 1536, 1, 1});
  CHECK(parameter_dims(g, "last_linear.bias") == nn::Dims{1000});

  // Convolutions: stem 3, Mixed-3a 1, Mixed-4a 6, Mixed-5a 1; Inception-A 7,
  // Reduction-A 4, Inception-B 10, Reduction-B 6, Inception-C 10 each. Each
  // has its batch norm and ReLU, and no bias.
  const int convolutions = 3 + 1 + 6 + 1 + 4 * 7 + 4 + 7 * 10 + 6 + 3 * 10;
  CHECK(count_nodes(g, "conv") == convolutions);
  CHECK(count_nodes(g, "batch_norm") == convolutions);
  CHECK(count_nodes(g, "relu") == convolutions);
  // Rectangular: Mixed-4a 2, Inception-B 6 each, Reduction-B 2, Inception-C 6 each.
  int rectangular = 0;
  for (const nn::Node& node : g.nodes()) {
    if (node.op->kind() != "conv") continue;
    CHECK(node.inputs.size() == 2);
    const nn::Dims& w = g.value(node.inputs[1]).dims;
    rectangular += w.at(2) != w.at(3) ? 1 : 0;
  }
  CHECK(rectangular == 2 + 7 * 6 + 2 + 3 * 6);
  // Concatenations: the stem's three mixed blocks, one per Inception-A,
  // Reduction-A, Inception-B and Reduction-B, three per Inception-C (its two
  // 1x3-beside-3x1 pairs and the block's own).
  CHECK(count_nodes(g, "concat") == 3 + 4 * 1 + 1 + 7 * 1 + 1 + 3 * 3);
  CHECK(count_nodes(g, "max_pool") == 2 + 1 + 1);
  CHECK(count_nodes(g, "avg_pool") == 4 + 7 + 3);
  CHECK(count_nodes(g, "global_avg_pool") == 1);

  // 299x299 shrinks to the paper's 35x35x384, 17x17x1024 and 8x8x1536, which
  // the global pool reads.
  int checked = 0;
  for (const nn::Node& node : g.nodes()) {
    const nn::Dims& out = g.value(node.outputs.at(0)).dims;
    if (node.name == "features.5.concat") CHECK(out == nn::Dims{32, 384, 35, 35});
    if (node.name == "features.10.concat") CHECK(out == nn::Dims{32, 1024, 17, 17});
    if (node.name == "features.18.concat") CHECK(out == nn::Dims{32, 1536, 8, 8});
    if (node.op->kind() == "global_avg_pool") {
      REQUIRE(node.inputs.size() == 1);
      CHECK(g.value(node.inputs[0]).dims == nn::Dims{32, 1536, 8, 8});
      CHECK(out == nn::Dims{32, 1536, 1, 1});
      ++checked;
    }
    if (node.name == "features.21.concat") {
      // Inception-C joins 256 + (256 + 256) + (256 + 256) + 256 channels.
      std::vector<std::int64_t> channels;
      for (nn::ValueId in : node.inputs) channels.push_back(g.value(in).dims.at(1));
      CHECK(channels == std::vector<std::int64_t>{256, 512, 512, 256});
      ++checked;
    }
  }
  CHECK(checked == 2);
}

TEST_CASE("nn models: Inception v4 is also \"inception-v4\", and needs images of at least 75x75") {
  nn::ModelConfig alias = imagenet_model("inception-v4", 0);
  const nn::ModelConfig canonical = nn::canonical_model(alias);
  CHECK(canonical.family == "inception");
  CHECK(canonical.depth == 4);
  CHECK(canonical.batch == alias.batch);
  CHECK(nn::model_name(alias) == "inception-v4");
  CHECK(nn::model_name(imagenet_model("inception", 4)) == "inception-v4");
  CHECK(nn::model_name(imagenet_model("resnet", 50)) == "resnet-50");
  // The alias names the depth, whatever the config says.
  alias.depth = 7;
  CHECK(nn::canonical_model(alias).depth == 4);
  CHECK(nn::canonical_model(imagenet_model("resnet", 50)).family == "resnet");
  const std::string described = nn::describe(imagenet_model("inception", 4));
  CHECK(described ==
        "inception-v4 (stem, 4 Inception-A, Reduction-A, 7 Inception-B, Reduction-B, 3 Inception-C), batch 32, "
        "3x224x224 images, 1000 classes");
  CHECK(nn::describe(alias) == described);
  CHECK(nn::build_model(alias).parameter_count() == nn::build_model(imagenet_model("inception", 4)).parameter_count());
  // A depth of its own other than 4 is refused under the family's name.
  test::check_contains(test::invalid_argument_of([] { (void)nn::build_model(imagenet_model("inception", 3)); }),
                       "inception has no depth 3; the depths are [4]");

  nn::ModelConfig small = tiny_model("inception", 4);
  small.image_size = 74;
  const std::string message = test::invalid_argument_of([&] { (void)nn::build_model(small); });
  test::check_contains(message, "inception-v4 needs images of at least 75x75");
  test::check_contains(message, "got 74x74");
  CHECK(test::invalid_argument_of([&] { (void)nn::describe(small); }) == message);
  small.image_size = 75;
  const nn::Graph g = nn::build_model(small);
  for (const nn::Node& node : g.nodes()) {
    if (node.op->kind() == "global_avg_pool") CHECK(g.value(node.inputs.at(0)).dims.at(2) == 1);
  }
}

TEST_CASE("nn models: tiny versions of every model build and share the training-graph shape") {
  for (const std::string& family : nn::model_families()) {
    for (int depth : nn::available_depths(family)) {
      CAPTURE(family);
      CAPTURE(depth);
      const nn::ModelConfig config = tiny_model(family, depth);
      const nn::Graph g = nn::build_model(config);
      check_training_graph(g, config);
      CHECK(g.parameter_count() < nn::build_model(imagenet_model(family, depth)).parameter_count() / 20);
    }
  }
  // Grey images, other class counts.
  nn::ModelConfig mnist = tiny_model("resnet", 18);
  mnist.channels = 1;
  mnist.image_size = 28;
  mnist.classes = 7;
  check_training_graph(nn::build_model(mnist), mnist);
}

TEST_CASE(
    "nn models: a tiny version of each family trains: sensible loss, a gradient for every parameter, the loss falls") {
  ca::Runtime rt({ca::dram(256 << 20, "fast"), ca::dax_file({}, 256 << 20, "slow")});
  // Plain SGD, so that a parameter changes only if its gradient is nonzero.
  // 64x64 images: at 32x32 the last stages are 1x1, and a batch norm over
  // the 2 values of a batch of 2 outputs +-1 whatever its input, so almost
  // no gradient passes it.
  nn::TrainerOptions options;
  options.sgd = {.learning_rate = 0.01F, .momentum = 0.0F, .weight_decay = 0.0F};
  // Inception at 107x107, the smallest image it shrinks to 2x2 rather than
  // 1x1, for the same reason.
  for (const auto& [family, depth, image_size] : {std::tuple{"vgg", 11, 64}, std::tuple{"resnet", 50, 64},
                                                  std::tuple{"densenet", 121, 64}, std::tuple{"inception", 4, 107}}) {
    const std::string name = std::string(family) + "-" + std::to_string(depth);
    CAPTURE(name);
    nn::ModelConfig config = tiny_model(family, depth);
    config.image_size = image_size;
    nn::Trainer trainer(&rt, nn::build_model(config), options);
    std::vector<std::string> parameters;
    std::vector<std::vector<float>> initial;
    for (nn::ValueId id : trainer.graph().values_with_role(nn::ValueRole::parameter)) {
      parameters.push_back(trainer.graph().value(id).name);
      initial.push_back(trainer.parameter(parameters.back()));
    }
    std::vector<float> images(
        static_cast<std::size_t>(config.batch * config.channels * config.image_size * config.image_size));
    for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>((i * 37) % 101) / 50.0F - 1.0F;
    const std::vector<float> labels = {3.0F, 7.0F};
    const float loss = trainer.step(images, labels);
    CHECK(loss == doctest::Approx(std::log(10.0)).epsilon(0.2));  // a fresh network guesses
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      CAPTURE(parameters[p]);
      CHECK(trainer.parameter(parameters[p]) != initial[p]);
    }
    trainer.step(images, labels);
    const float third = trainer.step(images, labels);  // on the same batch
    CHECK(std::isfinite(third));
    CHECK(third < loss);
  }
}

TEST_CASE("nn models: available depths and families") {
  CHECK(nn::model_families() == std::vector<std::string>{"vgg", "resnet", "densenet", "inception", "vit"});
  CHECK(nn::available_depths("vgg") == std::vector<int>{11, 13, 16, 19, 116, 416});
  CHECK(nn::available_depths("resnet") == std::vector<int>{18, 34, 50, 101, 152, 200});
  CHECK(nn::available_depths("densenet") == std::vector<int>{121, 169, 201, 264});
  CHECK(nn::available_depths("inception") == std::vector<int>{4});
  CHECK_THROWS_AS((void)nn::available_depths("alexnet"), ca::invalid_argument);
}

TEST_CASE("nn models: describe") {
  CHECK(nn::describe(imagenet_model("resnet", 50)) ==
        "resnet-50 (bottleneck blocks [3, 4, 6, 3]), batch 32, 3x224x224 images, 1000 classes");
  CHECK(nn::describe(tiny_model("densenet", 121)) ==
        "densenet-121 (dense blocks [6, 12, 24, 16], growth rate 32), width 0.125, batch 2, 3x32x32 images, "
        "10 classes");
  CHECK(nn::describe(imagenet_model("vgg", 16)) ==
        "vgg-16 (stage convolutions [2, 2, 3, 3, 3], no batch norm), batch 32, 3x224x224 images, 1000 classes");
  CHECK_THROWS_AS((void)nn::describe(imagenet_model("resnet", 51)), ca::invalid_argument);
}

namespace {

// A ViT for ImageNet at one of the paper's sizes: 3x224x224, 1000 classes.
nn::ModelConfig imagenet_vit(const std::string& size) {
  nn::ModelConfig c = nn::vit_size(imagenet_model("vit", 0), size);
  c.batch = 2;
  return c;
}

}  // namespace

TEST_CASE("nn models: ViT-B/16 and ViT-L/16 have timm's parameter counts, names and shapes") {
  // sum(p.numel() for p in timm.create_model("vit_base_patch16_224").parameters()), and vit_large_patch16_224.
  CHECK(nn::build_model(imagenet_vit("B16")).parameter_count() == 86'567'656);
  CHECK(nn::build_model(imagenet_vit("L16")).parameter_count() == 304'326'632);
  const nn::Graph g = nn::build_model(imagenet_vit("B/16"));
  CHECK(parameter_dims(g, "patch_embed.proj.weight") == nn::Dims{768, 3, 16, 16});
  CHECK(parameter_dims(g, "patch_embed.proj.bias") == nn::Dims{768});
  CHECK(parameter_dims(g, "cls_token") == nn::Dims{1, 1, 768});
  CHECK(parameter_dims(g, "pos_embed") == nn::Dims{1, 197, 768});
  CHECK(parameter_dims(g, "blocks.0.norm1.weight") == nn::Dims{768});
  CHECK(parameter_dims(g, "blocks.11.attn.qkv.weight") == nn::Dims{2304, 768});
  CHECK(parameter_dims(g, "blocks.11.attn.qkv.bias") == nn::Dims{2304});
  CHECK(parameter_dims(g, "blocks.5.attn.proj.weight") == nn::Dims{768, 768});
  CHECK(parameter_dims(g, "blocks.5.mlp.fc1.weight") == nn::Dims{3072, 768});
  CHECK(parameter_dims(g, "blocks.5.mlp.fc2.weight") == nn::Dims{768, 3072});
  CHECK(parameter_dims(g, "norm.bias") == nn::Dims{768});
  CHECK(parameter_dims(g, "head.weight") == nn::Dims{1000, 768});
  CHECK(find_parameter(g, "blocks.12.norm1.weight") == nullptr);      // 12 blocks
  CHECK(g.values_with_role(nn::ValueRole::parameter).size() == 152);  // timm's state_dict: 4 + 12 x 12 + 4
  // Weight decay: the matrices and the patch convolution, not biases,
  // LayerNorms or the embeddings.
  CHECK(find_parameter(g, "blocks.0.attn.qkv.weight")->weight_decay);
  CHECK(find_parameter(g, "patch_embed.proj.weight")->weight_decay);
  CHECK(!find_parameter(g, "blocks.0.attn.qkv.bias")->weight_decay);
  CHECK(!find_parameter(g, "pos_embed")->weight_decay);
  CHECK(!find_parameter(g, "cls_token")->weight_decay);
  CHECK(count_nodes(g, "softmax") == 12);
  CHECK(count_nodes(g, "layer_norm") == 25);
}

TEST_CASE("nn models: the ViT sizes and shapes, named and described, and the shapes refused") {
  CHECK(nn::vit_sizes() == std::vector<std::string>{"Ti16", "S16", "B16", "L16", "H14"});
  const nn::ModelConfig b = imagenet_vit("vit-b16");
  CHECK(b.family == "vit");
  CHECK(b.depth == 12);
  CHECK(b.vit.dim == 768);
  CHECK(b.vit.heads == 12);
  CHECK(b.vit.mlp_ratio == 4.0);
  CHECK(nn::model_name(b) == "vit-b16");
  CHECK(nn::model_name(imagenet_vit("L16")) == "vit-l16");
  test::check_contains(test::invalid_argument_of([] { (void)nn::vit_size({}, "B32"); }),
                       "unknown ViT size \"B32\"; the sizes are Ti16, S16, B16, L16, H14");

  nn::ModelConfig small = tiny_model("vit", 6);  // the default shape: patch 4, dim 128, 4 heads, MLP x2
  small.width = 1;
  small.image_size = 28;
  small.channels = 1;
  CHECK(nn::model_name(small) == "vit-p4-d128-l6-h4");
  CHECK(nn::describe(small) ==
        "vit-p4-d128-l6-h4 (6 blocks, patch 4, dim 128, 4 heads, MLP x2, class token), batch 2, 1x28x28 images, "
        "10 classes");
  const nn::Graph g = nn::build_model(small);
  check_training_graph(g, small);
  CHECK(parameter_dims(g, "pos_embed") == nn::Dims{1, 50, 128});  // 49 patches and the class token

  nn::ModelConfig uneven = small;
  uneven.image_size = 30;
  test::check_contains(test::invalid_argument_of([&] { (void)nn::build_model(uneven); }),
                       "needs an image side that is a multiple of its patch 4");
  nn::ModelConfig odd_heads = small;
  odd_heads.vit.heads = 3;
  test::check_contains(test::invalid_argument_of([&] { (void)nn::build_model(odd_heads); }),
                       "has dim 128, which its 3 heads do not divide");
  nn::ModelConfig no_mlp = small;
  no_mlp.vit.mlp_ratio = 0;
  test::check_contains(test::invalid_argument_of([&] { (void)nn::build_model(no_mlp); }), "MLP ratio above 0");
  nn::ModelConfig too_deep = small;
  too_deep.depth = 65;
  test::check_contains(test::invalid_argument_of([&] { (void)nn::build_model(too_deep); }), "vit has no depth 65");
}

TEST_CASE("nn models: a tiny ViT trained with AdamW learns a batch it sees three times") {
  ca::Runtime rt({ca::dram(64 << 20, "fast")}, ca::policy::Registry::builtin().make("all-fast"));
  nn::ModelConfig config = tiny_model("vit", 2);
  config.width = 1;
  config.image_size = 16;
  config.vit = {.patch = 4, .dim = 32, .heads = 4, .mlp_ratio = 2};
  nn::TrainerOptions options;
  options.optimizer = nn::Optimizer::adamw;
  options.adamw.learning_rate = 3e-3F;
  nn::Trainer trainer(&rt, nn::build_model(config), options);
  std::vector<float> images(static_cast<std::size_t>(config.batch * config.channels * 16 * 16));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>((i * 37) % 101) / 50.0F - 1.0F;
  const std::vector<float> labels = {3.0F, 7.0F};
  std::vector<std::string> parameters;
  std::vector<std::vector<float>> initial;
  for (nn::ValueId id : trainer.graph().values_with_role(nn::ValueRole::parameter)) {
    parameters.push_back(trainer.graph().value(id).name);
    initial.push_back(trainer.parameter(parameters.back()));
  }
  const float loss = trainer.step(images, labels);
  CHECK(loss == doctest::Approx(std::log(10.0)).epsilon(0.2));
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    CAPTURE(parameters[p]);
    CHECK(trainer.parameter(parameters[p]) != initial[p]);  // every parameter gets a gradient
  }
  (void)trainer.step(images, labels);
  const float third = trainer.step(images, labels);
  CHECK(std::isfinite(third));
  CHECK(third < loss);
}
