// A memory tier a program ran on, as the program records it (Program::tiers):
// a model elsewhere (cachedarrays-plan --program) prices the program's copies
// and slow-tier accesses at the tiers it actually ran on, not at a default
// device. Emulated tiers (manager/emulation.hpp) carry their profile's
// figures and say so.
#pragma once

#include "cachedarrays/config.hpp"

#include <string>

namespace cachedarrays::plan {

/// One tier of the runtime a program was recorded on, fastest first.
struct ProgramTier {
  /// What the tier is, for prices and messages: "dram" for DRAM (a DAX file
  /// under /dev/shm is DRAM too), an emulation profile's name ("optane",
  /// "cxl"), or the device's name when neither is known.
  std::string name;
  std::string device;     ///< the runtime device's display name
  double read_gbps = 0;   ///< read bandwidth, GB/s (0: not known)
  double write_gbps = 0;  ///< write bandwidth, GB/s (0: not known)
  double latency_ns = 0;  ///< latency of one access, ns (0: not known)
  bool emulated = false;  ///< the figures are an emulation profile's, not a real device's

  /// Both bandwidths known: a model can price copies at them.
  [[nodiscard]] bool bandwidths_known() const noexcept { return read_gbps > 0 && write_gbps > 0; }

  /// Field-wise equality.
  friend bool operator==(const ProgramTier&, const ProgramTier&) = default;
};

}  // namespace cachedarrays::plan
