// What the benchmarks that train CNNs share (paper_reproduction,
// model_accuracy): the small configurations that run on this machine, the
// fast budget of a fraction of the footprint, a dry-run trace, and one
// measured run of a policy with the slow tier emulated as Optane — so that
// a modeled figure and the measurement it is checked against come from the
// same run loop.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cachedarrays/cachedarrays.hpp>
#include <cachedarrays/manager/emulation.hpp>
#include <cachedarrays/nn/data.hpp>
#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/profiler.hpp>
#include <cachedarrays/nn/trainer.hpp>

#include "bench_support.hpp"
#include "support/compute_rate.hpp"

namespace cachedarrays::bench {

// The profiler's options and this machine's compute rate per core are the
// command-line tools' as well (tools/support).
using tools::profiler_options;
using tools::rate_per_core;
using tools::RatePerCore;

// "resnet-18 b32".
inline std::string label(const nn::ModelConfig& c) { return fmt::format("{} b{}", nn::model_name(c), c.batch); }

// How `config` trains: a ViT with AdamW, as transformers are trained (and
// its two moments per parameter are part of every iteration), the CNNs with
// SGD, as their papers train them.
inline nn::TrainerOptions trainer_options_for(const nn::ModelConfig& config) {
  nn::TrainerOptions options;
  if (config.family == "vit") options.optimizer = nn::Optimizer::adamw;
  return options;
}

// The profiler's options for `config`'s iterations (its optimizer's update
// kernels are profiled too).
inline nn::ProfilerOptions profiler_options_for(const nn::ModelConfig& config) {
  nn::ProfilerOptions options = profiler_options();
  options.trainer = trainer_options_for(config);
  return options;
}

// The small configuration of `family` that runs on this machine: small
// enough for it, large enough that one iteration lasts a good fraction of a
// second with compute, not bookkeeping, dominating. A value of 0 takes the
// default (of --quick when `quick`).
inline nn::ModelConfig small_config(const std::string& family, bool quick, std::int64_t batch = 0,
                                    std::int64_t image_size = 0, double width = 0) {
  const std::map<std::string, int> small_depth{
      {"resnet", 18}, {"densenet", 121}, {"vgg", 16}, {"inception", 4}, {"vit", 6}};
  // The ViT is the one Fashion-MNIST trains (models.hpp TransformerShape's
  // defaults), at the batch the accuracy runs use.
  if (family == "vit") {
    nn::ModelConfig c;
    c.family = family;
    c.depth = small_depth.at(family);
    c.batch = batch > 0 ? batch : quick ? 4 : 128;
    c.image_size = image_size > 0 ? image_size : quick ? 16 : 28;
    c.channels = 1;
    c.classes = 10;
    c.width = width > 0 ? width : 1.0;
    return c;
  }
  // Inception v4 has one depth and needs images of at least 75x75: its
  // small form is narrower instead of shallower, so that an iteration
  // stays as short as the others'.
  const bool inception = family == "inception";
  nn::ModelConfig c;
  c.family = family;
  c.depth = small_depth.at(family);
  c.batch = batch > 0 ? batch : quick ? 4 : family == "resnet" ? 32 : inception ? 8 : 16;
  c.image_size = image_size > 0       ? image_size
                 : inception          ? (quick ? 75 : 96)
                 : quick              ? 32
                 : family == "resnet" ? 96
                                      : 64;
  c.classes = 10;
  c.width = width > 0 ? width : quick ? 0.25 : inception ? 0.5 : 1.0;
  return c;
}

// A model, its footprint, its program and one batch of synthetic data: what
// every measured run of it needs.
struct TrainingSetup {
  explicit TrainingSetup(nn::ModelConfig c)
      : config(std::move(c)),
        options(trainer_options_for(config)),
        footprint(nn::measure_footprint([&] { return nn::build_model(config); }, options)),
        program(nn::dry_run_program([&] { return nn::build_model(config); }, options)),
        images(static_cast<std::size_t>(config.batch * config.channels * config.image_size * config.image_size)),
        labels(static_cast<std::size_t>(config.batch)) {
    auto data = nn::synthetic_dataset({config.channels, config.image_size, config.image_size}, config.classes, 1);
    data->next_batch(images, labels);
  }
  nn::ModelConfig config;
  nn::TrainerOptions options;
  std::uint64_t footprint;
  plan::Program program;
  std::vector<float> images;
  std::vector<float> labels;
};

// The A modes' lookahead from the model's kernel profiles
// (policy::profiled_lookahead), the slow tier emulated as Optane.
inline policy::Lookahead profiled_lookahead(const TrainingSetup& setup, const std::string& profile_cache,
                                            plan::LookaheadChoice* choice = nullptr) {
  const plan::KernelProfiles profiles = nn::profile_model([&] { return nn::build_model(setup.config); }, profile_cache,
                                                          profiler_options_for(setup.config));
  const EmulationProfile optane = *emulation::profile("optane");
  return policy::profiled_lookahead(setup.program, profiles, {optane.dram_read_gbps, optane.dram_write_gbps},
                                    {optane.read_gbps, optane.write_gbps}, choice);
}

// The policy `planned`, which plans ahead (autotm-*, autoswap:*, redl), its
// plan's kernel times from `time_model` (null: from the model's kernel
// profiles in `profile_cache`, the slow tier emulated as Optane); the
// solve's progress is not printed. `plan_seconds` > 0: the plan's time limit
// (AutotmOptions::time_limit_seconds). `judge_on`, given (the fast and slow
// tiers' bytes): a planner that weighs candidate plans (ReDL) has them judged
// by a replay of a dry run of `config` on tiers of those sizes
// (sim/replay_judge.hpp), with the plan's own tier bandwidths and kernel
// time model and `mover_threads` copies side by side.
inline std::unique_ptr<policy::Policy> autotm_policy(
    const policy::PolicyDescriptor& planned, const nn::ModelConfig& config,
    std::shared_ptr<const plan::KernelTimeModel> time_model, const std::string& profile_cache, double plan_seconds = 0,
    std::optional<std::pair<std::uint64_t, std::uint64_t>> judge_on = std::nullopt,
    unsigned mover_threads = MoverOptions{}.threads) {
  policy::AutotmPolicyOptions options;
  if (time_model) {
    options = planned.planned_options().value();
    options.time_model = std::move(time_model);
  } else {
    options = nn::autotm_policy_options(
        planned, [&] { return nn::build_model(config); }, profile_cache, profiler_options_for(config));
  }
  if (plan_seconds > 0) options.solver.time_limit_seconds = plan_seconds;
  options.log = [](const std::string& line) {
    if (line.rfind("warning", 0) == 0) fmt::print(stderr, "  {}\n", line);
  };
  if (judge_on && options.planner) {
    const auto build = [&] { return nn::build_model(config); };
    const auto trace = std::make_shared<const Trace>(
        nn::dry_run_trace(build, trainer_options_for(config), nn::steady_trace_iterations));
    const auto program =
        std::make_shared<const plan::Program>(plan::Program::from_trace(*trace, nn::steady_trace_iteration));
    options.judge = replay_judge(
        trace, program, ReplayJudgeMachine::as_planned(judge_on->first, judge_on->second, options, mover_threads),
        options);
  }
  return std::make_unique<policy::AutotmPolicy>(std::move(options));
}

struct MeasuredRun {
  double seconds = 0;       // the median of the timed iterations
  double mean_seconds = 0;  // their mean: what they cost in all, a chooser's trials included
  Stats stats;              // over all the timed iterations
  int iterations = 0;
  std::string note;  // an AutoTM plan's summary (AutotmPolicy::plan_summary), or what auto chose
  // Copy time per iteration the compute threads waited for: synchronous
  // copies to or from the emulated tier plus waits at the mover's fences.
  [[nodiscard]] double exposed_copy_seconds() const {
    return static_cast<double>(stats.emulated_sync_copy_ns + stats.async.fence_wait_ns) / 1e9 / iterations;
  }
};

// One measured run: a fresh runtime with a fast DRAM tier of `fast` bytes
// and a slow DAX tier emulated as Optane (for a memory mode, 2lm:m: one
// emulated-Optane device in memory mode whose DRAM cache is the fast budget,
// as the paper's 2LM runs: nothing moved by software, retired tensors freed
// at once; a memory mode that is modeled only is refused), the
// policy given the program when it plans ahead, two warm-up iterations (first
// touches, primitive creation) and `iterations` timed ones. `mover`: the
// runtime's asynchronous mover; `lookahead`, given, the A modes' window
// (else the policy's default); `profile_cache`, the kernel profiles the
// planned policies plan from (ReDL's candidate plans judged, when `judge`,
// by a replay of this run's machine, modeled: its tiers' bandwidths, the
// profiled kernels).
inline MeasuredRun measure_training(const TrainingSetup& setup, const std::string& policy, std::uint64_t fast,
                                    int iterations, const MoverOptions& mover = {},
                                    std::optional<policy::Lookahead> lookahead = std::nullopt,
                                    const std::string& profile_cache = nn::default_profile_cache(), bool judge = true) {
  const policy::PolicyDescriptor described = policy::Registry::builtin().describe(policy);
  if (described.modeled_only()) {
    throw invalid_argument("measure_training: '" + policy + "' is modeled only; it cannot be measured");
  }
  const std::uint64_t slow_bytes = 2 * setup.footprint + (1 << 20);
  const EmulationProfile optane = *emulation::profile("optane");
  std::vector<DeviceSpec> devices;
  std::unique_ptr<policy::Policy> chosen;
  if (described.memory_mode()) {
    // Nothing placed by software: every object on the one device.
    DeviceSpec nvram = dax_file({}, slow_bytes, "nvram");
    nvram.emulation = emulation::memory_mode(optane, emulation::memory_mode_cache_within(fast));
    devices = {nvram};
    chosen = std::make_unique<policy::SingleTier>(policy::SingleTier::Tier::fastest);
  } else {
    DeviceSpec slow = dax_file({}, slow_bytes, "slow");
    slow.emulation = optane;
    devices = {dram(fast, "fast"), slow};
    chosen = described.plans_ahead()
                 ? autotm_policy(described, setup.config, nullptr, profile_cache, 0,
                                 judge ? std::optional(std::pair(fast, slow_bytes)) : std::nullopt, mover.threads)
                 : described.make({.lookahead = lookahead});
  }
  Runtime rt(devices, std::move(chosen), mover);
  if (described.needs_program()) rt.set_program(setup.program);
  nn::Trainer trainer(&rt, nn::build_model(setup.config), setup.options);
  const auto step = [&] {
    return seconds_of([&] {
      (void)trainer.step(setup.images, setup.labels);
      rt.collect();
    });
  };
  // Two warm-up iterations: the first creates oneDNN's primitives (and so
  // runs slower than the rest), the second brings the objects to where a
  // plan wants them (AutoTM's moves from CA:LM's placement of the first);
  // the timed ones are the steady state the papers measure ("until
  // execution time per iteration was constant").
  (void)step();
  (void)step();
  const Stats before = rt.stats();
  std::vector<double> seconds;
  for (int i = 0; i < iterations; ++i) seconds.push_back(step());
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
  std::string note;
  if (const auto* autotm = dynamic_cast<const policy::AutotmPolicy*>(&rt.policy())) note = autotm->plan_summary();
  if (const auto* chooser = dynamic_cast<const policy::AutoPolicy*>(&rt.policy())) {
    const policy::AutoDecision& d = chooser->decision();
    note = d.decisions == 0 ? fmt::format("undecided, running {}", chooser->running())
                            : fmt::format("chose {} at iteration {} ({} trials, {} decisions)", d.chosen, d.decided_at,
                                          d.tried.size(), d.decisions);
  }
  return {median(seconds), mean, rt.stats().since(before), iterations, note};
}

}  // namespace cachedarrays::bench
