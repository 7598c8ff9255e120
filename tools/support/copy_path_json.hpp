// The copy engine's choice of stores (cachedarrays/manager/copy_path.hpp)
// as JSON, the same object wherever a tool or a benchmark writes it.
// Header-only: tools/support's libraries do not link cachedarrays, the
// programs that include this do.
#pragma once

#include <cachedarrays/manager/copy_path.hpp>

namespace cachedarrays::tools {

// `Json` is nlohmann::json or nlohmann::ordered_json, whichever the caller writes.
template <typename Json>
Json copy_path_json(const CopyPathReport& report) {
  Json bands = Json::array();
  for (const CopyBandReport& b : report.bands) {
    bands.push_back({
        {"band", b.band},
        {"min_bytes", b.min_bytes},
        {"end_bytes", b.end_bytes == 0 ? Json(nullptr) : Json(b.end_bytes)},
        {"sample_bytes", b.sample_bytes},
        {"path", b.path},
        {"split", b.split},
        {"split_path", b.split_path},
        {"memcpy_gbps", b.memcpy_gbps},
        {"nontemporal_gbps", b.nontemporal_gbps},
        {"memcpy_split_gbps", b.memcpy_split_gbps},
        {"nontemporal_split_gbps", b.nontemporal_split_gbps},
        {"why", b.why},
    });
  }
  return {
      {"summary", report.summary()},
      {"mode", report.mode},
      {"nontemporal_isa", report.nontemporal_isa},
      {"always_memcpy_below", report.always_memcpy_below},
      {"calibration_seconds", report.calibration_seconds},
      {"calibration_bytes", report.calibration_bytes},
      {"calibration_note", report.calibration_note},
      {"bands", bands},
  };
}

}  // namespace cachedarrays::tools
