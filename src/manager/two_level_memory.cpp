#include "cachedarrays/manager/two_level_memory.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cachedarrays/manager/replay.hpp"
#include "cachedarrays/runtime.hpp"

namespace cachedarrays {

TwoLmCounters& TwoLmCounters::operator+=(const TwoLmCounters& o) noexcept {
  hits += o.hits;
  clean_misses += o.clean_misses;
  dirty_misses += o.dirty_misses;
  dram_bytes_read += o.dram_bytes_read;
  dram_bytes_written += o.dram_bytes_written;
  nvram_bytes_read += o.nvram_bytes_read;
  nvram_bytes_written += o.nvram_bytes_written;
  return *this;
}

TwoLmCounters& TwoLmCounters::operator-=(const TwoLmCounters& o) noexcept {
  hits -= o.hits;
  clean_misses -= o.clean_misses;
  dirty_misses -= o.dirty_misses;
  dram_bytes_read -= o.dram_bytes_read;
  dram_bytes_written -= o.dram_bytes_written;
  nvram_bytes_read -= o.nvram_bytes_read;
  nvram_bytes_written -= o.nvram_bytes_written;
  return *this;
}

TwoLevelMemory::TwoLevelMemory(std::uint64_t cache_bytes, std::uint64_t line_bytes)
    : line_(line_bytes), sets_(line_bytes == 0 ? 0 : cache_bytes / line_bytes) {
  if (line_bytes == 0 || cache_bytes == 0 || cache_bytes % line_bytes != 0) {
    throw invalid_argument("cachedarrays: a 2LM cache needs a line size > 0 and a capacity that is a positive "
                           "multiple of it; got " + std::to_string(cache_bytes) + " bytes in lines of " +
                           std::to_string(line_bytes));
  }
}

void TwoLevelMemory::access(std::uint64_t address, std::uint64_t bytes, bool write) {
  if (bytes == 0) return;
  if (address + (bytes - 1) < address) {
    throw invalid_argument("cachedarrays: 2LM access of " + std::to_string(bytes) + " bytes at " +
                           std::to_string(address) + " overflows the address space");
  }
  const std::uint64_t last_line = (address + (bytes - 1)) / line_;
  std::uint64_t line = address / line_;
  // Lines in address order; each pass over the cache is one run of sets
  // with one tag. Per set, address order is tag order, so this is exact.
  int whole_passes_done = 0;
  while (true) {
    const std::uint64_t tag = line / sets_;
    const std::uint64_t set = line % sets_;
    const std::uint64_t run = std::min(last_line - line, sets_ - 1 - set);  // lines after the first
    access_sets(set, set + run, tag, write);
    if (line + run == last_line) break;
    line += run + 1;
    if (set == 0 && run == sets_ - 1 && ++whole_passes_done == 2) {
      // The second whole pass missed on every set (its tag is new), so it
      // left each set holding its tag, dirty exactly if this access writes.
      // Each further whole pass therefore misses on every set and evicts a
      // victim that is dirty exactly if it writes: count them in one step.
      // (After only one pass, sets that hit keep their old dirty bit.)
      // Without this a range streamed through a small cache (a 4 KiB budget
      // against a 500 GB model) costs one interval update per pass,
      // hundreds of millions of them.
      const std::uint64_t whole_passes = (last_line - line + 1) / sets_;
      if (whole_passes > 0) {
        const std::uint64_t lines = whole_passes * sets_;
        count_misses(lines, write);
        count_demand(lines, write);
        line += lines;
        map_.clear();
        map_.emplace(0, Interval{sets_, (line - 1) / sets_, write});
        if (line > last_line) break;
      }
    }
  }
}

void TwoLevelMemory::count_misses(std::uint64_t lines, bool victim_dirty) noexcept {
  if (victim_dirty) {
    counters_.dirty_misses += lines;
    counters_.dram_bytes_read += lines * line_;  // the victim leaves DRAM
    counters_.nvram_bytes_written += lines * line_;
  } else {
    counters_.clean_misses += lines;
  }
  counters_.nvram_bytes_read += lines * line_;  // the fill
  counters_.dram_bytes_written += lines * line_;
}

void TwoLevelMemory::count_demand(std::uint64_t lines, bool write) noexcept {
  if (write) counters_.dram_bytes_written += lines * line_; else counters_.dram_bytes_read += lines * line_;
}

void TwoLevelMemory::split(std::uint64_t set) {
  if (set >= sets_) return;
  auto it = map_.upper_bound(set);
  if (it == map_.begin()) return;
  --it;
  if (it->first < set && it->second.end > set) {
    map_.emplace(set, Interval{it->second.end, it->second.tag, it->second.dirty});
    it->second.end = set;
  }
}

void TwoLevelMemory::access_sets(std::uint64_t first, std::uint64_t last, std::uint64_t tag, bool write) {
  split(first);
  split(last + 1);
  std::vector<std::pair<std::uint64_t, Interval>> pieces;
  const auto add = [&](std::uint64_t start, std::uint64_t end, bool dirty) {
    if (!pieces.empty() && pieces.back().second.dirty == dirty) {
      pieces.back().second.end = end;
    } else {
      pieces.push_back({start, Interval{end, tag, dirty}});
    }
  };
  auto it = map_.lower_bound(first);
  std::uint64_t cursor = first;
  while (cursor <= last) {
    if (it != map_.end() && it->first == cursor) {
      const Interval& old = it->second;  // within [first, last] after the splits
      const std::uint64_t lines = old.end - cursor;
      if (old.tag == tag) {
        counters_.hits += lines;
        add(cursor, old.end, old.dirty || write);
      } else {
        count_misses(lines, old.dirty);
        add(cursor, old.end, write);
      }
      cursor = old.end;
      ++it;
    } else {
      const std::uint64_t end = (it != map_.end() && it->first <= last) ? it->first : last + 1;
      count_misses(end - cursor, false);  // empty lines
      add(cursor, end, write);
      cursor = end;
    }
  }
  count_demand(last - first + 1, write);
  map_.erase(map_.lower_bound(first), map_.lower_bound(last + 1));
  for (const auto& [start, interval] : pieces) map_.emplace_hint(map_.end(), start, interval);
  merge_around(first, last + 1);
}

void TwoLevelMemory::merge_around(std::uint64_t first, std::uint64_t end) {
  const auto same = [](const Interval& a, const Interval& b) { return a.tag == b.tag && a.dirty == b.dirty; };
  // The last piece with its right neighbour.
  auto next = map_.find(end);
  if (next != map_.end()) {
    auto prev = std::prev(next);
    if (prev->second.end == end && same(prev->second, next->second)) {
      prev->second.end = next->second.end;
      map_.erase(next);
    }
  }
  // The first piece with its left neighbour.
  auto it = map_.find(first);
  if (it != map_.end() && it != map_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end == first && same(prev->second, it->second)) {
      prev->second.end = it->second.end;
      map_.erase(it);
    }
  }
}

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
