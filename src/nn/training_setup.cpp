#include "nn/training_setup.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/nn/planned_footprint.hpp"
#include "cachedarrays/nn/profiler.hpp"
#include "cachedarrays/plan/offsets/offset_planner.hpp"
#include "cachedarrays/plan/schedule/lookahead.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/profiled_lookahead.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/runtime/environment.hpp"

namespace cachedarrays::nn::detail {

namespace {

// Thousands grouped with commas: 60,000.
std::string grouped_thousands(std::int64_t n) {
  const std::string digits = std::to_string(n);
  std::string grouped;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

// The data set a run trains on, named as a person knows it, with its sizes.
std::string describe_training_data(const std::string& spec, const DataSplits& data) {
  const std::string source = spec.rfind("fashion-mnist", 0) == 0 ? "Fashion-MNIST (Debian's dataset-fashion-mnist)"
                             : spec == "synthetic"               ? "synthetic (random images and labels)"
                                                                 : spec;
  const Dims dims = data.train->image_dims();
  const std::string sizes = spec == "synthetic"
                                ? std::string("generated per batch")
                                : fmt::format("{} training and {} test images", grouped_thousands(data.train->size()),
                                              data.test ? grouped_thousands(data.test->size()) : std::string("no"));
  return fmt::format("{}: {}, {}x{}x{}, {} classes", source, sizes, dims.at(0), dims.at(1), dims.at(2),
                     data.train->classes());
}

// The slow tier the profiles time kernels on: the emulated one, Optane
// when the run emulates none.
std::string profiled_slow_tier(const TrainingOptions& o) {
  return o.slow_emulation == "none" ? "optane" : o.slow_emulation;
}

ProfilerOptions training_profiler_options(const TrainingOptions& o, const TrainerOptions& trainer,
                                          const TrainingProcess& process) {
  ProfilerOptions profiler;
  profiler.compute_threads = static_cast<unsigned>(process.compute_threads);  // the profiles' key
  profiler.slow_tier = profiled_slow_tier(o);
  profiler.trainer = trainer;  // its optimizer's update kernels are profiled too
  return profiler;
}

// A policy that plans ahead (autotm-*, autoswap:*, redl) from the model's
// kernel profiles, measured once per machine into the cache file; the
// profiling and the solve print their progress. A planner that weighs
// candidate plans has each judged by the process's judge, on a dry run of
// the model and the run's tiers.
std::unique_ptr<policy::Policy> planning_policy(const TrainingOptions& o, const policy::PolicyDescriptor& policy,
                                                const std::function<Graph()>& build, const TrainerOptions& trainer,
                                                const std::vector<DeviceSpec>& specs, const TrainingProcess& process) {
  const std::string cache = o.profile_cache.empty() ? default_profile_cache() : o.profile_cache;
  fmt::print(
      "{}: kernel profiles from {} (measured there once per machine: every kernel all in the fast tier, "
      "then all on the emulated {} tier)...\n",
      policy.name(), cache, profiled_slow_tier(o));
  std::fflush(stdout);
  bool measured = false;
  const auto t0 = std::chrono::steady_clock::now();
  policy::AutotmPolicyOptions options =
      autotm_policy_options(policy, build, cache, training_profiler_options(o, trainer, process), &measured);
  fmt::print("{}: kernel profiles {} in {:.1f} s\n", policy.name(), measured ? "measured and cached" : "loaded",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  options.log = [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  if (options.planner && specs.size() == 2 && process.judge) {
    PlanJudgeInputs inputs;
    inputs.trace = std::make_shared<const Trace>(dry_run_trace(build, trainer, steady_trace_iterations));
    inputs.program =
        std::make_shared<const plan::Program>(plan::Program::from_trace(*inputs.trace, steady_trace_iteration));
    inputs.fast_bytes = specs[0].capacity;
    inputs.slow_bytes = specs[1].capacity;
    inputs.mover_threads = o.mover_threads;
    options.judge = process.judge(inputs, options);
  }
  return std::make_unique<policy::AutotmPolicy>(std::move(options));
}

// How far a policy that looks ahead looks: chosen from the kernel profiles
// of the profile cache, which time every kernel all-fast and on the
// emulated slow tier.
policy::Lookahead profiled_training_lookahead(const TrainingOptions& o, const std::function<Graph()>& build,
                                              const TrainerOptions& trainer, const plan::Program& program,
                                              const TrainingProcess& process) {
  const plan::KernelProfiles profiles =
      profile_model(build, o.profile_cache, training_profiler_options(o, trainer, process));
  const EmulationProfile tier = *emulation::profile(profiled_slow_tier(o));
  plan::LookaheadChoice choice;
  const policy::Lookahead lookahead = policy::profiled_lookahead(
      program, profiles, {tier.dram_read_gbps, tier.dram_write_gbps}, {tier.read_gbps, tier.write_gbps}, &choice);
  fmt::print("lookahead from the kernel profiles ({}): {} kernels ({} kernels' copies longer than any window)\n",
             o.profile_cache, lookahead.kernels, choice.uncovered);
  return lookahead;
}

}  // namespace

void prepare_training(TrainingOptions& o, const TrainingProcess& process) {
  if (!o.json_path.empty()) {
    const std::filesystem::path dir = std::filesystem::absolute(o.json_path).parent_path();
    if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0) {
      throw invalid_argument("--json " + o.json_path + ": its directory " + dir.string() +
                             " does not exist or is not writable; allowed: a file in a writable directory");
    }
  }
  const int ranks = process.communicator != nullptr ? process.communicator->size() : 1;
  if (ranks > 1 && !o.slow_path.empty() && !std::filesystem::is_directory(o.slow_path)) {
    o.slow_path += fmt::format(".rank{}", process.communicator->rank());
  }
}

DataSplits open_training_data(TrainingOptions& o) {
  ModelConfig& model = o.model;
  DataSplits data = open_data(o.data, {model.channels, model.image_size, model.image_size}, model.classes, o.seed);
  const Dims image = data.train->image_dims();
  if (image.at(1) != image.at(2)) {
    throw invalid_argument(
        fmt::format("--data {} has {}x{} images; the models take square ones", o.data, image.at(1), image.at(2)));
  }
  model.channels = image.at(0);
  model.image_size = image.at(1);
  model.classes = data.train->classes();
  fmt::print("data: {}\n", describe_training_data(o.data, data));
  return data;
}

TrainerOptions training_trainer_options(const TrainingOptions& o, Communicator* communicator) {
  TrainerOptions options;
  options.seed = o.seed;
  options.optimizer = parse_optimizer(o.optimizer);
  options.sgd.learning_rate = o.learning_rate;
  options.adamw.learning_rate = o.learning_rate;
  if (o.weight_decay >= 0) {
    options.sgd.weight_decay = o.weight_decay;
    options.adamw.weight_decay = o.weight_decay;
  }
  options.data_parallel.communicator = communicator;
  options.data_parallel.bucket_bytes = static_cast<std::uint64_t>(std::llround(o.bucket_mib * 1024 * 1024));
  options.update_in_backward = !o.update_after_backward;
  options.parameters_in_primitive_layout = !o.plain_parameters;
  return options;
}

TrainingFootprints measure_training_footprints(const TrainingOptions& o, const std::function<Graph()>& build,
                                               const TrainerOptions& trainer, const plan::Program& program) {
  TrainingFootprints f;
  f.online = measure_footprint(build, trainer);
  f.sized = f.online;
  if (o.planner != "online") {
    const PlannedFootprint planned =
        measure_planned_footprint(build, program, plan::parse_offset_planner(o.planner), trainer);
    f.sized = planned.footprint;
    fmt::print("offset plan ({}): footprint {} ({:.4f}x its lower bound {}), online allocator {}\n", o.planner,
               format_bytes(planned.footprint),
               static_cast<double>(planned.footprint) / static_cast<double>(planned.lower_bound),
               format_bytes(planned.lower_bound), format_bytes(f.online));
  }
  return f;
}

std::uint64_t training_fast_bytes(const TrainingOptions& o, std::uint64_t footprint) {
  std::uint64_t fast_bytes = o.fast_bytes;
  if (fast_bytes == 0) {
    fast_bytes = static_cast<std::uint64_t>(std::llround(o.fast_fraction * static_cast<double>(footprint)));
  }
  return std::max<std::uint64_t>(fast_bytes, 4096);
}

std::vector<DeviceSpec> training_devices(const TrainingOptions& o, std::uint64_t footprint, std::uint64_t fast_bytes) {
  if (!o.memory_mode) {
    // The sizes are settled (explicit settings over the environment); the
    // places come from the options and the environment
    // (CACHEDARRAYS_FAST_NODE, _SLOW_NODE).
    RuntimeDefaults defaults;
    defaults.fast_bytes = fast_bytes;
    defaults.footprint = footprint;
    defaults.emulation = o.slow_emulation;
    EnvironmentSettings places;
    places.fast_node = o.env.fast_node;
    places.slow_bytes = o.env.slow_bytes;
    if (!o.slow_path.empty()) {
      places.slow_path = o.slow_path;
    } else {
      places.slow_node = o.env.slow_node;
    }
    return devices_from_environment(defaults, places);
  }
  // 2LM: one device, no software placement; the cache model charges each
  // access its misses (emulation.hpp). It holds everything, with room for
  // fragmentation.
  DeviceSpec slow = dax_file(o.slow_path, footprint + footprint / 2 + (64ull << 20), "slow");
  const auto profile = emulation::profile(profiled_slow_tier(o));
  slow.emulation = emulation::memory_mode(*profile, emulation::memory_mode_cache_within(fast_bytes));
  return {slow};
}

TrainingPolicyChoice choose_training_policy(const TrainingOptions& o) {
  TrainingPolicyChoice chosen{policy::Registry::builtin().describe(o.memory_mode ? "first-touch" : o.policy), {}};
  if (chosen.descriptor.memory_mode()) {
    throw invalid_argument("--policy " + o.policy +
                           " is the hardware's memory mode, not a policy; emulate it "
                           "with --memory-mode");
  }
  if (o.planner == "online" || o.memory_mode) return chosen;
  if (!chosen.descriptor.takes_offset_planner()) {
    throw invalid_argument("--planner " + o.planner +
                           " places objects for a ca-l*m* policy (ca-lm, ca-lma, "
                           "ca-lmp, ca-lmpa, planned); --policy " +
                           o.policy + " does not take an offset plan");
  }
  chosen.options.offsets = plan::parse_offset_planner(o.planner);
  return chosen;
}

std::unique_ptr<policy::Policy> make_training_policy(const TrainingOptions& o, const TrainingPolicyChoice& chosen,
                                                     const std::function<Graph()>& build, const TrainerOptions& trainer,
                                                     const plan::Program& program, const std::vector<DeviceSpec>& specs,
                                                     const TrainingProcess& process) {
  if (chosen.descriptor.plans_ahead()) return planning_policy(o, chosen.descriptor, build, trainer, specs, process);
  policy::PolicyOptions options = chosen.options;
  if (!o.profile_cache.empty() && chosen.descriptor.takes_lookahead()) {
    options.lookahead = profiled_training_lookahead(o, build, trainer, program, process);
  }
  return chosen.descriptor.make(options);
}

}  // namespace cachedarrays::nn::detail
