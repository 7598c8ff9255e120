// Telemetry kept by the data manager (docs/design.md "Telemetry"): what moved
// where, how often the heaps were asked for space, and how full they got.
// A snapshot is a plain value: copy it, subtract two of them, print it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

/// One device's occupancy and the events of its heap, as Stats::devices
/// holds them.
struct DeviceCounters {
  std::string name;                     ///< DeviceSpec::display_name().
  std::uint64_t capacity = 0;           ///< The heap's size in bytes.
  std::uint64_t bytes_in_use = 0;       ///< Block bytes, alignment included.
  std::uint64_t peak_bytes_in_use = 0;  ///< The highest bytes_in_use reached.
  /// Highest end offset any block reached: with holes left by frees this
  /// exceeds peak_bytes_in_use, and it is the capacity the same sequence of
  /// allocations needs to land at the same addresses.
  std::uint64_t peak_extent = 0;
  std::uint64_t live_regions = 0;        ///< Regions allocated and not freed.
  std::uint64_t allocations = 0;         ///< Successful allocate() calls (allocate_at ones included).
  std::uint64_t failed_allocations = 0;  ///< allocate() calls that returned null.
  std::uint64_t frees = 0;               ///< Regions freed.
  std::uint64_t evictions = 0;           ///< Regions cleared by evictfrom.
  std::uint64_t defrag_moves = 0;        ///< Regions slid down by defrag (or moved by make_hole).
  std::uint64_t defrag_bytes = 0;        ///< Bytes those defrag moves copied.

  /// A counter's name and member, for code that walks the counters.
  struct Field {
    const char* name;                       ///< The counter's name, as its member is spelled.
    std::uint64_t DeviceCounters::*member;  ///< The counter.
  };
  /// The counters of events (not occupancy), listed once: Stats::since and
  /// whoever compares two runs walk this list.
  [[nodiscard]] static constexpr std::array<Field, 6> event_fields() noexcept {
    return {{{"allocations", &DeviceCounters::allocations},
             {"failed_allocations", &DeviceCounters::failed_allocations},
             {"frees", &DeviceCounters::frees},
             {"evictions", &DeviceCounters::evictions},
             {"defrag_moves", &DeviceCounters::defrag_moves},
             {"defrag_bytes", &DeviceCounters::defrag_bytes}}};
  }
};

/// What the policy's moves did (paper Listings 1 and 2, counted where they
/// run: policy/moves.cpp), so that modes can be compared by their traffic.
struct PolicyCounters {
  std::uint64_t prefetches = 0;         ///< Objects copied into a faster device.
  std::uint64_t prefetch_bytes = 0;     ///< Bytes those prefetches copied.
  std::uint64_t evictions = 0;          ///< Objects moved out of a device.
  std::uint64_t writebacks = 0;         ///< Evictions that copied data out.
  std::uint64_t writebacks_elided = 0;  ///< Evictions of clean data with a valid copy.
  std::uint64_t writeback_bytes = 0;    ///< Bytes the write-backs copied.
  std::uint64_t deferred_retires = 0;   ///< Retires held until collect().
  std::uint64_t collected = 0;          ///< Objects freed by collect().
  std::uint64_t collections = 0;        ///< Collections that freed deferred retires.
  std::uint64_t defrags = 0;            ///< Defrag passes the policy ran.
  /// Prefetches and evictions given up because their copy failed (copy_error):
  /// the object stayed where it was, its contents intact.
  std::uint64_t moves_abandoned = 0;
  /// Moves into a faster device declined because the object's reuses pass
  /// that device (it is served where it lies).
  std::uint64_t served_in_place = 0;
  /// Times the running policy handed its objects to another (the auto
  /// policy's trials and choices: policy/auto_policy.hpp).
  std::uint64_t policy_switches = 0;
  /// Bytes the policy's moves wrote into each device.
  std::array<std::uint64_t, max_devices> bytes_written{};

  /// A counter's name and member, for code that walks the counters.
  struct Field {
    const char* name;                       ///< The counter's name, as its member is spelled.
    std::uint64_t PolicyCounters::*member;  ///< The counter.
  };
  /// Every scalar counter, listed once: -=, and whoever compares two runs,
  /// walk this list (bytes_written beside it).
  [[nodiscard]] static constexpr std::array<Field, 13> fields() noexcept {
    return {{{"prefetches", &PolicyCounters::prefetches},
             {"prefetch_bytes", &PolicyCounters::prefetch_bytes},
             {"evictions", &PolicyCounters::evictions},
             {"writebacks", &PolicyCounters::writebacks},
             {"writebacks_elided", &PolicyCounters::writebacks_elided},
             {"writeback_bytes", &PolicyCounters::writeback_bytes},
             {"deferred_retires", &PolicyCounters::deferred_retires},
             {"collected", &PolicyCounters::collected},
             {"collections", &PolicyCounters::collections},
             {"defrags", &PolicyCounters::defrags},
             {"moves_abandoned", &PolicyCounters::moves_abandoned},
             {"served_in_place", &PolicyCounters::served_in_place},
             {"policy_switches", &PolicyCounters::policy_switches}}};
  }
  /// Subtracts every counter of `o` (bytes_written included): what happened
  /// since `o` was taken.
  PolicyCounters& operator-=(const PolicyCounters& o) noexcept {
    for (const Field& f : fields()) this->*f.member -= o.*f.member;
    for (std::size_t d = 0; d < max_devices; ++d) bytes_written[d] -= o.bytes_written[d];
    return *this;
  }
};
// A counter added to the struct but not to fields() would be left out of
// since(): refuse to compile.
static_assert(sizeof(PolicyCounters) == (PolicyCounters::fields().size() + max_devices) * sizeof(std::uint64_t),
              "list every counter of PolicyCounters in PolicyCounters::fields()");

/// The asynchronous mover's work (DataManager::copyto_async), and what it
/// cost the compute threads: the time they waited at fences is the part of
/// the copies that did not overlap anything.
struct AsyncCounters {
  std::uint64_t copies = 0;            ///< Asynchronous copies finished.
  std::uint64_t bytes = 0;             ///< Bytes those copies moved.
  std::uint64_t failures = 0;          ///< Copies that failed (see their fences).
  std::uint64_t busy_ns = 0;           ///< Mover time, emulation included.
  std::uint64_t emulated_wait_ns = 0;  ///< Of busy_ns, the time held back for an emulated device.
  std::uint64_t fence_waits = 0;       ///< Times a compute thread had to wait.
  std::uint64_t fence_wait_ns = 0;     ///< Time it waited (making a copy it took over included).
  /// Copies a compute thread needed before the mover had started them: it
  /// took them off the queue and made them itself rather than wait behind
  /// the copies queued before them (counted in copies and fence waits too).
  std::uint64_t taken_over = 0;
  /// Background copies (CopyPriority::background) dropped before they
  /// started because their region was about to be freed, moved or
  /// overwritten: the copy would have been thrown away.
  std::uint64_t cancelled = 0;
  /// Copies made on the calling thread because no mover thread could be
  /// started (the system refused a thread): slower, never lost.
  std::uint64_t made_without_mover = 0;

  /// A counter's name and member, for code that walks the counters.
  struct Field {
    const char* name;                      ///< The counter's name, as its member is spelled.
    std::uint64_t AsyncCounters::*member;  ///< The counter.
  };
  /// Every counter, listed once: -=, and whoever compares two runs, walk
  /// this list.
  [[nodiscard]] static constexpr std::array<Field, 10> fields() noexcept {
    return {{{"copies", &AsyncCounters::copies},
             {"bytes", &AsyncCounters::bytes},
             {"failures", &AsyncCounters::failures},
             {"busy_ns", &AsyncCounters::busy_ns},
             {"emulated_wait_ns", &AsyncCounters::emulated_wait_ns},
             {"fence_waits", &AsyncCounters::fence_waits},
             {"fence_wait_ns", &AsyncCounters::fence_wait_ns},
             {"taken_over", &AsyncCounters::taken_over},
             {"cancelled", &AsyncCounters::cancelled},
             {"made_without_mover", &AsyncCounters::made_without_mover}}};
  }
  /// Subtracts every counter of `o`: what happened since `o` was taken.
  AsyncCounters& operator-=(const AsyncCounters& o) noexcept {
    for (const Field& f : fields()) this->*f.member -= o.*f.member;
    return *this;
  }
  /// Share of the mover's time that ran beside the compute threads instead
  /// of holding them up (1 when nothing was copied asynchronously).
  [[nodiscard]] double overlap_fraction() const noexcept {
    if (busy_ns == 0) return 1.0;
    const double exposed = static_cast<double>(fence_wait_ns < busy_ns ? fence_wait_ns : busy_ns);
    return 1.0 - exposed / static_cast<double>(busy_ns);
  }
};
static_assert(sizeof(AsyncCounters) == AsyncCounters::fields().size() * sizeof(std::uint64_t),
              "list every counter of AsyncCounters in AsyncCounters::fields()");

/// The runtime's lock (Runtime::Lock): how often calls took it and how long
/// they held it. Threads scale only as far as that section is short, so it
/// is always counted; one acquisition in `lock_timing_period` is timed (two
/// clock reads), so that counting costs nothing a call would notice.
struct LockCounters {
  std::uint64_t acquisitions = 0;  ///< Times a call took the lock.
  std::uint64_t timed = 0;         ///< Of those, the ones timed.
  /// How long the timed ones held it, in ns (each including one read of
  /// the clock, tens of ns on a virtual machine).
  std::uint64_t timed_ns = 0;

  /// A counter's name and member, for code that walks the counters.
  struct Field {
    const char* name;                     ///< The counter's name, as its member is spelled.
    std::uint64_t LockCounters::*member;  ///< The counter.
  };
  /// Every counter, listed once.
  [[nodiscard]] static constexpr std::array<Field, 3> fields() noexcept {
    return {{{"acquisitions", &LockCounters::acquisitions},
             {"timed", &LockCounters::timed},
             {"timed_ns", &LockCounters::timed_ns}}};
  }
  /// Subtracts every counter of `o`: what happened since `o` was taken.
  LockCounters& operator-=(const LockCounters& o) noexcept {
    for (const Field& f : fields()) this->*f.member -= o.*f.member;
    return *this;
  }
  /// The mean time a call held the lock, in ns, from the timed ones (0
  /// before any was timed).
  [[nodiscard]] double mean_held_ns() const noexcept {
    return timed == 0 ? 0.0 : static_cast<double>(timed_ns) / static_cast<double>(timed);
  }
};
static_assert(sizeof(LockCounters) == LockCounters::fields().size() * sizeof(std::uint64_t),
              "list every counter of LockCounters in LockCounters::fields()");

/// One acquisition of the runtime's lock in this many is timed (LockCounters).
inline constexpr std::uint64_t lock_timing_period = 64;

/// The data manager's telemetry (DataManager::stats, Runtime::stats): a
/// plain value to copy, subtract (since) and print.
struct Stats {
  std::vector<DeviceCounters> devices;  ///< One per device, in device order.
  /// bytes_copied[src][dst]: bytes moved by copyto and copyto_async from
  /// device src to dst (asynchronous ones counted when they are issued).
  std::array<std::array<std::uint64_t, max_devices>, max_devices> bytes_copied{};
  /// copies[src][dst]: how many copies bytes_copied[src][dst] counts.
  std::array<std::array<std::uint64_t, max_devices>, max_devices> copies{};
  std::uint64_t objects_created = 0;    ///< DataManager::create_object calls.
  std::uint64_t objects_destroyed = 0;  ///< DataManager::destroy calls.
  /// Bytes kernels and scoped accesses read, by the device their data was
  /// on (counted when the access is pinned).
  std::array<std::uint64_t, max_devices> kernel_bytes_read{};
  /// Bytes kernels and scoped accesses wrote, by device, as kernel_bytes_read.
  std::array<std::uint64_t, max_devices> kernel_bytes_written{};
  std::uint64_t accesses = 0;  ///< Pinned accesses counted (one per kernel argument or scoped access).
  /// Wall time added by emulated devices to copies held to the emulated
  /// bandwidth, in ns.
  std::uint64_t emulated_copy_wait_ns = 0;
  /// Wall time, in ns, charged to kernels for arguments on an emulated device.
  std::uint64_t emulated_kernel_ns = 0;
  /// Wall time of the copies to or from an emulated device that a compute
  /// thread made itself (copyto), the held-back part included: with
  /// async.fence_wait_ns, the copy time a run did not overlap ("exposed").
  std::uint64_t emulated_sync_copy_ns = 0;
  /// copyto calls that failed (copy_error); failed asynchronous copies are
  /// async.failures.
  std::uint64_t failed_copies = 0;
  /// Lines of devices emulated in 2LM memory mode (EmulationProfile::
  /// memory_mode_cache_bytes), summed over such devices.
  TwoLmCounters memory_mode;
  PolicyCounters policy;  ///< What the policy's moves did.
  AsyncCounters async;    ///< What the asynchronous mover did.
  /// The runtime's lock (Runtime::stats; zero in DataManager::stats).
  LockCounters lock;

  /// Every byte bytes_copied counts, summed over all (source, destination) pairs.
  [[nodiscard]] std::uint64_t total_bytes_copied() const;
  /// Bytes written into device `dst` by copies from any other device.
  [[nodiscard]] std::uint64_t bytes_copied_into(DeviceId dst) const;
  /// Bytes read out of device `src` by copies into any other device.
  [[nodiscard]] std::uint64_t bytes_copied_out_of(DeviceId src) const;
  /// Counters accumulated since `earlier` (occupancy fields keep this one's).
  [[nodiscard]] Stats since(const Stats& earlier) const;
  /// Human-readable table, as printed by fmt::print("{}", stats).
  [[nodiscard]] std::string to_string() const;
};

}  // namespace cachedarrays

#if __has_include(<fmt/format.h>)
#include <fmt/format.h>
/// Lets fmt print a Stats (`fmt::print("{}", stats)`) as its to_string() table.
template <>
struct fmt::formatter<cachedarrays::Stats> : fmt::formatter<std::string> {
  /// Formats Stats::to_string() as a string with the given format spec.
  template <typename Context>
  auto format(const cachedarrays::Stats& stats, Context& ctx) const {
    return fmt::formatter<std::string>::format(stats.to_string(), ctx);
  }
};
#endif

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/stats-inl.hpp"
#endif
