// Implementation of two_level_memory.hpp (header-only mode includes it from there; the
// compiled library from src/manager/manager.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE TwoLevelMemory::TwoLevelMemory(std::uint64_t cache_bytes, std::uint64_t line_bytes)
    : line_(line_bytes), sets_(line_bytes == 0 ? 0 : cache_bytes / line_bytes) {
  if (line_bytes == 0 || cache_bytes == 0 || cache_bytes % line_bytes != 0) {
    throw invalid_argument(
        "cachedarrays: a 2LM cache needs a line size > 0 and a capacity that is a positive "
        "multiple of it; got " +
        std::to_string(cache_bytes) + " bytes in lines of " + std::to_string(line_bytes));
  }
}

CACHEDARRAYS_INLINE void TwoLevelMemory::access(std::uint64_t address, std::uint64_t bytes, bool write) {
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

CACHEDARRAYS_INLINE void TwoLevelMemory::count_misses(std::uint64_t lines, bool victim_dirty) noexcept {
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

CACHEDARRAYS_INLINE void TwoLevelMemory::count_demand(std::uint64_t lines, bool write) noexcept {
  if (write)
    counters_.dram_bytes_written += lines * line_;
  else
    counters_.dram_bytes_read += lines * line_;
}

CACHEDARRAYS_INLINE void TwoLevelMemory::split(std::uint64_t set) {
  if (set >= sets_) return;
  auto it = map_.upper_bound(set);
  if (it == map_.begin()) return;
  --it;
  if (it->first < set && it->second.end > set) {
    map_.emplace(set, Interval{it->second.end, it->second.tag, it->second.dirty});
    it->second.end = set;
  }
}

CACHEDARRAYS_INLINE void TwoLevelMemory::access_sets(std::uint64_t first, std::uint64_t last, std::uint64_t tag,
                                                     bool write) {
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

CACHEDARRAYS_INLINE void TwoLevelMemory::merge_around(std::uint64_t first, std::uint64_t end) {
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

CACHEDARRAYS_INLINE double two_lm_ns(const TwoLmCounters& delta, std::uint64_t line_bytes, double dram_gbps,
                                     double nvram_read_gbps, double nvram_write_gbps) noexcept {
  const auto line = static_cast<double>(line_bytes);
  const double dram_ns = dram_gbps > 0 ? static_cast<double>(delta.lines()) * line / dram_gbps : 0.0;
  return dram_ns + static_cast<double>(delta.misses()) * line / nvram_read_gbps +
         static_cast<double>(delta.dirty_misses) * line / nvram_write_gbps;
}

}  // namespace cachedarrays
