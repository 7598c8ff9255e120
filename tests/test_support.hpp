// Helpers shared by the test files: small two-tier managers and content
// patterns that detect any lost or changed byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"

namespace test {

namespace ca = cachedarrays;

// A fast DRAM tier and a slow tier on a DAX file under /dev/shm.
inline std::vector<ca::DeviceSpec> two_tiers(std::uint64_t fast = 1 << 20, std::uint64_t slow = 8 << 20) {
  return {ca::dram(fast, "fast"), ca::dax_file({}, slow, "slow")};
}

// The byte at position i of a pattern identified by `seed`.
inline std::byte pattern_byte(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 31;
  return static_cast<std::byte>(x & 0xff);
}

inline void fill(std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < bytes; ++i) data[i] = pattern_byte(seed, i);
}

inline bool holds(const std::byte* data, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < bytes; ++i)
    if (data[i] != pattern_byte(seed, i)) return false;
  return true;
}

// The seed for randomized tests: CACHEDARRAYS_TEST_SEED or a fixed default.
inline std::uint64_t test_seed(std::uint64_t fallback) {
  if (const char* s = std::getenv("CACHEDARRAYS_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return fallback;
}

// An object placed on `device` and filled with pattern `seed`, as a policy
// and a write access would do.
inline ca::Object& make_object(ca::DataManager& dm, ca::DeviceId device, std::uint64_t bytes,
                               std::uint64_t seed) {
  ca::Object& object = dm.create_object(bytes);
  ca::Region* region = dm.allocate(device, bytes);
  if (region == nullptr) {
    dm.destroy(object);
    throw ca::error("test: device " + std::to_string(device) + " is full");
  }
  dm.setprimary(object, *region);
  dm.pin(object, ca::Access::write);
  fill(dm.pointer(*region), bytes, seed);
  ca::DataManager::unpin(object, ca::Access::write);
  return object;
}

inline bool object_holds(const ca::DataManager& dm, const ca::Object& object, std::uint64_t seed) {
  const ca::Region* primary = dm.getprimary(object);
  return primary != nullptr && holds(dm.pointer(*primary), object.bytes(), seed);
}

}  // namespace test
