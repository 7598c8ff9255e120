#include "cachedarrays/nn/training_options.hpp"

#include <fmt/format.h>

#include <string>

namespace cachedarrays::nn {

TrainingOptions training_options_from_environment() {
  TrainingOptions o;
  o.env = read_environment();
  // The environment's settings are defaults: an explicit setting still wins.
  if (o.env.policy) o.policy = *o.env.policy;
  if (o.env.fast_bytes) o.fast_bytes = *o.env.fast_bytes;
  if (o.env.fast_fraction) o.fast_fraction = *o.env.fast_fraction;
  if (o.env.slow_path) o.slow_path = o.env.slow_path->string();
  if (o.env.emulation) o.slow_emulation = *o.env.emulation;
  if (o.env.trace) o.trace_path = o.env.trace->string();
  return o;
}

void settle_training_options(TrainingOptions& o, const ExplicitTrainingOptions& given) {
  o.model = canonical_model(o.model);  // inception-v4
  if (!o.vit_size.empty()) {
    const int depth = o.model.depth;
    o.model = vit_size(o.model, o.vit_size);
    if (given.depth) o.model.depth = depth;  // fewer or more blocks of that size
  } else if (o.model.family == "vit" && !given.depth) {
    o.model.depth = 6;
  }
  if (o.model.family == "vit" && !given.width) o.model.width = 1;
  if (o.learning_rate == 0) o.learning_rate = o.optimizer == "adamw" ? 1e-3f : 0.1f;
  if (given.fast_fraction && !given.fast_bytes) o.fast_bytes = 0;
}

std::string model_identity(const ModelConfig& m) {
  const std::string mlp = m.family == "vit" ? fmt::format(" mlp x{:g}", m.vit.mlp_ratio) : std::string();
  return fmt::format("{}{} width {} {}x{}x{} {} classes", model_name(m), mlp, m.width, m.channels, m.image_size,
                     m.image_size, m.classes);
}

}  // namespace cachedarrays::nn
