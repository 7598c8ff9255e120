// Implementation of types.hpp (header-only mode includes it from there; the
// compiled library from src/types.cpp).
#pragma once

#include <fmt/format.h>

#include "cachedarrays/config.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f} {}", value, units[unit]);
}

}  // namespace cachedarrays
