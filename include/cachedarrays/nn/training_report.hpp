// A training run's report (nn/training_run.hpp) for a person and for a
// script: the table of its epochs and a summary on standard output, and the
// same figures as JSON that tools compare across runs.
#pragma once

#include <string>

#include "cachedarrays/nn/training_run.hpp"

namespace cachedarrays::nn {

/// Prints the report on standard output: a table of the epochs, the speed
/// after the first iteration, how the run ended, the traffic between the
/// tiers, where the updates found the optimizer's state, and the counters.
/// A run stopped before its first step prints only that it trained nothing.
void print_training_report(const TrainingReport& report);

/// Writes the report's epochs (losses, accuracy, speed, traffic), its speed
/// and how it ended to `path` as JSON. Writes nothing on a rank other than
/// 0, or for a run that trained no epoch. Throws invalid_argument when the
/// file cannot be written.
void write_training_json(const TrainingReport& report, const std::string& path);

}  // namespace cachedarrays::nn
