// Implementation of types.hpp (header-only mode includes it from there; the
// compiled library from src/types.cpp).
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <utility>

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

CACHEDARRAYS_INLINE std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  // The number: digits with at most one decimal point (no sign, no
  // exponent: "1e9" is a typo more often than a size).
  std::size_t end = 0;
  bool point = false;
  bool digits = false;
  for (; end < text.size(); ++end) {
    const char c = text[end];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) return std::nullopt;
  double number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, number);
  if (ec != std::errc{} || ptr != text.data() + end) return std::nullopt;
  std::string_view unit = text.substr(end);
  while (!unit.empty() && space(unit.front())) unit.remove_prefix(1);
  std::string lower(unit);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::pair<std::string_view, double> units[] = {
      {"", 1.0},   {"b", 1.0},    {"k", 0x1p10},   {"kib", 0x1p10}, {"kb", 1e3},   {"m", 0x1p20},   {"mib", 0x1p20},
      {"mb", 1e6}, {"g", 0x1p30}, {"gib", 0x1p30}, {"gb", 1e9},     {"t", 0x1p40}, {"tib", 0x1p40}, {"tb", 1e12},
  };
  for (const auto& [name, scale] : units) {
    if (lower != name) continue;
    const double bytes = std::floor(number * scale);
    // 2^64 is the first double past the range (doubles near it are
    // multiples of 2048, so nothing between rounds into it).
    if (!(bytes < 0x1p64)) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
  }
  return std::nullopt;
}

}  // namespace cachedarrays
