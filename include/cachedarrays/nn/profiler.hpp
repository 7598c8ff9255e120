// The kernel profiler (plan/program/kernel_profile.hpp; AutoTM section 3): measures
// every distinct kernel of a model's training iteration with all its
// arguments in the fast tier (a runtime whose only device is DRAM) and with
// all of them in the slow tier (a runtime whose only device is an emulated
// slow tier, manager/emulation.hpp), and keeps the profiles in a cache file
// keyed by the machine, so that a second run loads them.
//
// Kernels are timed where they run, in whole training iterations (after one
// warm-up iteration), from the runtime's trace: each sample is one kernel's
// kernel_begin to kernel_end, and a profile's time is the median of all the
// samples of its signature. AutoTM profiled kernels one at a time behind
// streaming copies, i.e. with cold caches, and reports that this
// overestimates kernels whose inputs a real run finds in the CPU caches
// (its section 6.5); timing them in place keeps the caches as the run has them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cachedarrays/nn/graph.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/policy_descriptor.hpp"

namespace cachedarrays::nn {

/// How the kernel profiler measures: how many iterations, against which
/// emulated slow tier, on how many threads.
struct ProfilerOptions {
  int iterations = 3;                ///< timed iterations per tier, after one warm-up
  std::string slow_tier = "optane";  ///< emulation::profile() name of the slow tier
  /// The threads oneDNN's kernels run on (the caller's OpenMP setting,
  /// omp_get_max_threads()); 0: this machine's hardware threads. Part of the
  /// cache key: a kernel on one thread is not the kernel on two.
  unsigned compute_threads = 0;
  /// How the profiled iterations train: the optimizer's update kernels
  /// (SGD's, AdamW's) are kernels of the iteration like any other.
  TrainerOptions trainer;
};

/// This machine as a profile cache key: the CPU's model name
/// (/proc/cpuinfo), the threads the kernels run on (`compute_threads`; 0:
/// its hardware threads), dnnl_version(), and `slow_tier`.
[[nodiscard]] plan::MachineKey this_machine(const std::string& slow_tier, unsigned compute_threads = 0);

/// The distinct kernel signatures of a steady-state training iteration (the
/// second) of the graph `build` makes, trained as `trainer` says, in the order they first run, from a
/// shape-only dry run: no memory, no kernels.
[[nodiscard]] std::vector<std::string> kernel_signatures(const std::function<Graph()>& build,
                                                         const TrainerOptions& trainer = {});

/// Where profiles are cached unless the user says otherwise:
/// $XDG_CACHE_HOME/cachedarrays, else ~/.cache/cachedarrays, else the working
/// directory; the directory is made. One file serves every model.
[[nodiscard]] std::string default_profile_cache();

/// Measures the profile of every kernel of build()'s training iterations,
/// once with all its arguments in the fast tier and once with all of them in
/// the emulated slow tier, as the median of the kernel's samples in whole
/// iterations after a warm-up (see the file comment). The batch is a fixed pattern of values in [0, 1) with
/// every label 0: kernel times do not depend on the values. Throws
/// invalid_argument for iterations < 1 or a slow tier emulation::profile()
/// does not know (or "none").
[[nodiscard]] plan::KernelProfiles measure_profiles(const std::function<Graph()>& build,
                                                    const ProfilerOptions& options = {});

/// The profiles of build()'s kernels from the cache file `cache_path`, measured
/// (and the file written) when it lacks them or was measured on another
/// machine (plan::load_or_measure). `measured`, when given, says whether
/// this call measured.
[[nodiscard]] plan::KernelProfiles profile_model(const std::function<Graph()>& build, const std::string& cache_path,
                                                 const ProfilerOptions& options = {}, bool* measured = nullptr);

/// The options of `policy`, a policy that plans ahead (AutoTM's
/// autotm-static, -sync, -async; AutoSwap's `autoswap:<score>`; ReDL's redl:
/// policy::PolicyDescriptor::plans_ahead), planning build()'s iterations from
/// their kernel profiles (profile_model with `cache_path` and `options`): the
/// formulation, the fast and slow tiers' bandwidths of the emulation profile
/// options.slow_tier, and plan::profiled_time_model over the profiles. The
/// caller adds the log. Throws invalid_argument for a policy that does not
/// plan ahead, and what profile_model throws.
[[nodiscard]] policy::AutotmPolicyOptions autotm_policy_options(const policy::PolicyDescriptor& policy,
                                                                const std::function<Graph()>& build,
                                                                const std::string& cache_path,
                                                                const ProfilerOptions& options = {},
                                                                bool* measured = nullptr);
/// autotm_policy_options() of the built-in policy named `policy_name`
/// (policy::Registry::builtin().describe); the same for a name it does not
/// know.
[[nodiscard]] policy::AutotmPolicyOptions autotm_policy_options(const std::string& policy_name,
                                                                const std::function<Graph()>& build,
                                                                const std::string& cache_path,
                                                                const ProfilerOptions& options = {},
                                                                bool* measured = nullptr);

}  // namespace cachedarrays::nn
