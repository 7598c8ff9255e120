// What run_training (nn/training_run.hpp) settles before the first step:
// the data set, the trainer's options, the footprint, the tiers and the
// policy, each from the run's options.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/nn/data.hpp"
#include "cachedarrays/nn/graph.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/nn/training_run.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/policy/policy_descriptor.hpp"

namespace cachedarrays::nn::detail {

// Checks that the JSON file can be written (refused before the training it
// would record, not after) and gives each rank of a data-parallel run its
// own slow-tier file.
void prepare_training(TrainingOptions& o, const TrainingProcess& process);

// The data set o.data names, printed; it dictates the model's image shape
// and class count, which it sets in o.model.
DataSplits open_training_data(TrainingOptions& o);

TrainerOptions training_trainer_options(const TrainingOptions& o, Communicator* communicator);

// The footprint of one iteration: the online allocator's, and with a
// planner the planned one, which fast_fraction is then a share of.
struct TrainingFootprints {
  std::uint64_t online = 0;
  std::uint64_t sized = 0;  // what fast_fraction is a share of
};

TrainingFootprints measure_training_footprints(const TrainingOptions& o, const std::function<Graph()>& build,
                                               const TrainerOptions& trainer, const plan::Program& program);

// The fast tier's size: fast_bytes, or fast_fraction of the footprint.
std::uint64_t training_fast_bytes(const TrainingOptions& o, std::uint64_t footprint);

// The tiers: a fast one of fast_bytes and a slow one that holds everything
// the fast one does not; or, in memory mode, the slow one alone.
std::vector<DeviceSpec> training_devices(const TrainingOptions& o, std::uint64_t footprint, std::uint64_t fast_bytes);

// The policy o.policy names (first-touch in memory mode: the one device
// holds everything) and the options o.planner adds to it.
struct TrainingPolicyChoice {
  policy::PolicyDescriptor descriptor;
  policy::PolicyOptions options;
};

TrainingPolicyChoice choose_training_policy(const TrainingOptions& o);

// The policy the run trains under: one that plans ahead planned from the
// kernel profiles, one that looks ahead looking as far as they say (with a
// profile cache), any other as the choice makes it.
std::unique_ptr<policy::Policy> make_training_policy(const TrainingOptions& o, const TrainingPolicyChoice& chosen,
                                                     const std::function<Graph()>& build, const TrainerOptions& trainer,
                                                     const plan::Program& program, const std::vector<DeviceSpec>& specs,
                                                     const TrainingProcess& process);

}  // namespace cachedarrays::nn::detail
