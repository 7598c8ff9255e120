#include "cachedarrays/sim/simulate_2lm.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

namespace {

void check_model(const DeviceModel& m, const char* role) {
  if (!(m.read_gbps > 0) || !(m.write_gbps > 0)) {
    throw invalid_argument(std::string("cachedarrays: simulate_2lm: the ") + role + " model '" + m.name +
                           "' needs read and write bandwidths > 0 GB/s");
  }
}

}  // namespace

TwoLmResult simulate_2lm(const Trace& trace, std::uint64_t dram_bytes, std::uint64_t nvram_bytes,
                         bool memory_optimisations, const DeviceModel& dram, const DeviceModel& nvram) {
  check_model(dram, "DRAM");
  check_model(nvram, "NVRAM");
  TwoLevelMemory cache(dram_bytes);
  // The allocator of the project, on one NVRAM-sized address space; the
  // default policy (first-touch) never moves anything.
  Runtime rt({virtual_device(nvram_bytes, "nvram")});
  DataManager& dm = rt.manager();
  std::map<std::uint64_t, Object*> live;
  std::vector<Object*> retired;  // 2LM:∅ frees them at the next collect
  TwoLmResult result;
  const double line = static_cast<double>(cache.line_bytes());
  // 2LM:∅'s garbage collection: frees every deferred retire. Returns
  // whether there was anything to free.
  const auto collect_garbage = [&] {
    if (retired.empty()) return false;
    for (Object* dead : retired) rt.retire(*dead);
    retired.clear();
    ++result.collections;
    return true;
  };

  const std::vector<TraceEvent>& events = trace.events();
  for (std::size_t index = 0; index < events.size(); ++index) {
    const TraceEvent& e = events[index];
    const auto fail = [&](const std::string& what) {
      throw invalid_argument("cachedarrays: simulate_2lm: trace event " + std::to_string(index) + " (" +
                             to_string(e.kind) + "): " + what);
    };
    const auto lookup = [&](std::uint64_t id) -> Object& {
      auto it = live.find(id);
      if (it == live.end()) {
        fail("object #" + std::to_string(id) + " is unknown (never created in this trace, or already retired)");
      }
      return *it->second;
    };
    switch (e.kind) {
      case TraceKind::create: {
        if (live.contains(e.object)) fail("object #" + std::to_string(e.object) + " is created twice");
        Object* object = nullptr;
        try {
          object = &rt.create_object(e.bytes);
        } catch (const out_of_memory&) {
          // 2LM:∅ — memory is full of garbage: the garbage collector runs
          // (as Julia's does under allocation pressure, paper V-a) and the
          // allocation is tried again.
          if (!collect_garbage()) throw;
          object = &rt.create_object(e.bytes);
        }
        live.emplace(e.object, object);
        break;
      }
      case TraceKind::retire: {
        Object& object = lookup(e.object);
        live.erase(e.object);
        if (memory_optimisations) rt.retire(object); else retired.push_back(&object);
        break;
      }
      case TraceKind::collect: (void)collect_garbage(); break;
      case TraceKind::kernel_begin: {
        if (static_cast<std::uint64_t>(e.arg_begin) + e.arg_count > trace.args().size()) {
          fail("its arguments lie outside the trace's argument table");
        }
        ++result.kernels;
        for (const bool write : {false, true}) {
          for (std::uint32_t i = 0; i < e.arg_count; ++i) {
            const TraceArg& a = trace.args()[e.arg_begin + i];
            if (a.write != write) continue;
            const Object& object = lookup(a.object);
            const TwoLmCounters before = cache.counters();
            cache.access(dm.offset(*dm.getprimary(object)), object.bytes(), write);
            const TwoLmCounters& after = cache.counters();
            const double lines = static_cast<double>(after.lines() - before.lines());
            const double misses = static_cast<double>(after.misses() - before.misses());
            const double dirty = static_cast<double>(after.dirty_misses - before.dirty_misses);
            result.modeled_seconds += (lines * line / (write ? dram.write_gbps : dram.read_gbps) +
                                       misses * line / nvram.read_gbps + dirty * line / nvram.write_gbps) *
                                      1e-9;
          }
        }
        break;
      }
      case TraceKind::hint:  // the hardware sees no hints
      case TraceKind::kernel_end:
      case TraceKind::allocate:
      case TraceKind::free:
      case TraceKind::copy:
      case TraceKind::evict:
      case TraceKind::defrag_move: break;
    }
  }
  result.counters = cache.counters();
  result.hit_rate = result.counters.share(result.counters.hits);
  result.clean_miss_rate = result.counters.share(result.counters.clean_misses);
  result.dirty_miss_rate = result.counters.share(result.counters.dirty_misses);
  result.peak_bytes = rt.stats().devices.at(0).peak_bytes_in_use;
  return result;
}

}  // namespace cachedarrays
