#include "cachedarrays/nn/training_report.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "cachedarrays/error.hpp"
#include "cachedarrays/nn/stop_signals.hpp"

namespace cachedarrays::nn {

namespace {

// Where a stopped run ended, as the summary says it.
std::string stopped_run_text(const TrainingReport& r) {
  return fmt::format("stopped by {} after {} of {} epochs, at batch {}", StopSignals::name(r.fit.stop_reason),
                     r.fit.epochs_done, r.epochs_asked, r.fit.batches_done);
}

void print_epoch_table(const TrainingReport& report) {
  fmt::print("\n{:>5}  {:>8}  {:>10}  {:>9}  {:>8}  {:>9}  {:>8}  {:>10}  {:>10}\n", "epoch", "batches", "train loss",
             "test loss", "test acc", "img/s", "seconds", "fast->slow", "slow->fast");
  for (const TrainedEpoch& r : report.epochs) {
    const FitEpoch& e = r.epoch;
    fmt::print("{:>5}  {:>8}  {:>10.4f}  {:>9}  {:>8}  {:>9.1f}  {:>8.1f}  {:>10}  {:>10}\n", e.epoch + 1, e.batches,
               e.train_loss, e.test_loss ? fmt::format("{:.4f}", *e.test_loss) : std::string("-"),
               e.test_accuracy ? fmt::format("{:.4f}", *e.test_accuracy) : std::string("-"), e.images_per_second,
               e.seconds + e.test_seconds, format_bytes(r.fast_to_slow_bytes), format_bytes(r.slow_to_fast_bytes));
  }
}

void print_summary(const TrainingReport& report) {
  const double steady = report.seconds_per_iteration;
  fmt::print("\nsummary: {} iterations, {:.3f} s per iteration, {:.1f} images/s (after the first){}\n",
             report.fit.iterations, steady, static_cast<double>(report.batch) / steady,
             report.fit.stop_reason != 0 ? " — " + stopped_run_text(report) +
                                               (report.checkpoint.empty() ? "" : ", checkpoint " + report.checkpoint)
             : report.fit.stopped_early ? std::string(" — stopped early by --iterations")
                                        : std::string());
  fmt::print("{}\n", report.traffic);
  if (!report.optimizer_state_per_step.empty()) {
    std::string line;
    for (const auto& [device, bytes] : report.optimizer_state_per_step) {
      line += fmt::format("{}{} on {}", line.empty() ? "" : ", ", format_bytes(bytes), device);
    }
    fmt::print("optimizer state ({}) read by the updates, per step: {}\n",
               report.optimizer == "adamw" ? "AdamW's two moments" : "SGD's momentum", line);
  }
}

nlohmann::json epochs_json(const TrainingReport& report) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const TrainedEpoch& r : report.epochs) {
    const FitEpoch& e = r.epoch;
    epochs.push_back({{"epoch", e.epoch + 1},
                      {"batches", e.batches},
                      {"train_loss", e.train_loss},
                      {"test_loss", e.test_loss ? nlohmann::json(*e.test_loss) : nlohmann::json()},
                      {"test_accuracy", e.test_accuracy ? nlohmann::json(*e.test_accuracy) : nlohmann::json()},
                      {"images_per_second", e.images_per_second},
                      {"seconds", e.seconds + e.test_seconds},
                      {"fast_to_slow_bytes", r.fast_to_slow_bytes},
                      {"slow_to_fast_bytes", r.slow_to_fast_bytes},
                      {"wall_seconds_since_start", r.wall_seconds},
                      {"losses", r.losses}});
  }
  return epochs;
}

}  // namespace

void print_training_report(const TrainingReport& report) {
  if (report.epochs.empty()) {
    if (report.fit.stop_reason != 0) {
      fmt::print("\nsummary: {} before the first step: nothing trained{}\n", stopped_run_text(report),
                 report.fit.resumed_epoch >= 0 ? ", the checkpoint is as it was" : "");
    }
  } else {
    print_epoch_table(report);
    print_summary(report);
  }
  for (const std::string& line : report.counters) fmt::print("{}\n", line);
}

void write_training_json(const TrainingReport& report, const std::string& path) {
  // Rank 0 writes it, as it prints: every rank's losses are the same.
  if (path.empty() || !report.rank0 || report.epochs.empty()) return;
  nlohmann::json state_per_step = nlohmann::json::object();
  for (const auto& [device, bytes] : report.optimizer_state_per_step) state_per_step[device] = bytes;
  const nlohmann::json summary = {
      {"model", report.model},
      {"batch", report.batch},
      {"data", report.data},
      {"policy", report.policy},
      {"fast_fraction", report.fast_fraction},
      {"threads", report.threads},
      {"iterations", report.fit.iterations},
      {"seconds_per_iteration", report.seconds_per_iteration},
      {"stopped_by",
       report.fit.stop_reason != 0 ? nlohmann::json(StopSignals::name(report.fit.stop_reason)) : nlohmann::json()},
      {"epochs_done", report.fit.epochs_done},
      {"optimizer", report.optimizer},
      {"optimizer_state_bytes_per_step", state_per_step},
      {"batches_done", report.fit.batches_done},
      {"epochs", epochs_json(report)}};
  std::ofstream out(path);
  out << summary.dump(1) << "\n";
  if (!out) throw invalid_argument("--json " + path + ": cannot write it; allowed: a file in a writable directory");
}

}  // namespace cachedarrays::nn
