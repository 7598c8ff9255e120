// The 2LM simulation (paper V's hardware baseline, modeled): the
// application events of a trace replayed on a machine whose DRAM is a
// direct-mapped cache in front of NVRAM, the cache being the line-exact
// model of manager/two_level_memory.hpp. Modeled figures are a model, not a
// measurement: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/sim/replay.hpp"

namespace cachedarrays {

/// What simulate_2lm() gives. Of a trace of several iterations, the time is
/// the mean iteration of its steady state (sim/replay.hpp steady_window) and
/// the counters and rates those of its `counters_iterations` iterations; of
/// a trace of one, the whole trace's.
struct TwoLmResult {
  TwoLmCounters counters;                 ///< the cache model's line counts and traffic
  double hit_rate = 0;                    ///< of all line accesses
  double clean_miss_rate = 0;             ///< misses whose victim was clean or empty, of all line accesses
  double dirty_miss_rate = 0;             ///< misses that wrote a dirty victim back, of all line accesses
  double modeled_seconds = 0;             ///< a model, not a measurement
  std::uint64_t kernels = 0;              ///< kernel_begin events replayed
  std::uint64_t peak_bytes = 0;           ///< of the NVRAM address space
  std::uint64_t collections = 0;          ///< garbage collections that freed deferred retires (2LM:∅)
  std::uint64_t iterations = 0;           ///< iteration events in the trace
  std::uint64_t counters_iterations = 1;  ///< iterations `counters` count
};

/// Replays the application events of `trace` on a 2LM machine: objects get
/// addresses in one NVRAM-sized address space from the project's allocator
/// (first-touch policy on a virtual device); each kernel argument's whole
/// range is streamed through a TwoLevelMemory of dram_bytes (the inputs
/// first, then the outputs). Retired objects are freed at once with
/// memory_optimisations (2LM:M), else (2LM:∅) at the next collect or, like a
/// garbage collector under pressure, when an allocation finds NVRAM full.
/// Modeled time: each argument's memory time is every line at DRAM bandwidth
/// (read or write by role), plus the NVRAM read of each missing line, plus
/// the NVRAM write of each dirty victim; `kernel_time` (kept for the call;
/// null: plan::MemoryBound, the sum of those times) turns a kernel's
/// arguments at the bandwidths so achieved into seconds — plan::Roofline adds
/// the compute bound. Hints are ignored: the hardware does not see them.
[[nodiscard]] TwoLmResult simulate_2lm(const Trace& trace, std::uint64_t dram_bytes, std::uint64_t nvram_bytes,
                                       bool memory_optimisations, const DeviceModel& dram, const DeviceModel& nvram,
                                       const plan::KernelTimeModel* kernel_time = nullptr);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/simulate_2lm-inl.hpp"
#endif
