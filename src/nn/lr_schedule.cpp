#include "cachedarrays/nn/lr_schedule.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include <fmt/core.h>

#include "cachedarrays/error.hpp"

namespace cachedarrays::nn {

namespace {

constexpr std::string_view forms =
    "use constant, cosine, warmup-cosine:EPOCHS (e.g. warmup-cosine:5) or step:EPOCHS:GAMMA (e.g. step:30:0.1)";

template <typename T>
bool parse_number(std::string_view text, T& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

LearningRateSchedule LearningRateSchedule::parse(std::string_view spec, float base) {
  if (!std::isfinite(base) || base <= 0) {
    throw invalid_argument(fmt::format("cachedarrays::nn: learning rate {}; it must be finite and above 0", base));
  }
  LearningRateSchedule s;
  s.base_ = base;
  if (spec == "constant") return s;
  if (spec == "cosine") {
    s.kind_ = Kind::cosine;
    return s;
  }
  constexpr std::string_view warmup = "warmup-cosine:";
  if (spec.starts_with(warmup)) {
    std::int64_t epochs = -1;
    if (!parse_number(spec.substr(warmup.size()), epochs) || epochs < 0) {
      throw invalid_argument("cachedarrays::nn: learning-rate schedule \"" + std::string(spec) +
                             "\" is not warmup-cosine:EPOCHS with a whole number of warm-up EPOCHS (0 or more); " +
                             std::string(forms));
    }
    s.kind_ = Kind::warmup_cosine;
    s.step_epochs_ = epochs;
    return s;
  }
  constexpr std::string_view step = "step:";
  if (spec.starts_with(step)) {
    const std::string_view rest = spec.substr(step.size());
    const std::size_t colon = rest.find(':');
    std::int64_t epochs = 0;
    double gamma = 0;
    if (colon == std::string_view::npos || !parse_number(rest.substr(0, colon), epochs) ||
        !parse_number(rest.substr(colon + 1), gamma)) {
      throw invalid_argument("cachedarrays::nn: learning-rate schedule \"" + std::string(spec) +
                             "\" is not step:EPOCHS:GAMMA with an integer EPOCHS and a number GAMMA; " +
                             std::string(forms));
    }
    if (epochs < 1 || !(gamma > 0) || !std::isfinite(gamma)) {
      throw invalid_argument("cachedarrays::nn: learning-rate schedule \"" + std::string(spec) +
                             "\": EPOCHS must be at least 1 and GAMMA finite and above 0; " + std::string(forms));
    }
    s.kind_ = Kind::step;
    s.step_epochs_ = epochs;
    s.gamma_ = gamma;
    return s;
  }
  throw invalid_argument("cachedarrays::nn: unknown learning-rate schedule \"" + std::string(spec) + "\"; " +
                         std::string(forms));
}

float LearningRateSchedule::at(std::int64_t epoch, std::int64_t batch, std::int64_t batches_per_epoch,
                               std::int64_t epochs) const {
  switch (kind_) {
    case Kind::constant: return base_;
    case Kind::step: return static_cast<float>(base_ * std::pow(gamma_, static_cast<double>(epoch / step_epochs_)));
    case Kind::cosine: {
      const double total = static_cast<double>(std::max<std::int64_t>(1, epochs * batches_per_epoch));
      const double done = std::min(total, static_cast<double>(epoch * batches_per_epoch + batch));
      return static_cast<float>(0.5 * base_ * (1 + std::cos(std::numbers::pi * done / total)));
    }
    case Kind::warmup_cosine: {
      const std::int64_t total = std::max<std::int64_t>(1, epochs * batches_per_epoch);
      const std::int64_t warm = std::min(total, step_epochs_ * batches_per_epoch);
      const std::int64_t s = epoch * batches_per_epoch + batch;
      if (s < warm)
        return static_cast<float>(static_cast<double>(base_) * static_cast<double>(s + 1) / static_cast<double>(warm));
      const double span = static_cast<double>(std::max<std::int64_t>(1, total - warm));
      const double done = std::min(span, static_cast<double>(s - warm));
      return static_cast<float>(0.5 * base_ * (1 + std::cos(std::numbers::pi * done / span)));
    }
  }
  return base_;
}

std::string LearningRateSchedule::describe() const {
  switch (kind_) {
    case Kind::constant: return fmt::format("constant {:g}", base_);
    case Kind::step: return fmt::format("{:g}, times {:g} every {} epochs", base_, gamma_, step_epochs_);
    case Kind::cosine: return fmt::format("cosine from {:g} to 0", base_);
    case Kind::warmup_cosine:
      return fmt::format("linear warm-up to {:g} over {} epochs, then cosine to 0", base_, step_epochs_);
  }
  return {};
}

}  // namespace cachedarrays::nn
