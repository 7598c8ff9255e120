// A training run's progress bar on a terminal, redrawn in place; nothing
// otherwise (a log file gets the epoch lines only).
#pragma once

#include <fmt/core.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "cachedarrays/nn/fit.hpp"

namespace cachedarrays::nn::detail {

class ProgressBar {
 public:
  ProgressBar() : enabled_(::isatty(STDOUT_FILENO) != 0) {}

  // Redraws the bar after step `s` of `epochs`, with the epoch's mean loss
  // and speed so far and the time its remaining batches will take.
  void update(const FitStep& s, int epochs, std::int64_t batch) {
    if (!enabled_) return;
    if (s.batch == 0 || epoch_ != s.epoch) {
      epoch_ = s.epoch;
      seconds_ = 0;
      images_ = 0;
      loss_ = 0;
      steps_ = 0;
    }
    seconds_ += s.seconds;
    images_ += batch;
    loss_ += s.loss;
    ++steps_;
    const std::int64_t done = s.batch + 1;
    const double rate = static_cast<double>(images_) / seconds_;
    const double eta = static_cast<double>((s.batches - done) * batch) / rate;
    constexpr int width = 24;
    const int filled = static_cast<int>(width * done / s.batches);
    fmt::print("\repoch {}/{} [{}{}] {}/{}  loss {:.4f}  {:.0f} img/s  lr {:.4g}  ETA {}:{:02d} ", s.epoch + 1, epochs,
               std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '.'), done, s.batches,
               loss_ / static_cast<double>(steps_), rate, s.learning_rate, static_cast<int>(eta) / 60,
               static_cast<int>(eta) % 60);
    std::fflush(stdout);
  }
  // Clears the bar before a line is printed.
  void clear() {
    if (enabled_) fmt::print("\r{:<110}\r", "");
  }

 private:
  bool enabled_;
  std::int64_t epoch_ = -1;
  double seconds_ = 0;
  std::int64_t images_ = 0;
  double loss_ = 0;
  std::int64_t steps_ = 0;
};

}  // namespace cachedarrays::nn::detail
