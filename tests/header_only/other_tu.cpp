// The second translation unit: it compiles the same -inl files as main.cpp.
#include "headers.hpp"

#include <array>
#include <cstddef>

namespace ca = cachedarrays;

std::string default_dax_memory_of_other_tu() { return kept_dax_memory_described_and_removed(); }

std::string copy_and_report_in_other_tu() {
  std::array<std::byte, 4096> src{};
  std::array<std::byte, 4096> dst{};
  src.back() = std::byte{42};
  ca::detail::copy_bytes(dst.data(), src.data(), src.size(), ca::detail::CopyDestination::slow);
  ca::Stats stats;
  stats.devices.push_back({.name = "dram", .capacity = 1 << 20});
  const ca::out_of_memory oom(dst.size(), {{.device = 0, .name = "dram", .capacity = 1 << 20}});
  return std::string(dst.back() == std::byte{42} ? "copied" : "NOT COPIED") + "; " + ca::format_bytes(3 << 20) + "; " +
         std::string(ca::detail::nontemporal_path()) + "\n" + stats.to_string() + "\n" + oom.what();
}
