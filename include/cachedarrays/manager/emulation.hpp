// Emulated slow tiers (docs/design.md "Emulated slow tier"): this machine has no
// Optane, CXL or far NUMA node, so a device may carry an EmulationProfile.
// A copy to or from it takes at least bytes / bandwidth of wall time, and a
// kernel whose arguments live on it is charged (waits) the extra time its
// bytes would take there compared with DRAM. Profiles are expressed relative
// to this machine's measured DRAM bandwidth so that the published ratios
// hold. Everything that involves emulation says so in its output.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::emulation {

/// A read and a write bandwidth in GB/s (= bytes per nanosecond).
struct Bandwidth {
  double read_gbps = 0;   ///< Read bandwidth, GB/s.
  double write_gbps = 0;  ///< Write bandwidth, GB/s.
};
/// This machine's DRAM bandwidth, the reference the profiles scale.
using DramBandwidth = Bandwidth;

/// Published figures, the one place they are written; the profiles below and
/// the modeled benchmarks take them from here.
namespace published {
/// The six-channel DDR4 platform the Optane figures were measured on.
inline constexpr Bandwidth ddr4_six_channel{118.0, 83.0};
/// Intel Optane DC PMM, six interleaved DIMMs.
inline constexpr Bandwidth optane_six_dimms{39.4, 13.9};
/// Intel Optane DC PMM, one DIMM.
inline constexpr Bandwidth optane_one_dimm{6.6, 2.3};
}  // namespace published

/// Streams over a 128 MiB buffer (one thread, best of three) once per
/// process; later calls return the cached figure.
[[nodiscard]] DramBandwidth measure_dram_bandwidth();

/// Intel Optane DC PMM, six interleaved DIMMs: `dram` scaled by the published
/// ratios of published::optane_six_dimms to published::ddr4_six_channel (the
/// platform they were measured on), with the published random-read latency.
[[nodiscard]] EmulationProfile optane(const DramBandwidth& dram);
/// optane() for a single DIMM (published::optane_one_dimm), named "optane-1dimm".
[[nodiscard]] EmulationProfile optane_one_dimm(const DramBandwidth& dram);
/// A CXL memory expander: about half of DRAM's bandwidth, twice its latency.
[[nodiscard]] EmulationProfile cxl(const DramBandwidth& dram);
/// Intel's 2LM memory mode over `slow` (paper V's hardware baseline): the
/// same device fronted by a direct-mapped DRAM cache of `dram_cache_bytes`
/// (a positive multiple of 64; throws invalid_argument otherwise). Give it to
/// a runtime's only device, so every object lives "in NVRAM" and the cache
/// model decides what each access costs. Named e.g. "optane 2LM".
[[nodiscard]] EmulationProfile memory_mode(EmulationProfile slow, std::uint64_t dram_cache_bytes);
/// The largest cache of whole 64-byte lines within `budget` bytes, at least
/// one line: a fast-tier budget as memory_mode() accepts it.
[[nodiscard]] std::uint64_t memory_mode_cache_within(std::uint64_t budget) noexcept;
/// "optane", "optane-1dimm", "cxl" (measuring DRAM on first use), or "none"
/// (no profile). Throws invalid_argument listing the names otherwise.
[[nodiscard]] std::optional<EmulationProfile> profile(std::string_view name);

// ---- the model (unit-tested arithmetic) --------------------------------------
/// Nanoseconds to read `bytes` on the emulated device: its latency plus
/// bytes / read bandwidth.
[[nodiscard]] double read_ns(const EmulationProfile& p, std::uint64_t bytes);
/// Nanoseconds to write `bytes` on the emulated device, as read_ns.
[[nodiscard]] double write_ns(const EmulationProfile& p, std::uint64_t bytes);
/// Least time a copy of `bytes` may take: the slower of reading the source
/// and writing the destination; 0 when neither side is emulated.
[[nodiscard]] double copy_ns(const std::optional<EmulationProfile>& src, const std::optional<EmulationProfile>& dst,
                             std::uint64_t bytes);
/// Extra time a kernel spends reading (or writing) `bytes` on the emulated
/// device instead of DRAM (never negative).
[[nodiscard]] double kernel_extra_ns(const EmulationProfile& p, std::uint64_t bytes, Access access);

/// Extra time of the cache traffic `delta` on a memory-mode device: the
/// NVRAM read of every missing line plus the NVRAM write of every dirty
/// victim (hits and line fills run at DRAM speed, which the real access on
/// this machine already takes) — the time model of simulate_2lm.
[[nodiscard]] double memory_mode_extra_ns(const EmulationProfile& p, const TwoLmCounters& delta,
                                          std::uint64_t line_bytes = 64);

/// Waits `ns` of wall time (sleeping for the bulk, spinning for the rest).
void wait_ns(double ns);
/// Sleeps about `ns` without spinning, for threads beside the compute threads
/// (the mover) that must not take a core to wait; returns the time slept,
/// which the OS makes tens of microseconds longer than asked.
double sleep_ns(double ns);

/// The profile for messages: its name, its bandwidths and latency (or its
/// memory-mode cache) and this machine's DRAM bandwidth, e.g.
/// "optane (emulated: read R GB/s, write W GB/s, L ns; this machine's DRAM ...)".
[[nodiscard]] std::string describe(const EmulationProfile& p);

}  // namespace cachedarrays::emulation

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/emulation-inl.hpp"
#endif
