// Implementation of emulation.hpp (header-only mode includes it from there; the
// compiled library from src/manager/manager.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/emulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cachedarrays/error.hpp"

namespace cachedarrays::emulation {

namespace detail {

CACHEDARRAYS_INLINE double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

CACHEDARRAYS_INLINE DramBandwidth measure() {
  constexpr std::size_t bytes = std::size_t{128} << 20;
  std::vector<std::uint64_t> buffer(bytes / sizeof(std::uint64_t), 1);
  DramBandwidth best;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t sum = 0;
    for (std::uint64_t v : buffer) sum += v;
    const double read_s = seconds_since(t0);
    // Keep the sum alive so the read loop is not optimised away.
    buffer[static_cast<std::size_t>(sum % buffer.size())] = 1;
    t0 = std::chrono::steady_clock::now();
    std::memset(buffer.data(), rep + 1, bytes);
    const double write_s = seconds_since(t0);
    best.read_gbps = std::max(best.read_gbps, static_cast<double>(bytes) / read_s / 1e9);
    best.write_gbps = std::max(best.write_gbps, static_cast<double>(bytes) / write_s / 1e9);
  }
  return best;
}

CACHEDARRAYS_INLINE EmulationProfile scaled(std::string name, const DramBandwidth& dram, double read_ratio,
                                            double write_ratio, double latency_ns) {
  EmulationProfile p;
  p.name = std::move(name);
  p.read_gbps = dram.read_gbps * read_ratio;
  p.write_gbps = dram.write_gbps * write_ratio;
  p.latency_ns = latency_ns;
  p.dram_read_gbps = dram.read_gbps;
  p.dram_write_gbps = dram.write_gbps;
  return p;
}

}  // namespace detail

CACHEDARRAYS_INLINE DramBandwidth measure_dram_bandwidth() {
  static std::once_flag once;
  static DramBandwidth cached;
  std::call_once(once, [] { cached = detail::measure(); });
  return cached;
}

CACHEDARRAYS_INLINE EmulationProfile optane(const DramBandwidth& dram) {
  return detail::scaled("optane", dram, published::optane_six_dimms.read_gbps / published::ddr4_six_channel.read_gbps,
                        published::optane_six_dimms.write_gbps / published::ddr4_six_channel.write_gbps, 305.0);
}

CACHEDARRAYS_INLINE EmulationProfile optane_one_dimm(const DramBandwidth& dram) {
  // The profiles keep the published ratios against the platform measured.
  return detail::scaled("optane-1dimm", dram,
                        published::optane_one_dimm.read_gbps / published::ddr4_six_channel.read_gbps,
                        published::optane_one_dimm.write_gbps / published::ddr4_six_channel.write_gbps, 305.0);
}

CACHEDARRAYS_INLINE EmulationProfile cxl(const DramBandwidth& dram) {
  // DRAM's own latency is taken as 90 ns; CXL adds about as much again.
  return detail::scaled("cxl", dram, 0.5, 0.5, 180.0);
}

CACHEDARRAYS_INLINE EmulationProfile memory_mode(EmulationProfile slow, std::uint64_t dram_cache_bytes) {
  if (dram_cache_bytes == 0 || dram_cache_bytes % 64 != 0) {
    throw invalid_argument(
        "cachedarrays: a 2LM memory-mode DRAM cache must be a positive multiple of 64 bytes "
        "(whole cache lines); got " +
        std::to_string(dram_cache_bytes) + " bytes");
  }
  slow.name += " 2LM";
  slow.memory_mode_cache_bytes = dram_cache_bytes;
  return slow;
}

CACHEDARRAYS_INLINE std::uint64_t memory_mode_cache_within(std::uint64_t budget) noexcept {
  return std::max<std::uint64_t>(64, budget / 64 * 64);
}

CACHEDARRAYS_INLINE std::optional<EmulationProfile> profile(std::string_view name) {
  if (name == "none") return std::nullopt;
  if (name == "optane") return optane(measure_dram_bandwidth());
  if (name == "optane-1dimm") return optane_one_dimm(measure_dram_bandwidth());
  if (name == "cxl") return cxl(measure_dram_bandwidth());
  throw invalid_argument("cachedarrays: unknown emulation profile '" + std::string(name) +
                         "'; valid profiles: optane, optane-1dimm, cxl, none");
}

CACHEDARRAYS_INLINE double read_ns(const EmulationProfile& p, std::uint64_t bytes) {
  return p.latency_ns + static_cast<double>(bytes) / p.read_gbps;  // GB/s == bytes/ns
}

CACHEDARRAYS_INLINE double write_ns(const EmulationProfile& p, std::uint64_t bytes) {
  return p.latency_ns + static_cast<double>(bytes) / p.write_gbps;
}

CACHEDARRAYS_INLINE double copy_ns(const std::optional<EmulationProfile>& src,
                                   const std::optional<EmulationProfile>& dst, std::uint64_t bytes) {
  double ns = 0;
  if (src) ns = std::max(ns, read_ns(*src, bytes));
  if (dst) ns = std::max(ns, write_ns(*dst, bytes));
  return ns;
}

CACHEDARRAYS_INLINE double kernel_extra_ns(const EmulationProfile& p, std::uint64_t bytes, Access access) {
  const auto b = static_cast<double>(bytes);
  const double extra =
      access == Access::read ? b / p.read_gbps - b / p.dram_read_gbps : b / p.write_gbps - b / p.dram_write_gbps;
  return std::max(0.0, extra);
}

CACHEDARRAYS_INLINE double memory_mode_extra_ns(const EmulationProfile& p, const TwoLmCounters& delta,
                                                std::uint64_t line_bytes) {
  // Hits and line fills run at DRAM speed, which the real access on this
  // machine already takes: no DRAM term.
  return two_lm_ns(delta, line_bytes, 0.0, p.read_gbps, p.write_gbps);
}

CACHEDARRAYS_INLINE void wait_ns(double ns) {
  if (ns <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
  // Sleep through the bulk (the OS wakes us late by tens of microseconds),
  // spin through the rest so short waits stay accurate.
  if (ns > 200'000) std::this_thread::sleep_until(until - std::chrono::microseconds(100));
  while (std::chrono::steady_clock::now() < until) {
  }
}

CACHEDARRAYS_INLINE double sleep_ns(double ns) {
  if (ns <= 0) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(ns)));
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

CACHEDARRAYS_INLINE std::string describe(const EmulationProfile& p) {
  if (p.memory_mode_cache_bytes > 0) {
    return fmt::format(
        "{} (emulated memory mode: a {} direct-mapped DRAM cache over a device of read {:.1f} GB/s, "
        "write {:.1f} GB/s; this machine's DRAM {:.1f} / {:.1f} GB/s)",
        p.name, format_bytes(p.memory_mode_cache_bytes), p.read_gbps, p.write_gbps, p.dram_read_gbps,
        p.dram_write_gbps);
  }
  return fmt::format(
      "{} (emulated: read {:.1f} GB/s, write {:.1f} GB/s, {:.0f} ns; this machine's DRAM {:.1f} / {:.1f} GB/s)", p.name,
      p.read_gbps, p.write_gbps, p.latency_ns, p.dram_read_gbps, p.dram_write_gbps);
}

}  // namespace cachedarrays::emulation
