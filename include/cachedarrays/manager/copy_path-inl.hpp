// Implementation of copy_path.hpp (header-only mode includes it from there;
// the compiled library from src/manager/manager.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/copy_path.hpp"

#include <fmt/format.h>

#include <string_view>

#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE std::string CopyPathReport::summary() const {
  std::string line = mode + ":";
  for (std::size_t i = 0; i < bands.size(); ++i) {
    const CopyBandReport& b = bands[i];
    line += fmt::format("{}{} {}", i == 0 ? " " : ", ", b.band, b.split ? b.split_path + " split" : b.path);
  }
  return line + " (nt " + nontemporal_isa + ")";
}

namespace detail {

CACHEDARRAYS_INLINE CopyPathReport make_copy_path_report(const CopyDecision& decision) {
  CopyPathReport report;
  report.mode = std::string(copy_mode_name(decision.mode));
  report.nontemporal_isa = std::string(nontemporal_path());
  report.always_memcpy_below = stream_min_bytes;
  const std::uint64_t ends[copy_band_count] = {copy_small_band_end, copy_medium_band_end, 0};
  std::uint64_t begin = stream_min_bytes;
  for (std::size_t b = 0; b < copy_band_count; ++b) {
    const auto band = static_cast<CopyBand>(b);
    const CopyBandChoice& c = decision.choice.band(band);
    CopyBandReport r;
    r.band = std::string(copy_band_name(band));
    r.min_bytes = begin;
    r.end_bytes = ends[b];
    r.sample_bytes = decision.timings.sample_bytes[b];
    r.path = std::string(copy_path_name(c.path));
    // The small band ends where the default tuning starts splitting.
    r.split = band != CopyBand::small && c.split;
    r.split_path = std::string(copy_path_name(c.split_path));
    r.memcpy_gbps = decision.timings.get(band, CopyCandidate::memcpy);
    r.nontemporal_gbps = decision.timings.get(band, CopyCandidate::nontemporal);
    r.memcpy_split_gbps = decision.timings.get(band, CopyCandidate::memcpy_split);
    r.nontemporal_split_gbps = decision.timings.get(band, CopyCandidate::nontemporal_split);
    r.why = c.why;
    report.bands.push_back(std::move(r));
    begin = ends[b];
  }
  report.calibration_seconds = decision.timings.seconds;
  report.calibration_bytes = decision.timings.bytes;
  report.calibration_note = decision.timings.note;
  return report;
}

}  // namespace detail

CACHEDARRAYS_INLINE const CopyPathReport& copy_path_report() {
  static const CopyPathReport report = detail::make_copy_path_report(detail::process_copy_decision());
  return report;
}

}  // namespace cachedarrays
