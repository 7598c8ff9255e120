// Implementation of simulate_2lm.hpp (header-only mode includes it from there; the
// compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/simulate_2lm.hpp"

#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/sim/trace_walker.hpp"

namespace cachedarrays {

namespace detail {

CACHEDARRAYS_INLINE void check_model(const DeviceModel& m, const char* role) {
  if (!(m.read_gbps > 0) || !(m.write_gbps > 0)) {
    throw invalid_argument(std::string("cachedarrays: simulate_2lm: the ") + role + " model '" + m.name +
                           "' needs read and write bandwidths > 0 GB/s");
  }
}

// Streams every kernel argument's whole range through the cache model, the
// inputs first, then the outputs; hints are not seen (the hardware has none).
class TwoLmWalker final : public TraceWalker {
 public:
  TwoLmWalker(const Trace& trace, Runtime& nvram_space, TwoLevelMemory& cache, const DeviceModel& dram,
              const DeviceModel& nvram, const plan::KernelTimeModel& kernel_time, TwoLmResult& result)
      : TraceWalker(trace, nvram_space, "simulate_2lm"),
        cache_(cache),
        dram_(dram),
        nvram_(nvram),
        kernel_time_(kernel_time),
        result_(result) {}

  struct Mark {
    double seconds = 0;
    TwoLmCounters counters;
  };
  // Where the walk was when each iteration began.
  [[nodiscard]] const std::vector<Mark>& marks() const noexcept { return marks_; }

 private:
  void kernel_begin(const TraceEvent& event, std::span<CachedArray<std::byte>* const> arrays,
                    std::span<const TraceArg> args) override {
    ++result_.kernels;
    const DataManager& dm = target().manager();
    // Each argument as the time model sees it: its bytes at the bandwidth
    // its cache traffic achieves (every line at DRAM speed, plus the NVRAM
    // read of each miss and the NVRAM write of each dirty victim).
    std::vector<plan::ArgTraffic> traffic;
    for (const bool write : {false, true}) {
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i].write != write) continue;
        const Object& object = arrays[i]->object();
        const TwoLmCounters before = cache_.counters();
        cache_.access(dm.offset(*dm.getprimary(object)), object.bytes(), write);
        const double dram_gbps = write ? dram_.write_gbps : dram_.read_gbps;
        const double ns =
            two_lm_ns(cache_.counters() - before, cache_.line_bytes(), dram_gbps, nvram_.read_gbps, nvram_.write_gbps);
        const auto bytes = object.bytes();
        traffic.push_back({bytes, write ? Access::write : Access::read,
                           ns > 0 && bytes > 0 ? static_cast<double>(bytes) / ns : dram_gbps});
      }
    }
    result_.modeled_seconds += kernel_time_.seconds(trace().names()[event.name], traffic);
  }

  void iteration_begin() override { marks_.push_back({result_.modeled_seconds, cache_.counters()}); }

  TwoLevelMemory& cache_;
  const DeviceModel& dram_;
  const DeviceModel& nvram_;
  const plan::KernelTimeModel& kernel_time_;
  TwoLmResult& result_;
  std::vector<Mark> marks_;
};

}  // namespace detail

CACHEDARRAYS_INLINE TwoLmResult simulate_2lm(const Trace& trace, std::uint64_t dram_bytes, std::uint64_t nvram_bytes,
                                             bool memory_optimisations, const DeviceModel& dram,
                                             const DeviceModel& nvram, const plan::KernelTimeModel* kernel_time) {
  detail::check_model(dram, "DRAM");
  detail::check_model(nvram, "NVRAM");
  TwoLevelMemory cache(dram_bytes);
  // The allocator of the project gives objects their addresses in one
  // NVRAM-sized address space; first touch never moves them. Retired
  // objects are freed at once with memory optimisations (2LM:M), else
  // (2LM:∅) by the policy's garbage collection: at the next collect, or
  // when an allocation finds NVRAM full.
  using policy::FirstTouch;
  Runtime rt({virtual_device(nvram_bytes, "nvram")},
             std::make_unique<FirstTouch>(memory_optimisations ? FirstTouch::Retire::at_once
                                                               : FirstTouch::Retire::at_collect));
  TwoLmResult result;
  const plan::MemoryBound memory_bound;
  detail::TwoLmWalker walker(trace, rt, cache, dram, nvram, kernel_time != nullptr ? *kernel_time : memory_bound,
                             result);
  walker.run();
  result.counters = cache.counters();
  const auto& marks = walker.marks();
  result.iterations = marks.size();
  const SteadyWindow window = steady_window(marks.size());
  if (window.iterations() > 0) {  // the steady state: its mean iteration
    const auto& from = marks[window.first];
    const auto& to = marks[window.end];
    result.modeled_seconds = (to.seconds - from.seconds) / static_cast<double>(window.iterations());
    result.counters = to.counters - from.counters;
    result.counters_iterations = window.iterations();
  }
  result.hit_rate = result.counters.share(result.counters.hits);
  result.clean_miss_rate = result.counters.share(result.counters.clean_misses);
  result.dirty_miss_rate = result.counters.share(result.counters.dirty_misses);
  const Stats stats = rt.stats();
  result.peak_bytes = stats.devices.at(0).peak_bytes_in_use;
  result.collections = stats.policy.collections;
  return result;
}

}  // namespace cachedarrays
