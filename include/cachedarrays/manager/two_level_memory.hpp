// A model of Intel's 2LM "memory mode" (paper V, the hardware-managed
// baseline): DRAM is a direct-mapped cache of 64-byte lines in front of the
// slow tier's physical address space. Nothing is stored; the model counts,
// exactly per line, hits, clean misses and dirty misses and the bytes each
// tier reads and writes.
//
// Exact per line, yet fast for the paper's sizes (a 180 GB cache is ~3e9
// lines): the cache state is an interval map over set indices. A contiguous
// address range touches contiguous sets with one tag per pass over the
// cache, so an access costs O(intervals it overlaps * log n), not O(lines).
#pragma once

#include "cachedarrays/config.hpp"

#include <array>
#include <cstdint>
#include <map>

namespace cachedarrays {

/// The line traffic of a 2LM cache model (TwoLevelMemory::counters): hits,
/// misses and the bytes each tier read and wrote. Plain counters: add,
/// subtract and compare them.
struct TwoLmCounters {
  std::uint64_t hits = 0;                 ///< Lines found in the cache.
  std::uint64_t clean_misses = 0;         ///< Lines missing; the victim was clean or empty.
  std::uint64_t dirty_misses = 0;         ///< Lines missing; the victim had to be written back.
  std::uint64_t dram_bytes_read = 0;      ///< Demand reads + victims read out for write-back.
  std::uint64_t dram_bytes_written = 0;   ///< Demand writes + line fills.
  std::uint64_t nvram_bytes_read = 0;     ///< Line fills.
  std::uint64_t nvram_bytes_written = 0;  ///< Dirty victims written back.

  /// Line accesses: hits plus misses.
  [[nodiscard]] std::uint64_t lines() const noexcept { return hits + clean_misses + dirty_misses; }
  /// Line accesses that missed, clean or dirty.
  [[nodiscard]] std::uint64_t misses() const noexcept { return clean_misses + dirty_misses; }
  /// `n` (hits, clean or dirty misses) as a fraction of all line accesses; 0 with none.
  [[nodiscard]] double share(std::uint64_t n) const noexcept {
    return lines() == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(lines());
  }

  /// A counter's name and member, for code that walks the counters.
  struct Field {
    const char* name;                      ///< The counter's name, as its member is spelled.
    std::uint64_t TwoLmCounters::*member;  ///< The counter.
  };
  /// Every counter, listed once: the arithmetic below, and whoever compares
  /// or prints counters, walk this list.
  [[nodiscard]] static constexpr std::array<Field, 7> fields() noexcept {
    return {{{"hits", &TwoLmCounters::hits},
             {"clean_misses", &TwoLmCounters::clean_misses},
             {"dirty_misses", &TwoLmCounters::dirty_misses},
             {"dram_bytes_read", &TwoLmCounters::dram_bytes_read},
             {"dram_bytes_written", &TwoLmCounters::dram_bytes_written},
             {"nvram_bytes_read", &TwoLmCounters::nvram_bytes_read},
             {"nvram_bytes_written", &TwoLmCounters::nvram_bytes_written}}};
  }

  /// Adds every counter of `o`.
  TwoLmCounters& operator+=(const TwoLmCounters& o) noexcept {
    for (const Field& f : fields()) this->*f.member += o.*f.member;
    return *this;
  }
  /// Subtracts every counter of `o`: the traffic since `o` was taken.
  TwoLmCounters& operator-=(const TwoLmCounters& o) noexcept {
    for (const Field& f : fields()) this->*f.member -= o.*f.member;
    return *this;
  }
  /// The counters of `a` less those of `b`, counter by counter.
  friend TwoLmCounters operator-(TwoLmCounters a, const TwoLmCounters& b) noexcept { return a -= b; }
  /// True when every counter is equal.
  friend bool operator==(const TwoLmCounters&, const TwoLmCounters&) = default;
};
// A counter added to the struct but not to fields() would be left out of the
// arithmetic: refuse to compile.
static_assert(sizeof(TwoLmCounters) == TwoLmCounters::fields().size() * sizeof(std::uint64_t),
              "list every counter of TwoLmCounters in TwoLmCounters::fields()");

/// The model of Intel's 2LM memory mode (see the file comment): a
/// direct-mapped DRAM cache of whole lines in front of the slow tier's
/// addresses, counting exactly, per line, the traffic of each access. Stores
/// no data.
class TwoLevelMemory {
 public:
  /// A cache of cache_bytes / line_bytes sets (direct mapped: one line each).
  /// Throws invalid_argument unless line_bytes > 0 and cache_bytes is a
  /// positive multiple of it.
  explicit TwoLevelMemory(std::uint64_t cache_bytes, std::uint64_t line_bytes = 64);

  /// Every line overlapping [address, address + bytes) in address order: a
  /// hit reads (or writes) the line in DRAM; a miss first writes a dirty
  /// victim back to NVRAM, then fills the line from NVRAM (write-allocate,
  /// also on a write miss). Writes leave the line dirty. Traffic is counted
  /// in whole lines, the unit the hardware moves.
  void access(std::uint64_t address, std::uint64_t bytes, bool write);

  /// The traffic of every access so far.
  [[nodiscard]] const TwoLmCounters& counters() const noexcept { return counters_; }
  /// The cache's sets (= lines: direct mapped).
  [[nodiscard]] std::uint64_t sets() const noexcept { return sets_; }
  /// The line size in bytes.
  [[nodiscard]] std::uint64_t line_bytes() const noexcept { return line_; }
  /// Cache intervals currently held (for tests and curiosity).
  [[nodiscard]] std::size_t intervals() const noexcept { return map_.size(); }

 private:
  struct Interval {
    std::uint64_t end;  // one past the last set
    std::uint64_t tag;
    bool dirty;
  };
  // Sets [first, last] all accessed with `tag`.
  void access_sets(std::uint64_t first, std::uint64_t last, std::uint64_t tag, bool write);
  // Makes `set` the start of an interval if an interval covers it.
  void split(std::uint64_t set);
  void merge_around(std::uint64_t first, std::uint64_t end);
  // Misses of `lines` lines: the victims' write-back (if dirty) and the fills.
  void count_misses(std::uint64_t lines, bool victim_dirty) noexcept;
  // The demand traffic of `lines` lines, hit or miss: DRAM read or written.
  void count_demand(std::uint64_t lines, bool write) noexcept;

  std::uint64_t line_;
  std::uint64_t sets_;
  // Valid lines only, keyed by first set; gaps are empty (invalid) lines.
  std::map<std::uint64_t, Interval> map_;
  TwoLmCounters counters_;
};

/// The one time model of 2LM, in nanoseconds, for the line traffic `delta`:
/// every line accessed at `dram_gbps` (0: not counted, as when the access
/// itself runs on this machine's real DRAM), plus the NVRAM read of each
/// missing line and the NVRAM write of each dirty victim. The emulated memory
/// mode (emulation::memory_mode_extra_ns) and the 2LM simulation both use it.
[[nodiscard]] double two_lm_ns(const TwoLmCounters& delta, std::uint64_t line_bytes, double dram_gbps,
                               double nvram_read_gbps, double nvram_write_gbps) noexcept;

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/two_level_memory-inl.hpp"
#endif
