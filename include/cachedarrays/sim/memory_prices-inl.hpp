// Implementation of memory_prices.hpp (header-only mode includes it from there; the
// compiled library builds it in src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/memory_prices.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/json_reader.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE MemoryPrices MemoryPrices::defaults() {
  MemoryPrices prices;
  prices.set("dram", 16.61);   // AutoTM Table 2: a 16 GB server DIMM, $265.82
  prices.set("optane", 7.85);  // AutoTM Table 2: a 128 GB Optane DC PMM, $1,004.50
  // The same DIMM, one of them rather than six (emulation::optane_one_dimm).
  prices.set("optane-1dimm", 7.85);
  prices.set("cxl", 16.61);  // DDR DIMMs behind an expander: DRAM's price (an assumption)
  return prices;
}

CACHEDARRAYS_INLINE MemoryPrices MemoryPrices::from_json(std::string_view text) {
  const detail::JsonReader reader("memory prices JSON");
  const nlohmann::json j = reader.parse(text);
  MemoryPrices prices = defaults();
  for (const auto& [tier, value] : reader.object(j, "(document)").items()) {
    if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>())) {
      reader.fail(tier, "must be a price in dollars per GB > 0, not " + value.dump());
    }
    prices.set(tier, value.get<double>());
  }
  return prices;
}

CACHEDARRAYS_INLINE MemoryPrices MemoryPrices::load(const std::string& path) {
  return detail::read_json_file(path, "memory prices", [](const std::string& text) { return from_json(text); });
}

CACHEDARRAYS_INLINE double MemoryPrices::dollars_per_gb(std::string_view tier) const {
  const auto it = rows_.find(tier);
  if (it == rows_.end()) {
    std::string known;
    for (const auto& [name, price] : rows_) known += (known.empty() ? "" : ", ") + name;
    throw invalid_argument("cachedarrays: no memory price for tier '" + std::string(tier) + "'; priced: " + known +
                           " (add it to the prices file)");
  }
  return it->second;
}

CACHEDARRAYS_INLINE void MemoryPrices::set(std::string tier, double dollars_per_gb) {
  if (tier.empty() || !(dollars_per_gb > 0) || !std::isfinite(dollars_per_gb)) {
    throw invalid_argument("cachedarrays: a memory price needs a tier name and dollars per GB > 0; got '" + tier +
                           "' at " + std::to_string(dollars_per_gb));
  }
  rows_[std::move(tier)] = dollars_per_gb;
}

CACHEDARRAYS_INLINE double MemoryPrices::cost(std::string_view tier, std::uint64_t bytes) const {
  return dollars_per_gb(tier) * static_cast<double>(bytes) / 1e9;
}

}  // namespace cachedarrays
