// Implementation of stats.hpp (header-only mode includes it from there; the
// compiled library from src/manager/manager.cpp).
#pragma once

#include <fmt/format.h>

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/stats.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE std::uint64_t Stats::total_bytes_copied() const {
  std::uint64_t total = 0;
  for (const auto& row : bytes_copied)
    for (std::uint64_t b : row) total += b;
  return total;
}

CACHEDARRAYS_INLINE std::uint64_t Stats::bytes_copied_into(DeviceId dst) const {
  std::uint64_t total = 0;
  for (std::size_t src = 0; src < max_devices; ++src)
    if (src != dst) total += bytes_copied[src][dst];
  return total;
}

CACHEDARRAYS_INLINE std::uint64_t Stats::bytes_copied_out_of(DeviceId src) const {
  std::uint64_t total = 0;
  for (std::size_t dst = 0; dst < max_devices; ++dst)
    if (dst != src) total += bytes_copied[src][dst];
  return total;
}

CACHEDARRAYS_INLINE Stats Stats::since(const Stats& earlier) const {
  Stats delta = *this;
  for (std::size_t d = 0; d < delta.devices.size() && d < earlier.devices.size(); ++d) {
    for (const DeviceCounters::Field& f : DeviceCounters::event_fields()) {
      delta.devices[d].*f.member -= earlier.devices[d].*f.member;
    }
  }
  for (std::size_t s = 0; s < max_devices; ++s) {
    for (std::size_t d = 0; d < max_devices; ++d) {
      delta.bytes_copied[s][d] -= earlier.bytes_copied[s][d];
      delta.copies[s][d] -= earlier.copies[s][d];
    }
  }
  for (std::size_t d = 0; d < max_devices; ++d) {
    delta.kernel_bytes_read[d] -= earlier.kernel_bytes_read[d];
    delta.kernel_bytes_written[d] -= earlier.kernel_bytes_written[d];
  }
  delta.accesses -= earlier.accesses;
  delta.emulated_copy_wait_ns -= earlier.emulated_copy_wait_ns;
  delta.emulated_kernel_ns -= earlier.emulated_kernel_ns;
  delta.emulated_sync_copy_ns -= earlier.emulated_sync_copy_ns;
  delta.failed_copies -= earlier.failed_copies;
  delta.memory_mode -= earlier.memory_mode;
  delta.policy -= earlier.policy;
  delta.async -= earlier.async;
  delta.lock -= earlier.lock;
  delta.objects_created -= earlier.objects_created;
  delta.objects_destroyed -= earlier.objects_destroyed;
  return delta;
}

CACHEDARRAYS_INLINE std::string Stats::to_string() const {
  std::string out =
      fmt::format("{:<3} {:<10} {:>11} {:>11} {:>11} {:>8} {:>8} {:>9} {:>9} {:>7} {:>11}\n", "dev", "name", "capacity",
                  "in use", "peak", "regions", "allocs", "frees", "evicted", "defrag", "defragged");
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const DeviceCounters& c = devices[d];
    out +=
        fmt::format("{:<3} {:<10} {:>11} {:>11} {:>11} {:>8} {:>8} {:>9} {:>9} {:>7} {:>11}\n", d, c.name,
                    format_bytes(c.capacity), format_bytes(c.bytes_in_use), format_bytes(c.peak_bytes_in_use),
                    c.live_regions, c.allocations, c.frees, c.evictions, c.defrag_moves, format_bytes(c.defrag_bytes));
  }
  out += "bytes copied (from -> to):";
  bool any = false;
  for (std::size_t s = 0; s < devices.size(); ++s) {
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (copies[s][d] == 0) continue;
      any = true;
      out += fmt::format("\n  {} -> {}: {} in {} copies", devices[s].name, devices[d].name,
                         format_bytes(bytes_copied[s][d]), copies[s][d]);
    }
  }
  if (!any) out += " none";
  out += "\nkernel traffic (read / written):";
  for (std::size_t d = 0; d < devices.size(); ++d) {
    out += fmt::format(" {} {} / {};", devices[d].name, format_bytes(kernel_bytes_read[d]),
                       format_bytes(kernel_bytes_written[d]));
  }
  if (emulated_copy_wait_ns + emulated_kernel_ns > 0) {
    out += fmt::format(
        "\nemulation: copies held back {:.3f} s, kernels charged {:.3f} s, copies on compute threads "
        "{:.3f} s (emulated slow tier)",
        static_cast<double>(emulated_copy_wait_ns) / 1e9, static_cast<double>(emulated_kernel_ns) / 1e9,
        static_cast<double>(emulated_sync_copy_ns) / 1e9);
  }
  if (memory_mode.lines() > 0) {
    const auto percent = [&](std::uint64_t n) { return 100.0 * memory_mode.share(n); };
    out += fmt::format(
        "\n2LM memory mode (emulated DRAM cache): {} lines, hits {:.1f}%, clean misses {:.1f}%, "
        "dirty misses {:.1f}%",
        memory_mode.lines(), percent(memory_mode.hits), percent(memory_mode.clean_misses),
        percent(memory_mode.dirty_misses));
  }
  if (async.copies + async.failures > 0) {
    out += fmt::format(
        "\nasynchronous copies: {} ({}), {} failed; mover busy {:.3f} s (of which emulation "
        "{:.3f} s), compute waited {:.3f} s at {} fences: {:.1f}% overlapped",
        async.copies, format_bytes(async.bytes), async.failures, static_cast<double>(async.busy_ns) / 1e9,
        static_cast<double>(async.emulated_wait_ns) / 1e9, static_cast<double>(async.fence_wait_ns) / 1e9,
        async.fence_waits, 100.0 * async.overlap_fraction());
    if (async.taken_over + async.cancelled > 0) {
      out += fmt::format(
          "; {} taken over by a compute thread that needed them first, {} background copies "
          "dropped",
          async.taken_over, async.cancelled);
    }
  }
  if (failed_copies + async.made_without_mover + policy.moves_abandoned > 0) {
    out += fmt::format(
        "\nfailures: {} copies failed ({} asynchronous), {} moves abandoned (their objects stayed "
        "where they were); {} copies made without a mover thread",
        failed_copies + async.failures, async.failures, policy.moves_abandoned, async.made_without_mover);
  }
  if (lock.acquisitions > 0) {
    out += fmt::format("\nruntime lock: taken {} times, held {:.0f} ns on average ({} of them timed)",
                       lock.acquisitions, lock.mean_held_ns(), lock.timed);
  }
  out += fmt::format("\nobjects: {} created, {} destroyed", objects_created, objects_destroyed);
  const PolicyCounters& p = policy;
  out += fmt::format(
      "\npolicy: {} prefetches ({}), {} evictions: {} written back ({}), {} write-backs elided; "
      "{} retires deferred, {} collected, {} defrags",
      p.prefetches, format_bytes(p.prefetch_bytes), p.evictions, p.writebacks, format_bytes(p.writeback_bytes),
      p.writebacks_elided, p.deferred_retires, p.collected, p.defrags);
  if (p.policy_switches > 0) out += fmt::format("; {} policy switches", p.policy_switches);
  return out;
}

}  // namespace cachedarrays
