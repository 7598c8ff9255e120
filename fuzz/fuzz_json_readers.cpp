// libFuzzer target: the JSON readers a user hands files to — a
// program (plan::Program::from_json), kernel profiles (plan::KernelProfiles::
// from_json), a memory snapshot (parse_memory_snapshot) and memory prices
// (MemoryPrices::from_json). The first byte picks the reader, the rest is
// the document. Bad input must end in invalid_argument, never in a crash,
// a hang or another exception; what a reader accepts must survive its own
// writer: a program's JSON and its trace give the same program back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cachedarrays/cachedarrays.hpp"

namespace ca = cachedarrays;

namespace {

void program(std::string_view text) {
  ca::plan::Program p;
  try {
    p = ca::plan::Program::from_json(std::string(text));
  } catch (const ca::invalid_argument&) {
    return;
  }
  if (!(ca::plan::Program::from_json(p.to_json()) == p)) __builtin_trap();
  // A program read from JSON is in from_trace's naming (from_json refuses
  // any other, naming_problem): through a trace it comes back unchanged.
  if (!(ca::plan::Program::from_trace(p.to_trace()) == p)) __builtin_trap();
}

void kernel_profiles(std::string_view text) {
  try {
    const ca::plan::KernelProfiles profiles = ca::plan::KernelProfiles::from_json(text);
    (void)ca::plan::KernelProfiles::from_json(profiles.to_json());
  } catch (const ca::invalid_argument&) {
  }
}

void memory_snapshot(std::string_view text) {
  try {
    (void)ca::parse_memory_snapshot(text);
  } catch (const ca::invalid_argument&) {
  }
}

void memory_prices(std::string_view text) {
  try {
    const ca::MemoryPrices prices = ca::MemoryPrices::from_json(text);
    for (const auto& [tier, price] : prices.rows()) {
      if (!(price > 0)) __builtin_trap();
    }
  } catch (const ca::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: program(text); break;
    case 1: kernel_profiles(text); break;
    case 2: memory_snapshot(text); break;
    default: memory_prices(text); break;
  }
  return 0;
}
