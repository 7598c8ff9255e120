// build_model: validates a ModelConfig once, for every family, then hands
// it to the family's builder. Also the helpers the families share.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/layers.hpp"
#include "cachedarrays/nn/models.hpp"
#include "nn/models/model_support.hpp"

namespace cachedarrays::nn {

namespace detail {

std::int64_t scaled(std::int64_t channels, double width) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(channels) * width));
}

std::string list_string(std::span<const int> values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  return s + "]";
}

ModelInputs add_inputs(Graph& g, const ModelConfig& config) {
  const std::int64_t s = config.image_size;
  return {g.input("images", {config.batch, config.channels, s, s}), g.label("labels", {config.batch})};
}

void add_loss(Graph& g, ValueId logits, ValueId labels) {
  g.set_loss(softmax_cross_entropy(g, "loss", logits, labels));
}

}  // namespace detail

namespace {

constexpr std::array<const detail::Family*, 5> families = {&detail::vgg_family, &detail::resnet_family,
                                                           &detail::densenet_family, &detail::inception_family,
                                                           &detail::vit_family};

// Wider than this would only overflow the parameter counts.
constexpr double max_width = 64.0;

std::string families_string() {
  std::string s;
  for (const detail::Family* f : families) s += (s.empty() ? "\"" : ", \"") + std::string(f->name) + "\"";
  return s;
}

const detail::Family& family_of(std::string_view name) {
  for (const detail::Family* f : families) {
    if (f->name == name) return *f;
  }
  throw invalid_argument("cachedarrays::nn: unknown model family \"" + std::string(name) + "\"; the families are " +
                         families_string());
}

std::int64_t min_image_size(const detail::Family& family) {
  std::int64_t s = 1;
  while (family.final_feature_size(s) < 1) ++s;  // monotone, and every family fits by 75
  return s;
}

// Throws invalid_argument naming the first thing wrong with `config`.
const detail::Family& validate(const ModelConfig& config) {
  const detail::Family& family = family_of(config.family);
  const std::vector<int> depths = family.depths();
  if (std::find(depths.begin(), depths.end(), config.depth) == depths.end()) {
    throw invalid_argument("cachedarrays::nn: " + config.family + " has no depth " + std::to_string(config.depth) +
                           "; the depths are " + detail::list_string(depths));
  }
  const auto check_positive = [&](std::int64_t value, const char* what) {
    if (value < 1) {
      throw invalid_argument("cachedarrays::nn: a model's " + std::string(what) + " must be at least 1, got " +
                             std::to_string(value));
    }
  };
  check_positive(config.batch, "batch size");
  check_positive(config.channels, "number of image channels");
  check_positive(config.classes, "number of classes");
  if (!(config.width > 0.0 && config.width <= max_width)) {  // also rejects NaN
    throw invalid_argument("cachedarrays::nn: a model's width must be greater than 0 and at most " +
                           std::to_string(static_cast<int>(max_width)) + " (1 is the published network), got " +
                           std::to_string(config.width));
  }
  if (config.cifar && config.family != "vgg") {
    throw invalid_argument("cachedarrays::nn: only vgg has a CIFAR form (ModelConfig::cifar); " + config.family +
                           " has none");
  }
  if (config.image_size < 1 || family.final_feature_size(config.image_size) < 1) {
    throw invalid_argument("cachedarrays::nn: " + model_name(config) + " needs images of at least " +
                           std::to_string(min_image_size(family)) + "x" + std::to_string(min_image_size(family)) +
                           " pixels (its pooling and strided layers would shrink a smaller one to nothing), got " +
                           std::to_string(config.image_size) + "x" + std::to_string(config.image_size));
  }
  return family;
}

std::string width_string(double width) {
  std::string s = std::to_string(width);  // "0.125000"
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

ModelConfig canonical_model(ModelConfig config) {
  if (config.family == "inception-v4") {
    config.family = "inception";
    config.depth = 4;
  }
  return config;
}

std::string model_name(const ModelConfig& given) {
  const ModelConfig config = canonical_model(given);
  if (config.family == "inception") return "inception-v" + std::to_string(config.depth);
  if (config.family == "vit") return detail::vit_model_name(config);
  return config.family + "-" + std::to_string(config.depth);
}

Graph build_model(const ModelConfig& given) {
  const ModelConfig config = canonical_model(given);
  return validate(config).build(config);
}

std::vector<std::string> model_families() {
  std::vector<std::string> names;
  for (const detail::Family* f : families) names.emplace_back(f->name);
  return names;
}

std::vector<int> available_depths(std::string_view family) { return family_of(family).depths(); }

std::string describe(const ModelConfig& given) {
  const ModelConfig config = canonical_model(given);
  const detail::Family& family = validate(config);
  std::string s = model_name(config) + " " + family.architecture(config);
  if (config.cifar) s += ", CIFAR form (batch norm, 512-wide classifier)";
  if (config.width != 1.0) s += ", width " + width_string(config.width);
  s += ", batch " + std::to_string(config.batch) + ", " + std::to_string(config.channels) + "x" +
       std::to_string(config.image_size) + "x" + std::to_string(config.image_size) + " images, " +
       std::to_string(config.classes) + " classes";
  return s;
}

}  // namespace cachedarrays::nn
