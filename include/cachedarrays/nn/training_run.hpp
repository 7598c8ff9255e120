// A whole training run from its options (nn/training_options.hpp): the data
// set opened, the model built and its footprint measured by a dry run, the
// tiers sized from it, the policy made (planned from kernel profiles when it
// plans ahead), the runtime and trainer built, and fit() run over the
// epochs, with a progress bar on a terminal and a line per epoch. What it
// did comes back as a TrainingReport, which print_training_report() and
// write_training_json() (nn/training_report.hpp) show: train_cnn is this,
// a command line and the report.
//
// The process around the run is the caller's: oneDNN's threads (OpenMP,
// which this library does not link), MPI, the stop requests and, for a
// planner that weighs candidate plans, the judge (sim/replay_judge.hpp, a
// layer beside this one).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/nn/communicator.hpp"
#include "cachedarrays/nn/fit.hpp"
#include "cachedarrays/nn/training_options.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"

namespace cachedarrays::nn {

/// What a planner that weighs candidate plans (ReDL's period sizes) is
/// judged on: a dry run's trace and program, and the machine of the run.
struct PlanJudgeInputs {
  std::shared_ptr<const Trace> trace;            ///< dry_run_trace() of the model
  std::shared_ptr<const plan::Program> program;  ///< its steady iteration
  std::uint64_t fast_bytes = 0;                  ///< the fast tier's capacity
  std::uint64_t slow_bytes = 0;                  ///< the slow tier's capacity
  unsigned mover_threads = 1;                    ///< the run's mover
};

/// Makes the judge of a plan-weighing policy from its inputs and the
/// policy's options (e.g. sim's replay_judge on ReplayJudgeMachine::as_planned).
using PlanJudgeMaker = std::function<policy::PlanJudge(const PlanJudgeInputs&, const policy::AutotmPolicyOptions&)>;

/// The process a run is part of, as its caller set it up.
struct TrainingProcess {
  /// The ranks of a data-parallel run; null: one process. Rank 0 prints,
  /// tests, writes checkpoints and the JSON.
  Communicator* communicator = nullptr;
  int local_ranks = 1;  ///< ranks on this machine: they share its cores and its slow-tier file's name
  /// oneDNN's threads as the caller set them (omp_get_max_threads()); 0:
  /// OpenMP's default, OMP_NUM_THREADS or else the machine's hardware threads.
  int compute_threads = 0;
  /// The judge of a planner that weighs candidate plans; empty: such a
  /// planner weighs them by its own model.
  PlanJudgeMaker judge;
  /// Asked before every step, as FitOptions::stop_requested is: not 0 ends
  /// the run at that step boundary, its checkpoint written (empty: it runs
  /// to its end). For example StopSignals::stop_requested(), as train_cnn
  /// passes it.
  std::function<int()> stop_requested;
};

/// One epoch of the run, as the report's table and JSON show it.
struct TrainedEpoch {
  FitEpoch epoch;                        ///< fit()'s figures
  std::uint64_t fast_to_slow_bytes = 0;  ///< copied from the fast tier to the slow one during it
  std::uint64_t slow_to_fast_bytes = 0;  ///< copied the other way
  double wall_seconds = 0;               ///< since the process started, setup included
  std::vector<float> losses;             ///< of its steps, in order
};

/// What a training run did: its epochs, its speed, the traffic between the
/// tiers, and what the policy and the data-parallel trainer counted.
struct TrainingReport {
  std::string model;                 ///< model_identity() of the trained model
  std::int64_t batch = 0;            ///< the (global) batch
  std::string data;                  ///< TrainingOptions::data
  std::string policy;                ///< the policy the run ended with (Runtime::policy_name)
  double fast_fraction = 0;          ///< TrainingOptions::fast_fraction
  int threads = 0;                   ///< oneDNN's threads
  std::string optimizer;             ///< "sgd" or "adamw"
  int epochs_asked = 0;              ///< TrainingOptions::epochs
  std::string checkpoint;            ///< TrainingOptions::checkpoint
  bool rank0 = true;                 ///< this process prints and writes for the run
  FitResult fit;                     ///< what fit() returned
  std::vector<TrainedEpoch> epochs;  ///< the epochs trained, in order
  double step_seconds = 0;           ///< all training steps
  double seconds_per_iteration = 0;  ///< the steps after the first (which creates oneDNN's primitives)
  Stats traffic;                     ///< the runtime's stats over the whole fit
  /// Bytes of optimizer state (SGD's momentum, AdamW's moments) the updates
  /// read per step, per device name; empty when no update ran.
  std::vector<std::pair<std::string, std::uint64_t>> optimizer_state_per_step;
  /// What the data-parallel trainer and the policy counted, a line each.
  std::vector<std::string> counters;
};

/// Runs the training `options` ask for in `process`, printing its setup, a
/// progress bar on a terminal and a line per epoch on standard output, and
/// returns what it did. Throws invalid_argument for options that cannot
/// run (naming the option and what is allowed), and whatever the data
/// set, the checkpoint, the tiers or oneDNN throw.
[[nodiscard]] TrainingReport run_training(TrainingOptions options, const TrainingProcess& process);

}  // namespace cachedarrays::nn
