// What memory costs per tier, for the capacity planner (sim/capacity_plan.hpp):
// dollars per GB (10^9 bytes) by tier name. The defaults are AutoTM's Table 2
// (AutoTM §6.3: Lenovo's quotes, the cheapest of each kind):
// server DRAM $16.61/GB, Optane DC PMM $7.85/GB. Nothing published prices
// CXL memory against them; an expander carries ordinary DDR DIMMs, so the
// "cxl" row defaults to DRAM's price (the controller's own cost not
// counted) — an assumption, to be overridden with what a vendor quotes.
// Like AutoTM's Fig. 9, a machine's memory cost counts the memory its run
// uses: the fast tier as configured, the slow tier's peak.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace cachedarrays {

/// What memory costs per tier, in dollars per GB (10^9 bytes) by tier name,
/// for the capacity planner (sim/capacity_plan.hpp).
class MemoryPrices {
 public:
  /// AutoTM's Table 2 and the cxl row: "dram", "optane" (and
  /// "optane-1dimm", the same DIMM), "cxl" (cxl at DRAM's price, an
  /// assumption to override with a vendor's quote).
  [[nodiscard]] static MemoryPrices defaults();
  /// A JSON object of tier name to dollars per GB, e.g.
  /// `{"dram": 16.61, "cxl": 9.5}`: the defaults with these rows replaced or added. Throws
  /// invalid_argument naming the entry that is not a positive number, or the
  /// text that is not such an object.
  [[nodiscard]] static MemoryPrices from_json(std::string_view text);
  /// from_json of the file; throws heap_error when it cannot be read.
  [[nodiscard]] static MemoryPrices load(const std::string& path);

  /// Dollars per GB of `tier`; throws invalid_argument naming the tiers it
  /// knows otherwise.
  [[nodiscard]] double dollars_per_gb(std::string_view tier) const;
  /// Sets (or adds) `tier`'s price; throws invalid_argument for an empty name
  /// or a price that is not a finite number > 0.
  void set(std::string tier, double dollars_per_gb);
  /// Every tier's dollars per GB, by name.
  [[nodiscard]] const std::map<std::string, double, std::less<>>& rows() const noexcept { return rows_; }

  /// Dollars of `bytes` of `tier`; throws as dollars_per_gb does.
  [[nodiscard]] double cost(std::string_view tier, std::uint64_t bytes) const;

 private:
  std::map<std::string, double, std::less<>> rows_;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/memory_prices-inl.hpp"
#endif
